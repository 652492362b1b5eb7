import { Command, CommanderError } from 'commander';
import { ToolgateUsageError } from '../client/toolgate-client.ts';
import { type Embedded, startEmbedded } from '../embedded.ts';
import { loadOrCreateApproverDirectory } from '../inbox/approver-tokens.ts';
import { startInbox } from '../inbox/inbox-app.ts';
import { addClientCommands, describeCliError, withConnectionOptions } from './commands.ts';
import {
  type ConnectionFlags,
  EndpointUnavailableError,
  openSession,
  removeEndpointFile,
  resolveDataDir,
  resolveEndpoint,
  writeEndpointFile,
} from './endpoint.ts';
import { ExitCode, printJson } from './output.ts';
import { runUntilStopped } from './stop-signals.ts';

/**
 * A port flag as a number, or a usage error naming the valid range. `allowZero`: 0 asks the system
 * for a free port.
 */
export function parsePort(value: string, flag: string, options: { allowZero?: boolean } = {}): number {
  const lowest = options.allowZero ? 0 : 1;
  const port = /^\d{1,5}$/.test(value.trim()) ? Number(value.trim()) : Number.NaN;
  if (!Number.isInteger(port) || port < lowest || port > 65535) {
    throw new ToolgateUsageError(
      `${flag} must be a whole number from ${lowest} to 65535${options.allowZero ? ' (0 picks a free port)' : ''}, not ${JSON.stringify(value.slice(0, 40))}.`,
    );
  }
  return port;
}

/**
 * A connection to a cluster that does not answer fails inside gRPC with a bare message ("Failed to
 * connect before the deadline"); it is an unreachable cluster (exit 6), said with its address.
 */
function unreachable(error: unknown, address: string): unknown {
  const message = error instanceof Error ? error.message : String(error);
  const code = (error as { code?: unknown } | null)?.code;
  if (
    error instanceof Error &&
    (/failed to connect|connection refused|ECONNREFUSED|UNAVAILABLE/i.test(message) ||
      error.name === 'TransportError' ||
      code === 14)
  ) {
    return new EndpointUnavailableError(
      `Cannot reach Temporal at ${address}: ${message}. Is the cluster running, and is the address right?`,
      { cause: error },
    );
  }
  return error;
}

/**
 * The toolgate command line. `dev` is the embedded default that `npm start` runs; the other
 * commands find it through the endpoint file it writes into the data directory.
 */
