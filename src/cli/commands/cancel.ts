import type { Command } from 'commander';
import type { CliSession } from '../endpoint.ts';
import { helpExamples, withConnectionOptions } from '../options.ts';
import { describeRecord, ExitCode, endedByCancel, printJson, printLines } from '../output.ts';
import { type CommonFlags, cliWait, runWithSession } from '../run-command.ts';

export function addCancelCommand(program: Command): void {
  withConnectionOptions(
    program
      .command('cancel <id>')
      .description('Cancel an open call and wait until its tool has really stopped.')
      .option(
        '--no-wait',
        'return once the cancel is recorded; `toolgate get <id>` shows how the call ended',
      ),
  )
    .addHelpText(
      'after',
      helpExamples([
        'toolgate cancel toolgate/default/slow_search/~5d1c…',
        'toolgate cancel --no-wait --json toolgate/default/slow_search/~5d1c…',
      ]) +
        "\nExit codes: 0 cancelled (with --no-wait: the cancel is recorded), 4 the call was already closed, or ended on its own before the cancel reached it, 5 no such call, 6 unreachable, or no worker has polled the call's task queue for 15 s (the cancel is recorded and takes effect when one does).\n",
    )
    .action(async (id: string, flags: CancelFlags) =>
      runWithSession(flags, {}, async ({ client }) => {
        const description = await client.temporal.workflow.getHandle(id).describe();
        if (description.status.name !== 'RUNNING') {
          const record = await client.result(id);
          return refuse(flags, `The call is already closed (${record.status}); there is nothing to cancel.`, {
            record,
          });
        }
        return flags.wait ? cancelAndReport(client, id, flags) : cancelWithoutWaiting(client, id, flags);
      }),
    );
}

type CancelFlags = CommonFlags & { wait: boolean };
type Client = CliSession['client'];

/** Says why nothing was cancelled, on stderr or as JSON, and answers exit 4. */
function refuse(
  flags: CancelFlags,
  message: string,
  extra: Record<string, unknown>,
  lines: readonly string[] = [],
): ExitCode {
  if (flags.json) printJson({ ok: false, exitCode: ExitCode.refused, error: message, ...extra });
  else {
    process.stderr.write(`toolgate: ${message}\n`);
    printLines(lines);
  }
  return ExitCode.refused;
}

/** `--no-wait`: the cancel is in the call's history, so the call stops whatever happens to us now. */
async function cancelWithoutWaiting(client: Client, id: string, flags: CancelFlags): Promise<ExitCode> {
  const receipt = await client.cancel(id);
  if (flags.json) printJson({ ok: true, ...receipt });
  else printLines([`Cancel recorded for ${id}; \`toolgate get ${id}\` shows how the call ended.`]);
  return ExitCode.ok;
}

/** Cancels, waits for the call to close, and says whether the cancel is what stopped it. */
async function cancelAndReport(client: Client, id: string, flags: CancelFlags): Promise<ExitCode> {
  const record = await client.cancelAndWait(id, cliWait);
  if (!endedByCancel(record)) {
    // The call closed on its own while the cancel was on its way: nothing was cancelled, and what
    // the tool did stands. Say so, with the record, rather than report a cancel.
    return refuse(
      flags,
      `The call ended ${record.status} before the cancel could stop it; nothing was cancelled. Its record below says what happened.`,
      { record },
      describeRecord(record),
    );
  }
  if (flags.json) printJson(record);
  else printLines(describeRecord(record));
  return ExitCode.ok;
}
