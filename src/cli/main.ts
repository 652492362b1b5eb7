import { Command } from 'commander';
import { startEmbedded } from '../embedded.ts';

/**
 * The toolgate command line. `dev` is the embedded default that `npm start` runs.
 */
export function buildProgram(): Command {
  const program = new Command('toolgate')
    .description('A durable, gated executor for the tool calls language models ask for, on Temporal.')
    .showHelpAfterError('(run with --help for usage)');

  program
    .command('dev')
    .description('Start the embedded default: a local Temporal dev server (SQLite) and a toolgate worker.')
    .option('--data-dir <dir>', 'where state lives (SQLite file, keys, example data)', '.toolgate')
    .option('--port <port>', 'preferred gRPC port (falls back to a free one)', '7233')
    .option('--ui-port <port>', 'preferred Web UI port (falls back to a free one)', '8233')
    .option('--json', 'print the addresses as one JSON line')
    .addHelpText(
      'after',
      '\nExamples:\n  $ toolgate dev\n  $ toolgate dev --data-dir /var/lib/toolgate --port 7300\n  $ TEMPORAL_ADDRESS=temporal.internal:7233 toolgate dev   # join a cluster, start no server\n',
    )
    .action(async (options: { dataDir: string; port: string; uiPort: string; json?: boolean }) => {
      const embedded = await startEmbedded({
        dataDir: options.dataDir,
        grpcPort: Number(options.port),
        uiPort: Number(options.uiPort),
      });
      const summary = {
        address: embedded.address,
        namespace: embedded.namespace,
        uiUrl: embedded.uiUrl ?? null,
        dbFile: embedded.dbFile ?? null,
        taskQueue: embedded.client.taskQueue,
        dataDir: embedded.dataDir,
      };
      if (options.json) {
        process.stdout.write(`${JSON.stringify(summary)}\n`);
      } else {
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
      await waitForStopSignal(embedded.stop, embedded.running);
    });

  return program;
}

/** Stops cleanly on the first Ctrl-C or SIGTERM; a second one forces the exit. */
export async function waitForStopSignal(stop: () => Promise<void>, running: Promise<void>): Promise<void> {
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) {
      process.stderr.write(`Second ${signal}: exiting now.\n`);
      process.exit(130);
    }
    stopping = true;
    process.stderr.write(`\n${signal} received: stopping the worker and the server…\n`);
    void stop().then(() => {
      process.stderr.write('Stopped.\n');
      process.exit(0);
    });
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  await running;
  if (!stopping) await stop();
}

/** Parses argv and runs the command; exits non-zero with a one-line message on failure. */
export async function runCli(argv: readonly string[] = process.argv): Promise<void> {
  try {
    await buildProgram().parseAsync([...argv]);
  } catch (error) {
    process.stderr.write(`toolgate: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  }
}