export function buildProgram(): Command {
  const program = new Command('toolgate')
    .description('A durable, gated executor for the tool calls language models ask for, on Temporal.')
    // Usage errors are thrown to runCli rather than exiting, so that with --json they are JSON too.
    // Set before any command is added: subcommands inherit it.
    .exitOverride()
    .showHelpAfterError('(run with --help for usage)')
    .addHelpText(
      'after',
      [
        '',
        'Client commands find the cluster through --address, then TEMPORAL_ADDRESS, then the',
        '<data-dir>/endpoint.json a running `toolgate dev` writes. Every command takes --json.',
        '',
        'Exit codes: 0 ok · 1 usage or internal error · 2 call denied · 3 call failed, timed out or',
        'cancelled · 4 refused (decision, replay, undo; a cancel that stopped nothing) · 5 no such call',
        '· 6 server or worker unreachable · 130 dev, worker or inbox stopped by a signal during start-up,',
        'or forced by a second one (one Ctrl-C stops them gracefully, exit 0)',
        '',
      ].join('\n'),
    );

  program
    .command('dev')
    .description('Start the embedded default: a local Temporal dev server (SQLite) and a toolgate worker.')
    .option('--data-dir <dir>', 'where state lives (SQLite file, keys, example data)', '.toolgate')
    .option('--port <port>', 'preferred gRPC port (falls back to a free one; 0 picks one)', '7233')
    .option('--ui-port <port>', 'preferred Web UI port (falls back to a free one; 0 picks one)', '8233')
    .option('--json', 'print the addresses as one JSON line')
    .addHelpText(
      'after',
      [
        '',
        'Examples:',
        '  $ toolgate dev',
        '  $ toolgate dev --data-dir /var/lib/toolgate --port 7300',
        '  $ TEMPORAL_ADDRESS=temporal.internal:7233 toolgate dev   # join a cluster, start no server',
        '',
        'One dev server per data directory: a second `toolgate dev` on one in use is refused, and a',
        'server left running by a toolgate that was killed is stopped first. Ctrl-C stops the worker',
        'and the server, at any moment, start-up included.',
      ].join('\n'),
    )
    .action((options: { dataDir: string; port: string; uiPort: string; json?: boolean }) => {
      // Checked before anything starts or is created.
      // 0 asks for any free port, as the tests and scripts that run several servers do.
      const grpcPort = parsePort(options.port, '--port', { allowZero: true });
      const uiPort = parsePort(options.uiPort, '--ui-port', { allowZero: true });
      const joining = process.env['TEMPORAL_ADDRESS'];
      return runUntilStopped({
        what: 'the worker and the server',
        start: (signal) =>
          startEmbedded({
            dataDir: resolveDataDir(options.dataDir),
            grpcPort,
            uiPort,
            signal,
          }).catch((error: unknown) => {
            throw joining ? unreachable(error, joining) : error;
          }),
        started: async (embedded) => {
          // Other commands (call, list, approve, inbox…) read this to find the server without
          // flags; it is written before the summary, so whoever waits for the summary finds it.
          await writeEndpointFile(embedded.dataDir, {
            address: embedded.address,
            namespace: embedded.namespace,
            taskQueue: embedded.client.taskQueue,
            uiUrl: embedded.uiUrl ?? null,
            pid: process.pid,
            startedAt: new Date().toISOString(),
          });
          announceDev(embedded, options.json === true);
        },
        running: (embedded) => embedded.running,
        stop: async (embedded) => {
          await removeEndpointFile(embedded.dataDir);
          await embedded.stop();
        },
      });
    });

  withConnectionOptions(
    program
      .command('worker')
      .description(
        'Run a toolgate worker (example tools) against the cluster `toolgate dev` or TEMPORAL_ADDRESS names.',
      ),
  )
    .addHelpText(
      'after',
      '\nExamples:\n  $ toolgate worker                     # joins the server of ./.toolgate/endpoint.json\n  $ TEMPORAL_ADDRESS=temporal:7233 toolgate worker --task-queue toolgate\n\nMore workers on the same task queue share the calls.\n',
    )
    .action(async (options: ConnectionFlags & { json?: boolean }) => {
      const endpoint = await resolveEndpoint(options);
      await runUntilStopped({
        what: 'the worker',
        start: (signal) =>
          startEmbedded({
            dataDir: endpoint.dataDir,
            taskQueue: endpoint.taskQueue,
            // An explicit address means: join it, start no server.
            env: {
              ...process.env,
              TEMPORAL_ADDRESS: endpoint.address,
              TEMPORAL_NAMESPACE: endpoint.namespace,
            },
            signal,
          }).catch((error: unknown) => {
            throw unreachable(error, endpoint.address);
          }),
        started: (embedded) => {
          const summary = {
            address: embedded.address,
            namespace: embedded.namespace,
            taskQueue: endpoint.taskQueue,
          };
          process.stdout.write(
            options.json
              ? `${JSON.stringify(summary)}\n`
              : `toolgate worker polling ${summary.taskQueue} at ${summary.address} (namespace ${summary.namespace}). Ctrl-C stops it.\n`,
          );
        },
        running: (embedded) => embedded.running,
        stop: (embedded) => embedded.stop(),
      });
    });

  addClientCommands(program);

  withConnectionOptions(
    program
      .command('inbox')
      .description('Serve the approvals inbox web page and its JSON API (127.0.0.1 by default).')
      .option(
        '--host <host>',
        'interface to bind; keep 127.0.0.1 unless a proxy with TLS is in front',
        '127.0.0.1',
      )
      .option(
        '--port <port>',
        'port, 0 to 65535 (0 picks a free one); checked before anything is created',
        '8787',
      ),
  )
    .addHelpText(
      'after',
      '\nExamples:\n  $ toolgate inbox\n  $ toolgate inbox --port 9000 --data-dir /var/lib/toolgate\n\nApprovers sign in with a token from <data-dir>/approvers.json; on first run one is created for alice and printed once.\n',
    )
    .action((options: ConnectionFlags & { host: string; port: string; json?: boolean }) => {
      // Checked before anything connects or is created: a failed start must not leave behind an
      // approvers file whose one-time token nobody saw.
      const port = parsePort(options.port, '--port', { allowZero: true });
      return runUntilStopped({
        what: 'the inbox',
        start: async (signal) => {
          // The session's client carries the approval signer: the inbox signs as the signed-in approver.
          const session = await openSession(options, { signer: true });
          try {
            signal.throwIfAborted();
            const { directory, created, discard } = await loadOrCreateApproverDirectory(
              session.endpoint.dataDir,
            );
            let inbox: Awaited<ReturnType<typeof startInbox>>;
            try {
              inbox = await startInbox({
                operations: session.operations,
                approvers: directory,
                host: options.host,
                port,
              });
            } catch (error) {
              // The token of a file this start created was never shown: remove the file, so the
              // next start creates one and shows its token.
              await discard?.();
              const message = error instanceof Error ? error.message : String(error);
              throw new Error(
                `The inbox cannot listen on ${options.host}:${port}: ${message}.${discard ? ` ${directory.file}, which this start had created, was removed; the next start creates it again and shows its token.` : ''}`,
                { cause: error },
              );
            }
            return { session, inbox, directory, created };
          } catch (error) {
            await session.close();
            throw error;
          }
        },
        started: ({ inbox, directory, created }) => {
          if (options.json) {
            process.stdout.write(
              `${JSON.stringify({ url: inbox.url, approversFile: directory.file, ...(created ? { created } : {}) })}\n`,
            );
            return;
          }
          process.stdout.write(
            [
              `Approvals inbox: ${inbox.url}`,
              `  Approver tokens: ${directory.file}`,
              ...(created
                ? [`  Created an approver for ${created.name}; sign in with token ${created.token}`]
                : []),
              '  Press Ctrl-C to stop.',
              '',
            ].join('\n'),
          );
        },
        // The inbox serves until it is stopped.
        running: () => new Promise<void>(() => undefined),
        stop: async ({ inbox, session }) => {
          await inbox.close();
          await session.close();
        },
      });
    });

  return program;
}

