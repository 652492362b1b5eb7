import type { Command } from 'commander';
import { type Embedded, startEmbedded } from '../../dev/embedded.ts';
import { removeEndpointFile, resolveDataDir, writeEndpointFile } from '../endpoint.ts';
import { unreachable } from '../errors.ts';
import { loadCliToolSet } from '../example-loader.ts';
import { parsePort } from '../options.ts';
import { runUntilStopped } from '../stop-signals.ts';

export function addDevCommand(program: Command): void {
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
        start: async (signal) =>
          startEmbedded({
            tools: await loadCliToolSet(),
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
