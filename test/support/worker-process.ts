/**
 * A toolgate worker in its own process, so fault tests can SIGKILL it for real. Configured by one
 * JSON argument; prints READY once it polls. Run with `node --import tsx test/support/worker-process.ts '<json>'`.
 */
import { readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { NativeConnection } from '@temporalio/worker';
import { createLoadGate, type LoadGateOptions } from '../../activities/safety/admission-gates.ts';
import type { SafeUrlOptions } from '../../activities/safety/safe-url.ts';
import type { ToolImplementation } from '../../activities/tool-implementation.ts';
import { createExampleActivities, createExampleTools } from '../../examples/tools.ts';
import { loadOrCreateApprovalKeys } from '../../src/client/approval-signer.ts';
import { type CreateWorkerOptions, createWorker } from '../../src/worker/create-worker.ts';
import { installRuntimeLogging } from '../../src/worker/runtime-logging.ts';

export interface WorkerProcessConfig {
  readonly address: string;
  readonly taskQueue: string;
  readonly dataDir: string;
  readonly keysDir: string;
  /** A file holding the prebuilt workflow bundle, so the process does not bundle again. */
  readonly bundleFile: string;
  /** Tools that, after their side effect, hang this long before reporting: the window to kill in. */
  readonly stallAfterMs?: Readonly<Record<string, number>>;
  readonly identity?: string;
  /** Quotas and breakers, kept in the cluster (createLoadGate); default the example's gates. */
  readonly admission?: LoadGateOptions;
  /** Passed to the worker: e.g. the sticky queue's timeout. */
  readonly tuning?: CreateWorkerOptions['tuning'];
  /** Settings for http_fetch, e.g. loopback allowed for a test's downstream. */
  readonly http?: SafeUrlOptions;
  /** The runtime's log level (default TOOLGATE_LOG_LEVEL, which the test run sets to OFF). */
  readonly logLevel?: 'TRACE' | 'DEBUG' | 'INFO' | 'WARN' | 'ERROR';
  /** Serve Prometheus metrics on 127.0.0.1 at this port. */
  readonly metricsPort?: number;
}

async function main(): Promise<void> {
  const config = JSON.parse(process.argv[2] ?? '{}') as WorkerProcessConfig;
  const telemetry = installRuntimeLogging({
    ...(config.logLevel ? { level: config.logLevel } : {}),
    ...(config.metricsPort ? { metrics: { host: '127.0.0.1', port: config.metricsPort } } : {}),
  });
  if (telemetry.metricsProblem) throw new Error(telemetry.metricsProblem);
  const tools = createExampleTools(config.dataDir, config.http ? { http: config.http } : {});
  const stall = config.stallAfterMs ?? {};
  const wrapped: ToolImplementation[] = tools.tools.map((tool) => {
    const delayMs = Object.hasOwn(stall, tool.contract.name) ? stall[tool.contract.name]! : 0;
    if (delayMs === 0) return tool;
    return {
      contract: tool.contract,
      async execute(execution) {
        const output = await tool.execute(execution);
        // The side effect is done; the worker now "hangs" before it can report the result.
        await sleep(delayMs);
        return output;
      },
    };
  });
  const keys = await loadOrCreateApprovalKeys(config.keysDir);
  const connection = await NativeConnection.connect({ address: config.address });
  const worker = await createWorker({
    connection,
    taskQueue: config.taskQueue,
    activities: createExampleActivities(
      { tools: wrapped, compensations: tools.compensations },
      {
        approvalPublicKeys: [keys.publicKey],
        ...(config.admission ? { admissionGates: [createLoadGate(config.admission)] } : {}),
      },
    ),
    workflowBundle: { code: await readFile(config.bundleFile, 'utf8') },
    ...(config.identity ? { identity: config.identity } : {}),
    ...(config.tuning ? { tuning: config.tuning } : {}),
  });
  const running = worker.run();
  process.stdout.write('READY\n');
  const stop = () => worker.shutdown();
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  await running;
  await connection.close();
}

main().catch((error: unknown) => {
  process.stderr.write(`worker process failed: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
