import { readFile } from 'node:fs/promises';
import { userInfo } from 'node:os';
import { NamespaceNotFoundError, WorkflowNotFoundError } from '@temporalio/client';
import { type Command, Option } from 'commander';
import { defaultMcpNoWorkerAfterMs, serveMcp } from '../agent/mcp.ts';
import { isNoWorkerError } from '../agent/run-tool-calls.ts';
import { decisionClaimsProblem } from '../client/approval-signer.ts';
import { buildListQuery, type ListFilters, NotACallError, UnknownRunError } from '../client/operations.ts';
import { checkContext, NoWorkerAnsweredError, ToolgateUsageError } from '../client/toolgate-client.ts';
import { describeKeyRules } from '../contracts/call-id.ts';
import type { CallContext } from '../contracts/call-record.ts';
import {
  type CallEffect,
  type CallRecord,
  CallStatus,
  type PrincipalKind,
} from '../contracts/call-record.ts';
import {
  currentGatesProtocol,
  leanGatesProtocol,
  startableGatesProtocols,
} from '../contracts/prepare-call.ts';
import { exampleCatalog } from '../tools/example-contracts.ts';
import { type CliSession, type ConnectionFlags, EndpointUnavailableError, openSession } from './endpoint.ts';
import {
  createProgressReporter,
  describeBulkSummary,
  describeCalls,
  describeRecord,
  ExitCode,
  endedByCancel,
  exitCodeForRecord,
  formatJson,
  printJson,
  printLines,
  safeText,
} from './output.ts';
import { runUntilStopped } from './stop-signals.ts';

/** A data directory another live process holds (src/dev/database-claim.ts); matched by name. */
const databaseInUseErrorName = 'DatabaseInUseError';

/**
 * The exit code and the message for an error that ends a command, by the documented mapping:
 * 6 the cluster, its namespace or its workers cannot be reached, 5 no such call, 1 anything else
 * (usage mistakes, a data directory in use, internal errors). Every command's error, with `--json`
 * or without, goes through here, so one failure always gives the same code.
 */
export function describeCliError(error: unknown): { exitCode: ExitCode; message: string } {
  const message = error instanceof Error ? error.message : String(error);
  for (let current = error; current instanceof Error; current = current.cause) {
    if (current instanceof EndpointUnavailableError || current instanceof NoWorkerAnsweredError) {
      return { exitCode: ExitCode.unavailable, message };
    }
    if (current instanceof NamespaceNotFoundError || current.name === 'NamespaceNotFoundError') {
      const namespace = (current as { namespace?: unknown }).namespace;
      return {
        exitCode: ExitCode.unavailable,
        message: `The Temporal namespace ${JSON.stringify(String(namespace ?? '?'))} does not exist on this cluster. Check --namespace (or TEMPORAL_NAMESPACE, or the endpoint file), or create the namespace.`,
      };
    }
    // These two carry a message that says more than "not found": which call an undo belongs to,
    // or that the call exists but not that run.
    if (current instanceof NotACallError || current instanceof UnknownRunError) {
      return { exitCode: ExitCode.notFound, message: current.message };
    }
    if (current instanceof WorkflowNotFoundError) {
      const { workflowId, runId } = current;
      return {
        exitCode: ExitCode.notFound,
        message:
          runId === undefined
            ? `There is no call ${workflowId}.`
            : `There is no run ${runId} of the call ${workflowId}.`,
      };
    }
    if (current.name === databaseInUseErrorName) return { exitCode: ExitCode.error, message };
  }
  return { exitCode: ExitCode.error, message };
}

/**
 * Prints a command's JSON document. A non-zero exit always carries `ok: false`, the `exitCode` and a
 * human `error`, whatever else the document holds, so a script can branch on one shape; the
 * document's own fields stay as they were.
 */
function printJsonOutcome(value: object, exitCode: ExitCode, error: () => string): void {
  if (exitCode === ExitCode.ok) {
    printJson(value);
    return;
  }
  const head = { ok: false, exitCode, error: error() };
  // The head's keys come first; its values win over any the document has under the same names.
  printJson(Object.assign({}, head, value, head));
}

/** What a call's record says went wrong, for the `error` of a non-zero exit. */
function recordError(record: Pick<CallRecord, 'status' | 'reason' | 'message'>): string {
  return `The call ended ${record.status}${record.reason ? ` (${record.reason})` : ''}${record.message ? `: ${record.message}` : ''}`;
}

/**
 * How a command that waits for a call behaves when no worker serves it: it gives up with exit 6
 * (the call stays open) instead of hanging in silence.
 */
const cliWait = { noWorkerAfterMs: 15_000 } as const;