/** What `toolgate dev` prints once it runs: the addresses, as text or as one JSON line. */
function announceDev(embedded: Embedded, json: boolean): void {
  const summary = {
    address: embedded.address,
    namespace: embedded.namespace,
    uiUrl: embedded.uiUrl ?? null,
    dbFile: embedded.dbFile ?? null,
    taskQueue: embedded.client.taskQueue,
    dataDir: embedded.dataDir,
  };
  if (json) {
    process.stdout.write(`${JSON.stringify(summary)}\n`);
    return;
  }
  process.stdout.write(
    [
      'toolgate is running.',
      `  Temporal gRPC address: ${summary.address} (namespace ${summary.namespace})`,
      `  Temporal Web UI:       ${summary.uiUrl ?? '(not started: using an existing cluster)'}`,
      `  Database file:         ${summary.dbFile ?? '(the cluster keeps its own state)'}`,
      `  Task queue:            ${summary.taskQueue}`,
      '  Press Ctrl-C to stop.',
      '',
    ].join('\n'),
  );
}

/** Parses argv and runs the command; exits non-zero with a one-line message on failure. */
export async function runCli(argv: readonly string[] = process.argv): Promise<void> {
  try {
    await buildProgram().parseAsync([...argv]);
  } catch (error) {
    if (error instanceof CommanderError) {
      // Help and version end here too, with their own exit code (0).
      if (error.exitCode === 0) return;
      // Commander has printed the message and the hint on stderr; a script reading --json output
      // gets the same as a JSON document on stdout, as for every other error. Not for `mcp`: its
      // stdout carries protocol messages only, and its --json shapes the log on stderr.
      if (argv.includes('--json')) {
        const text = error.message.replace(/^error: /, '');
        if (argv[2] === 'mcp') process.stderr.write(`${JSON.stringify({ level: 'error', message: text })}\n`);
        else printJson({ ok: false, exitCode: ExitCode.error, error: text });
      }
      process.exitCode = ExitCode.error;
      return;
    }
    // dev, worker and inbox end here when they fail: with --json the error is a JSON document on
    // stdout too, and the exit code follows the same mapping as every other command's.
    const { exitCode, message } = describeCliError(error);
    if (argv.includes('--json')) printJson({ ok: false, exitCode, error: message });
    process.stderr.write(`toolgate: ${message}\n`);
    process.exitCode = exitCode;
  }
}
