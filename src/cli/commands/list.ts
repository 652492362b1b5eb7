import type { Command } from 'commander';
import { ToolgateUsageError } from '../../client/errors.ts';
import type { ListFilters } from '../../client/operations.ts';
import {
  type FilterFlags,
  filtersFrom,
  helpExamples,
  withConnectionOptions,
  withFilterOptions,
} from '../options.ts';
import { describeCalls, ExitCode, printJson, printLines } from '../output.ts';
import { type CommonFlags, runWithSession } from '../run-command.ts';

export function addListCommand(program: Command): void {
  withConnectionOptions(
    withFilterOptions(
      program.command('list').description('List calls by status, tool, tenant, effect and age.'),
    ),
  )
    .option('--jsonl', 'print one JSON object per call, one per line (for scripts: jq -c, grep, while read)')
    .addHelpText(
      'after',
      `${helpExamples([
        'toolgate list --status awaiting_approval',
        'toolgate list --status failed,timeout --tool read_config --since 1h',
        'toolgate list --tenant acme --effect unknown --limit 20 --json',
        'toolgate list --status failed --jsonl | jq -r .callId',
      ])}\nOrder: open calls first (the most recently started first), then closed ones, the most recently closed first, as Temporal's visibility store sorts them; so with --limit, long-open calls come before recent closed ones (add --status to see one kind). One row per run. Visibility lags writes by about a second.\n`,
    )
    .action(async (flags: CommonFlags & FilterFlags & { jsonl?: boolean }) => {
      let filters: ListFilters = {};
      return runWithSession(
        flags,
        {
          check: () => {
            if (flags.json && flags.jsonl) throw new ToolgateUsageError('Give --json or --jsonl, not both.');
            filters = filtersFrom(flags, 50);
          },
        },
        async ({ operations }) => {
          const calls = await operations.list(filters);
          if (flags.jsonl) process.stdout.write(calls.map((call) => `${JSON.stringify(call)}\n`).join(''));
          else if (flags.json) printJson(calls);
          else printLines(describeCalls(calls));
          return ExitCode.ok;
        },
      );
    });
}