interface CommonFlags extends ConnectionFlags {
  readonly json?: boolean;
}

/** Who is at the keyboard, for `--as` and `--principal` defaults. */
function currentUser(): string {
  try {
    return process.env['USER'] ?? userInfo().username;
  } catch {
    return 'operator';
  }
}

/** Adds the flags every command that talks to the cluster shares. */
export function withConnectionOptions(command: Command): Command {
  return command
    .option('--json', 'print one JSON document on stdout')
    .option(
      '--address <host:port>',
      'Temporal address (default: TEMPORAL_ADDRESS, then <data-dir>/endpoint.json)',
    )
    .option(
      '--namespace <namespace>',
      'Temporal namespace (default: TEMPORAL_NAMESPACE or the endpoint file)',
    )
    .option(
      '--task-queue <queue>',
      'task queue of the workers (default: TOOLGATE_TASK_QUEUE or the endpoint file)',
    )
    .option(
      '--data-dir <dir>',
      'toolgate data directory: endpoint file and approval key (default: TOOLGATE_DATA_DIR or .toolgate)',
    );
}

/**
 * `--gate-protocol`, for the commands that start runs (`call`, `replay`): pins new runs to gate
 * protocol 2 while workers older than protocol 3 still serve the task queue (docs/operators.md).
 */
function gateProtocolOption(): Option {
  return new Option(
    '--gate-protocol <n>',
    `gate protocol of the runs this starts; ${leanGatesProtocol} only while workers older than ${currentGatesProtocol} serve the queue (default: ${currentGatesProtocol})`,
  )
    .choices(startableGatesProtocols.map(String))
    .env('TOOLGATE_GATE_PROTOCOL');
}

/**
 * Runs one client command: connects, runs, closes, and maps failures to exit codes. With `--json`
 * an error is a JSON document too, so scripts never parse prose.
 */
async function runWithSession(
  flags: CommonFlags,
  options: {
    signer?: boolean;
    /** Checks the flags before anything connects, signs or is sent; throws a usage error. */
    check?: () => Promise<void> | void;
  },
  body: (session: CliSession) => Promise<ExitCode>,
): Promise<void> {
  let session: CliSession | undefined;
  try {
    await options.check?.();
    session = await openSession(flags, options.signer ? { signer: true } : {});
    process.exitCode = await body(session);
  } catch (error) {
    const { exitCode, message } = describeCliError(error);
    if (flags.json) printJson({ ok: false, exitCode, error: message });
    process.stderr.write(`toolgate: ${message}\n`);
    process.exitCode = exitCode;
  } finally {
    await session?.close().catch(() => undefined);
  }
}

function parseInput(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new ToolgateUsageError(`--input is not valid JSON. Example: --input '{"name":"region"}'`);
  }
}

/**
 * The arguments of `call`: `--input` as typed, or `--input-file` (`-` for stdin), never both. The
 * size limits are the client's, which refuses an oversized input PAYLOAD_TOO_LARGE like any other.
 */
export async function readCallInput(
  flags: { input?: string; inputFile?: string },
  readStdin: () => Promise<string> = readAllStdin,
): Promise<unknown> {
  if (flags.input !== undefined && flags.inputFile !== undefined) {
    throw new ToolgateUsageError('Give the arguments with --input or with --input-file, not both.');
  }
  if (flags.input !== undefined) return parseInput(flags.input);
  if (flags.inputFile === undefined) {
    throw new ToolgateUsageError(
      `The arguments are required: --input '<json>', or --input-file <path> (- reads stdin).`,
    );
  }
  const source = flags.inputFile === '-' ? 'stdin' : flags.inputFile;
  if (flags.inputFile === '')
    throw new ToolgateUsageError('--input-file is empty: give a path, or - for stdin.');
  let text: string;
  try {
    text = flags.inputFile === '-' ? await readStdin() : await readFile(flags.inputFile, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const why =
      code === 'ENOENT'
        ? 'it does not exist'
        : code === 'EACCES' || code === 'EPERM'
          ? 'permission denied'
          : code === 'EISDIR'
            ? 'it is a directory'
            : error instanceof Error
              ? error.message
              : String(error);
    throw new ToolgateUsageError(`--input-file: cannot read ${source}: ${why}.`);
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    const detail = error instanceof Error ? error.message : String(error);
    throw new ToolgateUsageError(
      `--input-file: ${source} is not valid JSON (${detail}). It must hold the arguments as one JSON value, e.g. {"name":"region"}.`,
    );
  }
}

async function readAllStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(Buffer.from(chunk as Uint8Array));
  return Buffer.concat(chunks).toString('utf8');
}

