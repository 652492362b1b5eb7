import type { Command } from 'commander';
import { ToolgateUsageError } from '../../client/errors.ts';
import type { ListFilters, ReplayOptions, ReplayOutcome } from '../../client/operations.ts';
import type { CliSession } from '../endpoint.ts';
import {
  currentUser,
  type FilterFlags,
  filtersFrom,
  gateProtocolOption,
  helpExamples,
  withConnectionOptions,
  withFilterOptions,
} from '../options.ts';
import {
  createProgressReporter,
  describeBulkSummary,
  describeRecord,
  ExitCode,
  exitCodeForRecord,
  printJson,
  printLines,
  safeText,
} from '../output.ts';
import { type CommonFlags, cliWait, printJsonOutcome, recordError, runWithSession } from '../run-command.ts';

/** `replay --force` acts on a call that may already have acted: it must say why. */
export function checkReplayFlags(flags: { force?: boolean; reason?: string }): void {
  if (flags.force && (flags.reason === undefined || flags.reason.trim() === '')) {
    throw new ToolgateUsageError(
      '--force needs --reason: say why a replay is safe (e.g. "ledger checked: transfer absent"); it is recorded on the new run.',
    );
  }
}

interface BulkReplay {
  readonly concurrency: number;
  readonly filters: ListFilters;
}

/**
 * Every flag of `replay`, checked before anything connects; for a bulk replay (no id), its
 * concurrency and filters as well, which it returns.
 */
function checkBulkReplay(
  id: string | undefined,
  flags: FilterFlags & { force?: boolean; reason?: string; concurrency: string },
): BulkReplay | undefined {
  checkReplayFlags(flags);
  if (id !== undefined) return undefined;
  const concurrency = Number(flags.concurrency);
  if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 64) {
    throw new ToolgateUsageError('--concurrency must be a whole number from 1 to 64.');
  }
  return { concurrency, filters: filtersFrom({ ...flags, status: flags.status ?? 'failed' }, 1000) };
}

type ReplayFlags = CommonFlags &
  FilterFlags & {
    as?: string;
    force?: boolean;
    reason?: string;
    wait: boolean;
    dryRun?: boolean;
    concurrency: string;
  };

function replayOptionsOf(flags: ReplayFlags): ReplayOptions {
  return {
    operator: flags.as ?? currentUser(),
    ...(flags.force ? { force: true } : {}),
    ...(flags.reason ? { reason: flags.reason } : {}),
  };
}

/** A bulk replay: every call the filters match, with a progress line per call and a summary. */
async function replayMatching(
  { operations }: CliSession,
  { concurrency, filters }: BulkReplay,
  flags: ReplayFlags,
): Promise<ExitCode> {
  const summary = await operations.replayMany(filters, {
    ...replayOptionsOf(flags),
    concurrency,
    wait: flags.wait,
    ...(flags.dryRun ? { dryRun: true } : {}),
    onProgress: createProgressReporter(),
  });
  const exitCode =
    summary.failed > 0 ? ExitCode.failed : summary.refused > 0 ? ExitCode.refused : ExitCode.ok;
  if (flags.json)
    printJsonOutcome(
      summary,
      exitCode,
      () =>
        `Of ${summary.total} call(s), ${summary.failed} did not succeed and ${summary.refused} were refused.`,
    );
  else printLines(describeBulkSummary(summary));
  return exitCode;
}

/** Replays one call and, unless `--no-wait`, waits for the new run to finish. */
async function replayOne(
  { client, operations }: CliSession,
  id: string,
  flags: ReplayFlags,
): Promise<ExitCode> {
  const outcome = await operations.replay(id, replayOptionsOf(flags));
  if (!outcome.replayed) return reportReplayRefused(outcome, flags.json);
  if (!flags.wait) {
    if (flags.json) printJson(outcome);
    else
      printLines([
        `Replaying ${id}: new run ${outcome.started.runId ?? '?'} replaces ${outcome.replacesRunId}.`,
      ]);
    return ExitCode.ok;
  }
  const record = await client.result(id, outcome.started.runId, cliWait);
  const exitCode = exitCodeForRecord(record);
  if (flags.json) printJsonOutcome({ ...outcome, record }, exitCode, () => recordError(record));
  else printLines(describeRecord(record));
  return exitCode;
}

/** A refused replay; a call that does not exist is "no such call", not a refusal. */
function reportReplayRefused(
  outcome: Extract<ReplayOutcome, { replayed: false }>,
  json: boolean | undefined,
): ExitCode {
  const notFound = outcome.refusal.startsWith('There is no call');
  const exitCode = notFound ? ExitCode.notFound : ExitCode.refused;
  if (json)
    printJsonOutcome(outcome, exitCode, () =>
      notFound ? outcome.refusal : `The replay was refused: ${outcome.refusal}`,
    );
  else process.stderr.write(`toolgate: replay refused: ${safeText(outcome.refusal, 600)}\n`);
  return exitCode;
}

export function addReplayCommand(program: Command): void {
  withConnectionOptions(
    withFilterOptions(
      program
        .command('replay [id]')
        .description(
          'Re-run a failed, timed-out or cancelled call as a new run of the same call (same tool, input and key). Without an id, replay every call matching the filters.',
        )
        .option('--as <operator>', 'who is replaying; recorded on the new run (default: your user name)')
        .option(
          '--force',
          'replay even though the call may already have acted (irreversible, effect unknown)',
        )
        .option('--reason <text>', 'why; required with --force (refused without it) and recorded')
        .option('--no-wait', 'do not wait for the new run to finish')
        .option('--dry-run', 'bulk: list what would be replayed and replay nothing')
        .option('--concurrency <n>', 'bulk: replays at a time', '4'),
    ),
  )
    .addOption(gateProtocolOption())
    .addHelpText(
      'after',
      helpExamples([
        'toolgate replay toolgate/default/read_config/~3f2a…',
        'toolgate replay <id> --force --reason "ledger checked: transfer absent"',
        'toolgate replay --status failed --tool read_config --since 1h --dry-run',
        'toolgate replay --status failed --tool read_config --since 1h --concurrency 8',
      ]) +
        '\nSucceeded calls are never replayed; denied calls are re-sent with corrected input instead.' +
        "\nExit codes: 0 replayed and succeeded (bulk: all), 3 a replayed call did not succeed, 4 refused, 5 no such call, 6 unreachable, or no worker has polled the call's task queue for 15 s.\n",
    )
    .action(async (id: string | undefined, flags: ReplayFlags) => {
      let bulk: BulkReplay | undefined;
      return runWithSession(
        flags,
        {
          check: () => {
            bulk = checkBulkReplay(id, flags);
          },
        },
        (session) => {
          if (id !== undefined) return replayOne(session, id, flags);
          // Set by the check, which ran before the session opened.
          return replayMatching(session, bulk!, flags);
        },
      );
    });
}
