import type { Command } from 'commander';
import { startEmbedded } from '../../dev/embedded.ts';
import { type ConnectionFlags, resolveEndpoint } from '../endpoint.ts';
import { unreachable } from '../errors.ts';
import { loadCliToolSet } from '../example-loader.ts';
import { withConnectionOptions } from '../options.ts';
import { runUntilStopped } from '../stop-signals.ts';

export function addWorkerCommand(program: Command): void {
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
        start: async (signal) =>
          startEmbedded({
            tools: await loadCliToolSet(),
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
}