/** `--key`: an empty key is as malformed as any other the key rules refuse (an absent key is fine). */
export function checkKeyFlag(key: string | undefined): void {
  if (key !== undefined && key.trim() === '') {
    throw new ToolgateUsageError(`--key is empty: the idempotency key is malformed. ${describeKeyRules()}`);
  }
}

/**
 * The call context `call` and `mcp` run under, from their flags, checked by the client's rules
 * before anything connects; a problem names the flag, not the library's field. Before, `toolgate
 * mcp --tenant "acme corp"` started, and every tools/call failed as "could not run, retry later".
 */
export function callContextOf(
  flags: { readonly tenant: string; readonly principal?: string; readonly principalKind: PrincipalKind },
  defaultPrincipal: string,
): CallContext {
  const context: CallContext = {
    tenant: flags.tenant,
    principal: flags.principal ?? defaultPrincipal,
    principalKind: flags.principalKind,
  };
  const flagOf = { tenant: '--tenant', principal: '--principal', principalKind: '--principal-kind' };
  checkContext(context, (field) => `${flagOf[field]} ${JSON.stringify(String(context[field]).slice(0, 80))}`);
  return context;
}

/** A Temporal run ID: a UUID. */
const runIdPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The flags of `approve` and `reject`, checked before anything connects or is signed, by the rules
 * the workers check the signed claims with (src/contracts/approval.ts), plus the CLI's own: a
 * rejection says why, and `--run` is a run ID.
 */
export function checkDecisionFlags(
  decision: 'approve' | 'reject',
  flags: { as: string; role?: string[]; comment?: string; reason?: string; run?: string },
): void {
  const commentFlag = decision === 'approve' ? '--comment' : '--reason';
  const comment = decision === 'approve' ? flags.comment : flags.reason;
  if (decision === 'reject' && (comment === undefined || comment.trim() === '')) {
    throw new ToolgateUsageError(
      '--reason is empty: say why you reject the call (it is recorded with the decision).',
    );
  }
  if (flags.as.trim() === '') {
    throw new ToolgateUsageError(
      '--as is empty: give your approver name, as listed in the tool’s approvers.',
    );
  }
  const problem = decisionClaimsProblem(
    {
      approver: flags.as,
      roles: flags.role ?? [],
      ...(comment !== undefined ? { comment } : {}),
    },
    { partial: true, labels: { approver: '--as', roles: '--role', comment: commentFlag } },
  );
  if (problem !== undefined) throw new ToolgateUsageError(`Nothing was signed or sent: ${problem}.`);
  if (flags.run !== undefined && !runIdPattern.test(flags.run)) {
    throw new ToolgateUsageError(
      `--run ${JSON.stringify(flags.run.slice(0, 80))} is not a run ID: run IDs are UUIDs, as \`toolgate get <id>\` prints them on the "run" line.`,
    );
  }
}

/** `replay --force` acts on a call that may already have acted: it must say why. */
export function checkReplayFlags(flags: { force?: boolean; reason?: string }): void {
  if (flags.force && (flags.reason === undefined || flags.reason.trim() === '')) {
    throw new ToolgateUsageError(
      '--force needs --reason: say why a replay is safe (e.g. "ledger checked: transfer absent"); it is recorded on the new run.',
    );
  }
}

/**
 * Every flag of `replay`, checked before anything connects; for a bulk replay (no id), its
 * concurrency and filters as well, which it returns.
 */
function checkBulkReplay(
  id: string | undefined,
  flags: FilterFlags & { force?: boolean; reason?: string; concurrency: string },
): { concurrency: number; filters: ListFilters } | undefined {
  checkReplayFlags(flags);
  if (id !== undefined) return undefined;
  const concurrency = Number(flags.concurrency);
  if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 64) {
    throw new ToolgateUsageError('--concurrency must be a whole number from 1 to 64.');
  }
  return { concurrency, filters: filtersFrom({ ...flags, status: flags.status ?? 'failed' }, 1000) };
}

function parseLimit(value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const limit = Number(value);
  if (!Number.isInteger(limit) || limit < 1 || limit > 10_000) {
    throw new ToolgateUsageError('--limit must be a whole number from 1 to 10000.');
  }
  return limit;
}

function parseStatuses(value: string | undefined): CallStatus[] | undefined {
  if (value === undefined) return undefined;
  const statuses = value.split(',').map((part) => part.trim());
  for (const status of statuses) {
    if (!Object.hasOwn(CallStatus, status)) {
      throw new ToolgateUsageError(
        `Unknown status ${JSON.stringify(status)}. Use one or more of: ${Object.keys(CallStatus).join(', ')}.`,
      );
    }
  }
  return statuses as CallStatus[];
}

