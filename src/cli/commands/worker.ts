import type { Command } from 'commander';
import type { ConnectionFlags } from '../endpoint.ts';
import {
  type ConfigFlags,
  defaultMetricsPort,
  metricsEndpointOf,
  withConnectionOptions,
} from '../options.ts';

export function addWorkerCommand(program: Command): void {
  withConnectionOptions(
    program
      .command('worker')
      .description(
        'Run a worker for the config’s tools against the cluster the connection settings name (or a running `toolgate dev`).',
      )
      .option(
        '--metrics-port <port>',
        'serve Prometheus metrics on this port at /metrics, on TOOLGATE_METRICS_HOST (default 127.0.0.1); 0 for none',
        String(defaultMetricsPort),
      ),
  )
    .addHelpText(
      'after',
      '\nExamples:\n  $ toolgate worker                     # joins the server of ./.toolgate/endpoint.json\n  $ TEMPORAL_ADDRESS=temporal:7233 toolgate worker --task-queue payments\n\nMore workers on the same task queue share the calls.\n',
    )
    .action(async (options: ConnectionFlags & ConfigFlags & { json?: boolean; metricsPort: string }) => {
      // Checked before anything starts.
      const metrics = metricsEndpointOf(options.metricsPort);
      const [{ loadCommandConfig }, { resolveEndpoint }, { workerToolSet }] = await Promise.all([
        import('../command-config.ts'),
        import('../endpoint.ts'),
        import('../worker-tool-set.ts'),
      ]);
      const config = await loadCommandConfig(options);
      const endpoint = await resolveEndpoint(options, config);
      const tools = await workerToolSet(config, endpoint.dataDir);
      const [{ startEmbedded }, { unreachable }, { runUntilStopped }] = await Promise.all([
        import('../../dev/embedded.ts'),
        import('../errors.ts'),
        import('../stop-signals.ts'),
      ]);
      await runUntilStopped({
        what: 'the worker',
        start: (signal) =>
          startEmbedded({
            tools,
            dataDir: endpoint.dataDir,
            taskQueue: endpoint.taskQueue,
            // An address from any source means: join it, start no server.
            cluster: {
              address: endpoint.address,
              namespace: endpoint.namespace,
              connectionOptions: endpoint.connectionOptions,
            },
            ...(metrics ? { metrics } : {}),
            signal,
          }).catch((error: unknown) => {
            throw unreachable(error, endpoint.address);
          }),
        started: (embedded) => {
          const summary = {
            address: embedded.address,
            namespace: embedded.namespace,
            taskQueue: endpoint.taskQueue,
            config: config.file,
            metricsUrl: embedded.metricsUrl ?? null,
          };
          process.stdout.write(
            options.json
              ? `${JSON.stringify(summary)}\n`
              : `toolgate worker polling ${summary.taskQueue} at ${summary.address} (namespace ${summary.namespace}), tools from ${summary.config}${summary.metricsUrl ? `, metrics at ${summary.metricsUrl}` : ''}. Ctrl-C stops it.\n`,
          );
        },
        running: (embedded) => embedded.running,
        stop: (embedded) => embedded.stop(),
      });
    });
}
