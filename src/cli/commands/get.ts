import type { Command } from 'commander';
import { helpExamples, withConnectionOptions } from '../options.ts';
import { describeRecord, ExitCode, printJson, printLines } from '../output.ts';
import { type CommonFlags, runWithSession } from '../run-command.ts';

export function addGetCommand(program: Command): void {
  withConnectionOptions(
    program
      .command('get <id>')
      .description('Show a call: its record, transitions, refused approvals, replay and undo.')
      .option('--run <runId>', 'a specific run, e.g. the one a replay replaced'),
  )
    .addHelpText(
      'after',
      `${helpExamples([
        'toolgate get toolgate/default/read_config/~3f2a…',
        'toolgate get <id> --json | jq .transitions',
      ])}\nExit codes: 0 found, 5 no such call, 6 unreachable.\n`,
    )
    .action(async (id: string, flags: CommonFlags & { run?: string }) =>
      runWithSession(flags, {}, async ({ operations }) => {
        const record = await operations.get(id, flags.run ? { runId: flags.run } : {});
        if (!record) {
          if (flags.json)
            printJson({ ok: false, exitCode: ExitCode.notFound, error: `There is no call ${id}.` });
          else process.stderr.write(`toolgate: there is no call ${id}.\n`);
          return ExitCode.notFound;
        }
        if (flags.json) printJson(record);
        else printLines(describeRecord(record));
        return ExitCode.ok;
      }),
    );
}