interface FilterFlags {
  readonly status?: string;
  readonly tool?: string;
  readonly tenant?: string;
  readonly effect?: string;
  readonly principal?: string;
  readonly since?: string;
  readonly limit?: string;
}

/**
 * The filter flags as list filters, checked in full (the query is built once and dropped) so that a
 * bad `--since` or `--tenant` is refused before anything connects.
 */
function filtersFrom(flags: FilterFlags, defaultLimit: number): ListFilters {
  const status = parseStatuses(flags.status);
  const filters: ListFilters = {
    ...(status ? { status } : {}),
    ...(flags.tool ? { tool: flags.tool } : {}),
    ...(flags.tenant ? { tenant: flags.tenant } : {}),
    ...(flags.effect ? { effect: flags.effect as CallEffect } : {}),
    ...(flags.principal ? { principal: flags.principal } : {}),
    ...(flags.since ? { since: flags.since } : {}),
    limit: parseLimit(flags.limit, defaultLimit),
  };
  buildListQuery(filters);
  return filters;
}

function withFilterOptions(command: Command, defaultStatus?: string): Command {
  return command
    .option('--status <status[,status]>', `call status: ${Object.keys(CallStatus).join(', ')}`, defaultStatus)
    .option('--tool <tool>', 'tool name')
    .option('--tenant <tenant>', 'tenant')
    .addOption(new Option('--effect <effect>', 'effect').choices(['none', 'applied', 'unknown']))
    .option('--principal <principal>', 'the requester')
    .option('--since <when>', 'started within a duration (90s, 30m, 1h, 2d, 1w) or since an ISO time')
    .option('--limit <n>', 'at most this many calls');
}

const examples = (lines: readonly string[]) =>
  `\nExamples:\n${lines.map((line) => `  $ ${line}`).join('\n')}\n`;

