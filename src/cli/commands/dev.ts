import type { Command } from 'commander';
import type { Embedded } from '../../dev/embedded.ts';
import { type ConfigFlags, metricsEndpointOf, parsePort, withConfigOptions } from '../options.ts';

export function addDevCommand(program: Command): void {
  withConfigOptions(
    program
      .command('dev')
      .description(
        'Start the embedded default: a local Temporal dev server (SQLite) and a worker for the config’s tools.',
      ),
  )
    .option(
      '--data-dir <dir>',
      'where state lives: SQLite file, keys, the tools’ files (default: TOOLGATE_DATA_DIR, the config’s dataDir, .toolgate)',
    )
    .option('--port <port>', 'preferred gRPC port (falls back to a free one; 0 picks one)', '7233')
    .option('--ui-port <port>', 'preferred Web UI port (falls back to a free one; 0 picks one)', '8233')
    .option('--json', 'print the addresses as one JSON line')
    .option(
      '--metrics-port <port>',
      "serve the worker's Prometheus metrics on this port at /metrics, on TOOLGATE_METRICS_HOST (default 127.0.0.1); 0 (the default) for none",
      '0',
    )
    .addHelpText(
      'after',
      [
        '',
        'Examples:',
        '  $ toolgate dev                       # the config in this folder (toolgate.config.ts)',
        '  $ toolgate dev --example             # the bundled example tools',
        '  $ toolgate dev --data-dir /var/lib/toolgate --port 7300',
        '  $ TEMPORAL_ADDRESS=temporal.internal:7233 toolgate dev   # join a cluster, start no server',
        '',
        'It joins a cluster when one is named (TEMPORAL_ADDRESS, the config’s connection.address or a',
        'Temporal profile), and otherwise starts a dev server on <data-dir>/temporal.db. One dev server',
        'per data directory: a second `toolgate dev` on one in use is refused, and a server left running',
        'by a toolgate that was killed is stopped first. Ctrl-C stops the worker and the server, at any',
        'moment, start-up included.',
      ].join('\n'),
    )
    .action(
      async (
        options: ConfigFlags & {
          dataDir?: string;
          port: string;
          uiPort: string;
          json?: boolean;
          metricsPort: string;
        },
      ) => {
        // Checked before anything starts or is created.
        // 0 asks for any free port, as the tests and scripts that run several servers do.
        const grpcPort = parsePort(options.port, '--port', { allowZero: true });
        const uiPort = parsePort(options.uiPort, '--ui-port', { allowZero: true });
        const metrics = metricsEndpointOf(options.metricsPort);
        const [{ loadCommandConfig }, { resolveConnection, resolveDataDir }, { workerToolSet }] =
          await Promise.all([
            import('../command-config.ts'),
            import('../../client/connection-settings.ts'),
            import('../worker-tool-set.ts'),
          ]);
        const config = await loadCommandConfig(options);
        const dataDir = resolveDataDir(options.dataDir, process.env, config.dataDir);
        // No endpoint file here: this command is the one that writes it.
        const connection = resolveConnection({ env: process.env, config });
        const tools = await workerToolSet(config, dataDir);
        const [
          { startEmbedded },
          { removeEndpointFile, writeEndpointFile },
          { unreachable },
          { runUntilStopped },
        ] = await Promise.all([
          import('../../dev/embedded.ts'),
          import('../endpoint.ts'),
          import('../errors.ts'),
          import('../stop-signals.ts'),
        ]);
        const cluster = connection.address
          ? {
              address: connection.address,
              namespace: connection.namespace,
              connectionOptions: connection.connectionOptions,
            }
          : undefined;
        return runUntilStopped({
          what: 'the worker and the server',
          start: (signal) =>
            startEmbedded({
              tools,
              dataDir,
              taskQueue: connection.taskQueue,
              ...(cluster ? { cluster } : {}),
              grpcPort,
              uiPort,
              ...(metrics ? { metrics } : {}),
              signal,
            }).catch((error: unknown) => {
              throw cluster ? unreachable(error, cluster.address) : error;
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
            announceDev(embedded, config.file, options.json === true);
          },
          running: (embedded) => embedded.running,
          stop: async (embedded) => {
            await removeEndpointFile(embedded.dataDir);
            await embedded.stop();
          },
        });
      },
    );
}

/** What `toolgate dev` prints once it runs: the addresses, as text or as one JSON line. */
function announceDev(embedded: Embedded, configFile: string, json: boolean): void {
  const summary = {
    address: embedded.address,
    namespace: embedded.namespace,
    uiUrl: embedded.uiUrl ?? null,
    dbFile: embedded.dbFile ?? null,
    taskQueue: embedded.client.taskQueue,
    dataDir: embedded.dataDir,
    config: configFile,
    ...(embedded.metricsUrl ? { metricsUrl: embedded.metricsUrl } : {}),
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
      `  Config:                ${summary.config}`,
      ...(summary.metricsUrl ? [`  Metrics:               ${summary.metricsUrl}`] : []),
      '  Press Ctrl-C to stop.',
      '',
    ].join('\n'),
  );
}
