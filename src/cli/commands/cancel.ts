import type { Command } from 'commander';
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
    .action(async (id: string, flags: CommonFlags & { wait: boolean }) =>
      runWithSession(flags, {}, async ({ client }) => {
        const description = await client.temporal.workflow.getHandle(id).describe();
        if (description.status.name !== 'RUNNING') {
          const record = await client.result(id);
          const message = `The call is already closed (${record.status}); there is nothing to cancel.`;
          if (flags.json) printJson({ ok: false, exitCode: ExitCode.refused, error: message, record });
          else process.stderr.write(`toolgate: ${message}\n`);
          return ExitCode.refused;
        }
        if (!flags.wait) {
          // Recorded in the call's history: the call stops at its next step, whatever happens to
          // this process now.
          const receipt = await client.cancel(id);
          if (flags.json) printJson({ ok: true, ...receipt });
          else printLines([`Cancel recorded for ${id}; \`toolgate get ${id}\` shows how the call ended.`]);
          return ExitCode.ok;
        }
        const record = await client.cancelAndWait(id, cliWait);
        if (!endedByCancel(record)) {
          // The call closed on its own while the cancel was on its way: nothing was cancelled, and
          // what the tool did stands. Say so, with the record, rather than report a cancel.
          const message = `The call ended ${record.status} before the cancel could stop it; nothing was cancelled. Its record below says what happened.`;
          if (flags.json) printJson({ ok: false, exitCode: ExitCode.refused, error: message, record });
          else {
            process.stderr.write(`toolgate: ${message}\n`);
            printLines(describeRecord(record));
          }
          return ExitCode.refused;
        }
        if (flags.json) printJson(record);
        else printLines(describeRecord(record));
        return ExitCode.ok;
      }),
    );
}