/** Registers the client commands on the program. */
export function addClientCommands(program: Command): void {
  withConnectionOptions(
    program
      .command('call <tool>')
      .description('Send one tool call through the gates and print its record.')
      .option('--input <json>', 'the arguments, as JSON (or use --input-file)')
      .option(
        '--input-file <path>',
        'read the arguments, as JSON, from a file (- reads stdin); for inputs too large for a command line',
      )
      .option('--key <key>', 'idempotency key (required for irreversible and approval tools)')
      .option('--tenant <tenant>', 'tenant of the caller', 'default')
      .option('--principal <principal>', 'who is asking (default: your user name)')
      .addOption(
        new Option('--principal-kind <kind>', 'human, agent or service')
          .choices(['human', 'agent', 'service'])
          .default('human'),
      )
      .option('--no-wait', 'print the call ID as soon as it starts'),
  )
    .addOption(gateProtocolOption())
    // Exactly one of --input and --input-file: a usage error like a missing required option, with
    // commander's hint on stderr (and JSON on stdout with --json).
    .hook('preAction', (command) => {
      const { input, inputFile } = command.opts<{ input?: string; inputFile?: string }>();
      if ((input === undefined) === (inputFile === undefined)) {
        command.error(
          input === undefined
            ? `The arguments are required: --input '<json>', or --input-file <path> (- reads stdin).`
            : 'Give the arguments with --input or with --input-file, not both.',
        );
      }
    })
    .addHelpText(
      'after',
      examples([
        `toolgate call read_config --input '{"name":"region"}'`,
        `toolgate call add_label --input '{"item":"ticket-9","label":"urgent"}' --json`,
        `toolgate call transfer_funds --input '{"reference":"inv-42","from":"ACC-1","to":"ACC-2","amountCents":1250,"currency":"EUR","memo":null}' --no-wait`,
        'toolgate call summarize --input-file ./arguments.json',
        'generate-arguments | toolgate call summarize --input-file -',
      ]) +
        "\nGive the arguments with exactly one of --input and --input-file. Their size limits are the client's (PAYLOAD_TOO_LARGE, exit 2)." +
        "\nExit codes: 0 succeeded (or started, with --no-wait), 1 usage (no or both input flags, an unreadable file, invalid JSON, an empty --key), 2 denied, 3 failed/timeout/cancelled, 6 unreachable, or no worker has polled the call's task queue for 15 s (the call stays open and runs when one does).\n",
    )
    .action(
      async (
        tool: string,
        flags: CommonFlags & {
          input?: string;
          inputFile?: string;
          key?: string;
          tenant: string;
          principal?: string;
          principalKind: PrincipalKind;
          wait: boolean;
        },
      ) => {
        let input: unknown;
        let context: CallContext;
        return runWithSession(
          flags,
          {
            check: async () => {
              checkKeyFlag(flags.key);
              context = callContextOf(flags, currentUser());
              input = await readCallInput(flags);
            },
          },
          async ({ client }) => {
            const started = await client.start(
              { tool, input, ...(flags.key !== undefined ? { key: flags.key } : {}) },
              context,
            );
            if (!flags.wait || started.record) {
              // A duplicate of an undone reversible call comes with its undo, as `get` shows it.
              const record = started.record;
              const exitCode = record ? exitCodeForRecord(record) : ExitCode.ok;
              if (flags.json)
                printJsonOutcome(record ? { ...started, record } : started, exitCode, () =>
                  recordError(record!),
                );
              else if (record) printLines(describeRecord(record));
              else printLines([`${started.disposition}: ${started.callId}`]);
              return exitCode;
            }
            const record = await client.result(started.callId, started.runId, cliWait);
            const exitCode = exitCodeForRecord(record);
            if (flags.json) printJsonOutcome(record, exitCode, () => recordError(record));
            else printLines(describeRecord(record));
            return exitCode;
          },
        );
      },
    );

  withConnectionOptions(
    program
      .command('get <id>')
      .description('Show a call: its record, transitions, refused approvals, replay and undo.')
      .option('--run <runId>', 'a specific run, e.g. the one a replay replaced'),
  )
    .addHelpText(
      'after',
      `${examples([
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

  withConnectionOptions(
    withFilterOptions(
      program.command('list').description('List calls by status, tool, tenant, effect and age.'),
    ),
  )
    .addHelpText(
      'after',
      `${examples([
        'toolgate list --status awaiting_approval',
        'toolgate list --status failed,timeout --tool read_config --since 1h',
        'toolgate list --tenant acme --effect unknown --limit 20 --json',
      ])}\nOrder: open calls first (the most recently started first), then closed ones, the most recently closed first, as Temporal's visibility store sorts them; so with --limit, long-open calls come before recent closed ones (add --status to see one kind). One row per run. Visibility lags writes by about a second.\n`,
    )
    .action(async (flags: CommonFlags & FilterFlags) => {
      let filters: ListFilters = {};
      return runWithSession(
        flags,
        {
          check: () => {
            filters = filtersFrom(flags, 50);
          },
        },
        async ({ operations }) => {
          const calls = await operations.list(filters);
          if (flags.json) printJson(calls);
          else printLines(describeCalls(calls));
          return ExitCode.ok;
        },
      );
    });

  for (const decision of ['approve', 'reject'] as const) {
    const command = withConnectionOptions(
      program
        .command(`${decision} <id>`)
        .description(
          decision === 'approve'
            ? 'Approve a call that waits for a human, signed with the approval key of the data directory.'
            : 'Reject a call that waits for a human; nothing runs.',
        )
        .requiredOption('--as <approver>', 'your approver name, as listed in the tool’s approvers')
        .option('--role <role...>', 'your roles, matched against role:<name> approvers')
        .option(
          '--run <runId>',
          'decide only this run, the one whose arguments you read (`toolgate get` prints it as "run"); refused if the call was restarted since',
        )
        .option('--wait', 'after the decision counts, wait for the call to finish and exit with its outcome'),
    );
    if (decision === 'approve') command.option('--comment <text>', 'a comment recorded with the decision');
    else command.requiredOption('--reason <text>', 'why; recorded with the decision');
    command
      .addHelpText(
        'after',
        examples(
          decision === 'approve'
            ? [
                'toolgate approve toolgate/default/transfer_funds/k/transfer-inv-42 --as alice --comment "matches invoice"',
                'toolgate approve <id> --as carol --role finance --wait --json',
                'toolgate approve <id> --as alice --run 0193c0de-… # only the run you read with `toolgate get <id>`',
              ]
            : [
                'toolgate reject toolgate/default/transfer_funds/k/transfer-inv-42 --as alice --reason "wrong account"',
              ],
        ) +
          (decision === 'approve'
            ? '\n--as, --role and --comment are checked before anything is signed: a name of 1-128 characters, at most 32 roles of at most 64 characters, a comment of at most 2000 characters.'
            : '\n--reason is required and may not be blank; it is checked before anything is signed: at most 2000 characters, and --as a name of 1-128 characters.') +
          '\nExit codes: 0 the decision counted, 1 usage (a flag over its limit, an empty --as or --reason, a --run that is not a run ID), 4 refused (not an approver, requester, already decided, closed, or --run is not the current run), 5 no such call, or --run names no run of it, 6 no worker answered.\n',
      )
      .action(
        async (
          id: string,
          flags: CommonFlags & {
            as: string;
            role?: string[];
            run?: string;
            comment?: string;
            reason?: string;
            wait?: boolean;
          },
        ) =>
          runWithSession(
            flags,
            { signer: true, check: () => checkDecisionFlags(decision, flags) },
            async ({ client }) => {
              const comment = decision === 'approve' ? flags.comment : flags.reason?.trim();
              if (flags.run !== undefined) {
                // A run ID of no run of this call is a mistake in what was typed or pasted, not a
                // restart: say so. (A call that does not exist at all is "no such call" below.)
                const ofRun = await client.temporal.workflow
                  .getHandle(id, flags.run)
                  .describe()
                  .then(
                    () => true,
                    (error: unknown) => {
                      if (error instanceof WorkflowNotFoundError) return false;
                      throw error;
                    },
                  );
                if (!ofRun) {
                  await client.temporal.workflow.getHandle(id).describe();
                  const message = `The call ${id} has no run ${flags.run}: check the run ID (\`toolgate get <id>\` prints the current one on its "run" line). Nothing was signed or sent.`;
                  if (flags.json) printJson({ ok: false, exitCode: ExitCode.notFound, error: message });
                  else process.stderr.write(`toolgate: ${message}\n`);
                  return ExitCode.notFound;
                }
              }
              const options = {
                approver: flags.as,
                ...(flags.role ? { roles: flags.role } : {}),
                ...(comment !== undefined ? { comment } : {}),
                ...(flags.run !== undefined ? { runId: flags.run } : {}),
              };
              const outcome =
                decision === 'approve' ? await client.approve(id, options) : await client.reject(id, options);
              let exitCode: ExitCode = outcome.accepted
                ? ExitCode.ok
                : outcome.state === 'delivered'
                  ? ExitCode.unavailable
                  : ExitCode.refused;
              let record = outcome.record;
              if (outcome.accepted && flags.wait) {
                record = await client.result(id, undefined, cliWait);
                exitCode = exitCodeForRecord(record);
              }
              if (flags.json)
                printJsonOutcome({ ...outcome, ...(record ? { record } : {}) }, exitCode, () =>
                  outcome.accepted && record
                    ? recordError(record)
                    : `The decision did not count: ${outcome.reason ?? outcome.state}.`,
                );
              else {
                printLines([
                  outcome.accepted
                    ? `${decision === 'approve' ? 'Approved' : 'Rejected'} ${safeText(id, 400)} as ${safeText(flags.as, 130)}.`
                    : `The decision did not count: ${safeText(outcome.reason ?? outcome.state, 400)}.`,
                  ...(record ? ['', ...describeRecord(record)] : []),
                ]);
              }
              return exitCode;
            },
          ),
      );
  }

  withConnectionOptions(
    program
      .command('cancel <id>')
      .description('Cancel an open call and wait until its tool has really stopped.'),
  )
    .addHelpText(
      'after',
      examples(['toolgate cancel toolgate/default/slow_search/~5d1c…']) +
        "\nExit codes: 0 cancelled, 4 the call was already closed, or ended on its own before the cancel reached it, 5 no such call, 6 unreachable, or no worker has polled the call's task queue for 15 s (the cancel is recorded and takes effect when one does).\n",
    )
    .action(async (id: string, flags: CommonFlags) =>
      runWithSession(flags, {}, async ({ client }) => {
        const description = await client.temporal.workflow.getHandle(id).describe();
        if (description.status.name !== 'RUNNING') {
          const record = await client.result(id);
          const message = `The call is already closed (${record.status}); there is nothing to cancel.`;
          if (flags.json) printJson({ ok: false, exitCode: ExitCode.refused, error: message, record });
          else process.stderr.write(`toolgate: ${message}\n`);
          return ExitCode.refused;
        }
        const record = await client.cancel(id, cliWait);
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
      examples([
        'toolgate replay toolgate/default/read_config/~3f2a…',
        'toolgate replay <id> --force --reason "ledger checked: transfer absent"',
        'toolgate replay --status failed --tool read_config --since 1h --dry-run',
        'toolgate replay --status failed --tool read_config --since 1h --concurrency 8',
      ]) +
        '\nSucceeded calls are never replayed; denied calls are re-sent with corrected input instead.' +
        "\nExit codes: 0 replayed and succeeded (bulk: all), 3 a replayed call did not succeed, 4 refused, 5 no such call, 6 unreachable, or no worker has polled the call's task queue for 15 s.\n",
    )
    .action(
      async (
        id: string | undefined,
        flags: CommonFlags &
          FilterFlags & {
            as?: string;
            force?: boolean;
            reason?: string;
            wait: boolean;
            dryRun?: boolean;
            concurrency: string;
          },
      ) => {
        let bulk: ReturnType<typeof checkBulkReplay>;
        return runWithSession(
          flags,
          {
            check: () => {
              bulk = checkBulkReplay(id, flags);
            },
          },
          async ({ client, operations }) => {
            const operator = flags.as ?? currentUser();
            const replayOptions = {
              operator,
              ...(flags.force ? { force: true } : {}),
              ...(flags.reason ? { reason: flags.reason } : {}),
            };
            if (id === undefined) {
              // Set by the check, which ran before the session opened.
              const { concurrency, filters } = bulk!;
              const summary = await operations.replayMany(filters, {
                ...replayOptions,
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
            const outcome = await operations.replay(id, replayOptions);
            if (!outcome.replayed) {
              const notFound = outcome.refusal.startsWith('There is no call');
              const exitCode = notFound ? ExitCode.notFound : ExitCode.refused;
              if (flags.json)
                printJsonOutcome(outcome, exitCode, () =>
                  notFound ? outcome.refusal : `The replay was refused: ${outcome.refusal}`,
                );
              else process.stderr.write(`toolgate: replay refused: ${safeText(outcome.refusal, 600)}\n`);
              return exitCode;
            }
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
          },
        );
      },
    );

  withConnectionOptions(
    program
      .command('undo <id>')
      .description(
        'Run the compensation of a succeeded reversible call. Runs once, however often it is asked.',
      )
      .option('--as <operator>', 'who is undoing; recorded on the call (default: your user name)'),
  )
    .addHelpText(
      'after',
      examples(['toolgate undo toolgate/default/add_label/~9a0b…', 'toolgate undo <id> --as oscar --json']) +
        '\nExit codes: 0 undone (now or by an earlier undo), 4 refused or the compensation failed, 5 no such call.\n',
    )
    .action(async (id: string, flags: CommonFlags & { as?: string }) =>
      runWithSession(flags, {}, async ({ operations }) => {
        const outcome = await operations.undo(id, { operator: flags.as ?? currentUser() });
        if (!outcome.undone) {
          const exitCode = outcome.refusal.startsWith('There is no call')
            ? ExitCode.notFound
            : ExitCode.refused;
          if (flags.json)
            printJsonOutcome(outcome, exitCode, () =>
              exitCode === ExitCode.notFound ? outcome.refusal : `The undo was refused: ${outcome.refusal}`,
            );
          else process.stderr.write(`toolgate: undo refused: ${safeText(outcome.refusal, 600)}\n`);
          return exitCode;
        }
        if (flags.json) printJson(outcome);
        else {
          printLines([
            outcome.alreadyDone
              ? `${safeText(id, 400)} was already undone by ${safeText(outcome.undo.operator, 130)} at ${safeText(outcome.undo.at, 64)}; the compensation did not run again.`
              : `Undone: ${safeText(outcome.result.compensation, 130)} ran for ${safeText(id, 400)}.`,
          ]);
        }
        return ExitCode.ok;
      }),
    );

  const mcp = withConnectionOptions(
    program
      .command('mcp')
      .description(
        'Serve the tools to an MCP client over stdio: every tools/call goes through the gates. stdout carries protocol messages only; logs go to stderr.',
      )
      .option('--tenant <tenant>', 'tenant the calls run under', 'default')
      .option('--principal <principal>', 'who is asking (default: mcp-<your user name>)')
      .addOption(
        new Option('--principal-kind <kind>', 'human, agent or service')
          .choices(['human', 'agent', 'service'])
          .default('agent'),
      )
      .option('--tools <names>', 'serve only these tools, comma-separated (default: every example tool)')
      .option('--max-concurrency <n>', 'tool calls run at once; more wait their turn', '4')
      .option(
        '--wait-for-approval',
        'hold a tools/call until its approval is decided (default: answer at once that it is pending)',
      )
      .option(
        '--worker-wait <seconds>',
        'answer a tools/call as pending once no worker has polled its task queue for this long; the call stays open',
        String(defaultMcpNoWorkerAfterMs / 1000),
      ),
  );
  // stdout carries the protocol here, so --json shapes the log on stderr instead.
  const jsonOption = mcp.options.find((option) => option.long === '--json');
  if (jsonOption) jsonOption.description = 'write the log on stderr as JSON lines';
  mcp
    .addHelpText(
      'after',
      [
        '',
        'Register it with an MCP client (Claude Desktop, Claude Code, Cursor… ) as a stdio server,',
        'for instance in the client’s JSON config:',
        '',
        '  {',
        '    "mcpServers": {',
        '      "toolgate": {',
        '        "command": "npx",',
        '        "args": ["toolgate", "mcp", "--tenant", "acme", "--principal", "desktop-agent"],',
        '        "env": { "TOOLGATE_DATA_DIR": "/path/to/project/.toolgate" }',
        '      }',
        '    }',
        '  }',
        '',
        'or: claude mcp add toolgate -- npx toolgate mcp --tenant acme',
        '',
        'It joins the cluster a running `toolgate dev` wrote to <data-dir>/endpoint.json (or',
        '--address / TEMPORAL_ADDRESS); a worker must serve the task queue. Give the client an',
        'absolute --data-dir or TOOLGATE_DATA_DIR: it may start the server in another folder.',
        'A call that waits for a human is answered "Pending: … Call ID: …" at once, unless',
        '--wait-for-approval. A call no worker picks up within --worker-wait seconds (default 30)',
        'is answered pending too, with a warning in the log: it stays open and runs when a worker',
        'starts. Do not let the client retry it.',
        '',
        'Exit codes: 0 the client closed stdin or a signal stopped it, 6 server unreachable.',
        '',
      ].join('\n'),
    )
    .action(
      async (
        flags: CommonFlags & {
          tenant: string;
          principal?: string;
          principalKind: PrincipalKind;
          tools?: string;
          maxConcurrency: string;
          waitForApproval?: boolean;
          workerWait: string;
        },
      ) => {
        // stdout belongs to the protocol: everything for people goes to stderr, JSON with --json.
        const logLine = (level: string, message: string, error?: unknown): void => {
          const detail =
            error === undefined ? undefined : error instanceof Error ? error.message : String(error);
          process.stderr.write(
            flags.json
              ? `${formatJson({ level, message, ...(detail ? { error: detail } : {}) }, 0)}\n`
              : `toolgate mcp: ${safeText(message, 2000)}${detail ? ` (${safeText(detail, 2000)})` : ''}\n`,
          );
        };
        try {
          const maxConcurrency = Number(flags.maxConcurrency);
          if (!Number.isInteger(maxConcurrency) || maxConcurrency < 1 || maxConcurrency > 64) {
            throw new ToolgateUsageError('--max-concurrency must be a whole number from 1 to 64.');
          }
          const workerWaitSeconds = Number(flags.workerWait);
          if (!Number.isInteger(workerWaitSeconds) || workerWaitSeconds < 1 || workerWaitSeconds > 86_400) {
            throw new ToolgateUsageError('--worker-wait must be a whole number of seconds from 1 to 86400.');
          }
          const include = flags.tools
            ?.split(',')
            .map((name) => name.trim())
            .filter((name) => name !== '');
          const unknown = include?.filter((name) => !Object.hasOwn(exampleCatalog, name)) ?? [];
          if (unknown.length > 0) {
            throw new ToolgateUsageError(
              `--tools names unknown tools: ${unknown.join(', ')}. Known: ${Object.keys(exampleCatalog).join(', ')}.`,
            );
          }
          const context = callContextOf(flags, `mcp-${currentUser()}`);
          await runUntilStopped({
            what: 'the MCP server',
            start: async (signal) => {
              const session = await openSession(flags);
              try {
                signal.throwIfAborted();
                const server = serveMcp({
                  client: session.client,
                  catalog: exampleCatalog,
                  ...(include ? { include } : {}),
                  context,
                  maxConcurrency,
                  approvalMode: flags.waitForApproval ? 'wait' : 'return-pending',
                  noWorkerAfterMs: workerWaitSeconds * 1000,
                  // serveMcp logs a warning of its own for a call no worker picked up: not an error.
                  onError: (error, call) => {
                    if (!isNoWorkerError(error)) {
                      logLine('error', `toolgate could not run ${call.name}`, error);
                    }
                  },
                  log: (event) => logLine(event.level, event.message, event.error),
                });
                return { session, server };
              } catch (error) {
                await session.close();
                throw error;
              }
            },
            started: ({ session }) =>
              logLine(
                'info',
                `serving ${include?.length ?? Object.keys(exampleCatalog).length} tools on stdio as ${context.principal} (tenant ${context.tenant}), Temporal at ${session.endpoint.address}, task queue ${session.endpoint.taskQueue}`,
              ),
            // The client closing stdin ends the server, once the answers in progress are out.
            running: ({ server }) => server.done,
            stop: async ({ server, session }) => {
              await server.close();
              await session.close().catch(() => undefined);
            },
          });
        } catch (error) {
          const { exitCode, message } = describeCliError(error);
          logLine('error', message);
          process.exitCode = exitCode;
        }
      },
    );
}
