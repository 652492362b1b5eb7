import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, type Worker } from '@temporalio/worker';
import { inject } from 'vitest';
import type { CreateActivitiesOptions } from '../../activities/create-activities.ts';
import { exampleCatalog } from '../../examples/contracts.ts';
import { exampleToolSet } from '../../examples/tool-set.ts';
import {
  createExampleActivities,
  createExampleTools,
  type ExampleToolOptions,
  type ExampleTools,
} from '../../examples/tools.ts';
import {
  type ApprovalSigner,
  createApprovalSigner,
  loadOrCreateApprovalKeys,
} from '../../src/client/approval-signer.ts';
import { ToolgateClient } from '../../src/client/toolgate-client.ts';
import type { CallContext } from '../../src/contracts/call-record.ts';
import { bundleToolgateWorkflows, createWorker } from '../../src/worker/create-worker.ts';
import { installRuntimeLogging } from '../../src/worker/runtime-logging.ts';
import { type Tracing, tracingClientInterceptor } from '../../src/worker/tracing.ts';

export interface Harness {
  readonly taskQueue: string;
  readonly dataDir: string;
  readonly tools: ExampleTools;
  readonly temporal: Client;
  readonly client: ToolgateClient;
  readonly signer: ApprovalSigner;
  /** Starts a worker (one is started by createHarness). */
  startWorker(): Promise<void>;
  /** Stops the running worker and waits until it has shut down. */
  stopWorker(): Promise<void>;
  /** Parsed lines of one of the example tools' JSONL files. */
  readLines(file: string): Promise<Array<Record<string, unknown>>>;
  close(): Promise<void>;
}

export const agent: CallContext = { tenant: 'acme', principal: 'agent-7', principalKind: 'agent' };

export interface HarnessOptions {
  readonly policy?: CreateActivitiesOptions['policy'];
  readonly admissionGates?: CreateActivitiesOptions['admissionGates'];
  readonly config?: Record<string, unknown>;
  readonly startWorker?: boolean;
  /** Options for the example tools, e.g. http_fetch's allowed hosts or its breaker. */
  readonly toolOptions?: ExampleToolOptions;
  /** Traces from the worker and the client (the bundle is then made with the tracing module). */
  readonly tracing?: Tracing;
}

/** A worker on its own task queue and data dir, against the shared dev server of the test run. */
export async function createHarness(options: HarnessOptions = {}): Promise<Harness> {
  installRuntimeLogging();
  const address = inject('temporalAddress');
  const code = options.tracing
    ? (await bundleToolgateWorkflows(exampleToolSet.workflowsPath, { tracing: true })).code
    : inject('workflowBundle');
  const taskQueue = `test-${randomUUID()}`;
  const dataDir = await mkdtemp(join(tmpdir(), 'toolgate-data-'));
  const tools = createExampleTools(dataDir, options.toolOptions);
  await writeFile(
    tools.paths.configFile,
    JSON.stringify(options.config ?? { region: 'eu-west', retries: 3 }),
  );
  const keys = await loadOrCreateApprovalKeys(join(dataDir, 'keys'));
  const signer = createApprovalSigner(keys.privateKey);
  const connection = await Connection.connect({ address });
  const temporal = new Client({
    connection,
    ...(options.tracing ? { interceptors: { workflow: [tracingClientInterceptor(options.tracing)] } } : {}),
  });
  const client = new ToolgateClient({ client: temporal, taskQueue, catalog: exampleCatalog, signer });
  const activities = createExampleActivities(tools, {
    ...(options.policy ? { policy: options.policy } : {}),
    approvalPublicKeys: [keys.publicKey],
    ...(options.admissionGates ? { admissionGates: options.admissionGates } : {}),
  });
  let nativeConnection: NativeConnection | undefined;
  let worker: Worker | undefined;
  let running: Promise<void> | undefined;

  const harness: Harness = {
    taskQueue,
    dataDir,
    tools,
    temporal,
    client,
    signer,
    async startWorker() {
      nativeConnection ??= await NativeConnection.connect({ address });
      worker = await createWorker({
        connection: nativeConnection,
        taskQueue,
        activities,
        workflowBundle: { code },
        ...(options.tracing ? { tracing: options.tracing } : {}),
      });
      running = worker.run();
    },
    async stopWorker() {
      if (worker && worker.getState() === 'RUNNING') worker.shutdown();
      await running;
      worker = undefined;
    },
    async readLines(file) {
      try {
        const text = await readFile(file, 'utf8');
        return text
          .split('\n')
          .filter((line) => line.length > 0)
          .map((line) => JSON.parse(line) as Record<string, unknown>);
      } catch {
        return [];
      }
    },
    async close() {
      await harness.stopWorker();
      await nativeConnection?.close();
      await connection.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
  if (options.startWorker ?? true) await harness.startWorker();
  return harness;
}
