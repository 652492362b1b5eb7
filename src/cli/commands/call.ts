import { readFile } from 'node:fs/promises';
import { type Command, Option } from 'commander';
import { ToolgateUsageError } from '../../client/errors.ts';
import type { CallRequest, StartedCall, ToolgateClient } from '../../client/toolgate-client.ts';
import type { CallContext, PrincipalKind } from '../../contracts/call-record.ts';
import {
  callContextOf,
  checkKeyFlag,
  currentUser,
  gateProtocolOption,
  helpExamples,
  withConnectionOptions,
} from '../options.ts';
import { describeRecord, ExitCode, exitCodeForRecord, printLines } from '../output.ts';
import { type CommonFlags, cliWait, printJsonOutcome, recordError, runWithSession } from '../run-command.ts';

function parseInput(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new ToolgateUsageError(`--input is not valid JSON. Example: --input '{"name":"region"}'`);
  }
}

/** Why a file could not be read, in words, for the errors people meet most. */
const readFailureReasons = new Map([
  ['ENOENT', 'it does not exist'],
  ['EACCES', 'permission denied'],
  ['EPERM', 'permission denied'],
  ['EISDIR', 'it is a directory'],
]);

function readFailureReason(error: unknown): string {
  const known = readFailureReasons.get((error as NodeJS.ErrnoException).code ?? '');
  return known ?? (error instanceof Error ? error.message : String(error));
}

/** The text of `--input-file`, from stdin for `-`; `source` names it in the error. */
async function readInputText(
  inputFile: string,
  source: string,
  readStdin: () => Promise<string>,
): Promise<string> {
  try {
    return inputFile === '-' ? await readStdin() : await readFile(inputFile, 'utf8');
  } catch (error) {
    throw new ToolgateUsageError(`--input-file: cannot read ${source}: ${readFailureReason(error)}.`);
  }
}

/** Unlike {@link parseInput}, names the file and passes on the parser's own complaint. */
function parseInputText(text: string, source: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    const detail = error instanceof Error ? error.message : String(error);
    throw new ToolgateUsageError(
      `--input-file: ${source} is not valid JSON (${detail}). It must hold the arguments as one JSON value, e.g. {"name":"region"}.`,
    );
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
  if (flags.inputFile === '')
    throw new ToolgateUsageError('--input-file is empty: give a path, or - for stdin.');
  const source = flags.inputFile === '-' ? 'stdin' : flags.inputFile;
  return parseInputText(await readInputText(flags.inputFile, source, readStdin), source);
}

/** Starts the call and, unless `--no-wait` or its outcome is already known, waits for its record. */
async function runCall(
  client: ToolgateClient,
  request: CallRequest,
  context: CallContext,
  flags: { readonly wait: boolean; readonly json?: boolean },
): Promise<ExitCode> {
  const started = await client.start(request, context);
  if (!flags.wait || started.record) return reportStarted(started, flags.json);
  const record = await client.result(started.callId, started.runId, cliWait);
  const exitCode = exitCodeForRecord(record);
  if (flags.json) printJsonOutcome(record, exitCode, () => recordError(record));
  else printLines(describeRecord(record));
  return exitCode;
}

/** What `start` said: the record when the outcome is already known, the call ID otherwise. */
function reportStarted(started: StartedCall, json: boolean | undefined): ExitCode {
  // A duplicate of an undone reversible call comes with its undo, as `get` shows it.
  const record = started.record;
  const exitCode = record ? exitCodeForRecord(record) : ExitCode.ok;
  if (json) printJsonOutcome(record ? { ...started, record } : started, exitCode, () => recordError(record!));
  else if (record) printLines(describeRecord(record));
  else printLines([`${started.disposition}: ${started.callId}`]);
  return exitCode;
}

async function readAllStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(Buffer.from(chunk as Uint8Array));
  return Buffer.concat(chunks).toString('utf8');
}

export function addCallCommand(program: Command): void {
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
      helpExamples([
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
          async ({ client }) =>
            runCall(
              client,
              { tool, input, ...(flags.key !== undefined ? { key: flags.key } : {}) },
              context,
              flags,
            ),
        );
      },
    );
}
