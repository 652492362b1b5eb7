/**
 * What both phases of a runner process share: its configuration, the workers and clients it runs,
 * and the operation each variant times.
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@temporalio/client';
import { bundleWorkflowCode, NativeConnection, Worker } from '@temporalio/worker';
import { createActivities } from '../activities/create-activities.ts';
import { createApprovalSigner, loadOrCreateApprovalKeys } from '../src/client/approval-signer.ts';
import { ToolgateClient } from '../src/client/toolgate-client.ts';
import type { CallContext } from '../src/contracts/call-record.ts';
import { bundleToolgateWorkflows, createWorker } from '../src/worker/create-worker.ts';
import { installRuntimeLogging } from '../src/worker/runtime-logging.ts';
import type { BareActivities } from './bare-workflows.ts';
import { type BenchReadInput, benchCatalog } from './bench-catalog.ts';
import {
  benchAllowlist,
  benchToolBody,
  callInProcess,
  createBenchTools,
  type ExecutionCounter,
} from './bench-tools.ts';
import type { Operation, OperationOutcome } from './measure.ts';
import type { LatencyPhaseResult, RunShape, VariantName, WaitingPhaseResult } from './result-types.ts';

/** Everything a runner process needs, passed by main.ts in the BENCH_RUNNER_CONFIG variable. */
export interface RunnerConfig extends RunShape {
  readonly mode: 'latency' | 'waiting';
  readonly address: string;
  readonly serverPid: number;
  readonly dataDir: string;
  readonly variants: readonly VariantName[];
  readonly warmupOperations: number;
  readonly workerTuning: Record<string, unknown>;
  readonly waiting: {
    readonly levels: readonly number[];
    readonly cacheSize: number;
    /** Approval-tier calls started and approved before any call waits (`--waiting-prefill`). */
    readonly prefill: number;
    readonly resumeSamples: number;
    readonly callOperations: number;
    readonly callConcurrency: number;
    readonly startConcurrency: number;
    readonly approveConcurrency: number;
  };
}

export type RunnerMessage =
  | { readonly type: 'progress'; readonly line: string }
  | { readonly type: 'latency'; readonly result: LatencyPhaseResult }
  | { readonly type: 'waiting'; readonly result: WaitingPhaseResult }
  | { readonly type: 'failed'; readonly error: string };

export const agent: CallContext = { tenant: 'bench', principal: 'bench-agent', principalKind: 'agent' };
const workflowsPath = fileURLToPath(new URL('./workflows.ts', import.meta.url));
const bareWorkflowsPath = fileURLToPath(new URL('./bare-workflows.ts', import.meta.url));

export function send(message: RunnerMessage): Promise<void> {
  return new Promise((resolve) => {
    if (!process.send) {
      process.stdout.write(`${JSON.stringify(message)}\n`);
      resolve();
      return;
    }
    process.send(message, () => resolve());
  });
}

export function progress(line: string): void {
  void send({ type: 'progress', line });
}

export interface Environment {
  readonly connection: NativeConnection;
  readonly temporal: Client;
  /** toolgate's task queue, served by toolgate's worker. */
  readonly taskQueue: string;
  /** B's task queue, served by a plain Temporal worker with only B's workflow in its bundle. */
  readonly bareTaskQueue: string;
  readonly workers: ReadonlyArray<{ readonly worker: Worker; readonly running: Promise<void> }>;
  readonly toolgate: ToolgateClient;
  readonly eagerToolgate: ToolgateClient;
  readonly signer: ReturnType<typeof createApprovalSigner>;
  readonly counter: ExecutionCounter;
}

const quietBundler = {
  trace: () => undefined,
  debug: () => undefined,
  info: () => undefined,
  warn: (message: string) => progress(`bundler: ${message}`),
  error: (message: string) => progress(`bundler: ${message}`),
  log: () => undefined,
};

/** toolgate's worker and B's, on one connection, with the clients every variant calls through. */
export async function startEnvironment(
  config: RunnerConfig,
  tuning: Record<string, unknown>,
): Promise<Environment> {
  installRuntimeLogging();
  const connection = await NativeConnection.connect({ address: config.address });
  const temporal = new Client({ connection });
  const keys = await loadOrCreateApprovalKeys(join(config.dataDir, 'keys'));
  const signer = createApprovalSigner(keys.privateKey);
  const counter: ExecutionCounter = { count: 0 };
  const taskQueue = `bench-${randomUUID()}`;
  const worker = await createWorker({
    connection,
    taskQueue,
    activities: createActivities({
      tools: createBenchTools(counter),
      policy: benchAllowlist,
      approvalPublicKeys: [keys.publicKey],
    }),
    workflowBundle: await bundleToolgateWorkflows(workflowsPath),
    tuning: tuning as never,
  });
  // Same connection, slots and cache as toolgate's worker; nothing else of toolgate's.
  const bareTaskQueue = `bench-bare-${randomUUID()}`;
  const bareBundle = await bundleWorkflowCode({ workflowsPath: bareWorkflowsPath, logger: quietBundler });
  const bareActivities: BareActivities = { benchTool: (input) => benchToolBody(input, counter) };
  const bareWorker = await Worker.create({
    connection,
    taskQueue: bareTaskQueue,
    workflowBundle: { code: bareBundle.code },
    activities: bareActivities,
    ...tuning,
  });
  const common = { client: temporal, taskQueue, catalog: benchCatalog, signer };
  return {
    connection,
    temporal,
    taskQueue,
    bareTaskQueue,
    workers: [worker, bareWorker].map((each) => ({ worker: each, running: each.run() })),
    toolgate: new ToolgateClient(common),
    eagerToolgate: new ToolgateClient({ ...common, eagerStart: true }),
    signer,
    counter,
  };
}

export async function stopEnvironment(environment: Environment): Promise<void> {
  for (const { worker } of environment.workers) worker.shutdown();
  await Promise.all(environment.workers.map(({ running }) => running));
  await environment.connection.close();
}

export const readInput = (sequence: number): BenchReadInput => ({ item: `item-${sequence % 1000}` });

export function expectSucceeded(record: { status: string; reason?: string }, variant: string): void {
  if (record.status !== 'succeeded') {
    throw new Error(`${variant} call ended ${record.status} (${record.reason ?? 'no reason'})`);
  }
}

/** The operation each variant times. `duplicateKey` is the key of D's closed call. */
export function variantOperations(
  environment: Environment,
  duplicateKey: string,
): Record<VariantName, Operation> {
  const { temporal, toolgate, eagerToolgate, counter } = environment;
  /** B's call: the bare workflow with one regular activity, a random ID and nothing else. */
  const bareCall = async (prefix: string, sequence: number): Promise<OperationOutcome> => {
    const workflowId = `${prefix}-${randomUUID()}`;
    await temporal.workflow.execute('bareCall', {
      workflowId,
      taskQueue: environment.bareTaskQueue,
      args: [readInput(sequence)],
    });
    return { workflowId };
  };
  return {
    A: async (sequence) => {
      await callInProcess('bench_read', readInput(sequence), agent, counter);
      return {};
    },
    B: async (sequence) => bareCall('bare', sequence),
    // The A/A control: B's call exactly, under another name (the prefix has the same length).
    'B-twin': async (sequence) => bareCall('twin', sequence),
    C: async (sequence) => {
      const started = await toolgate.start({ tool: 'bench_read', input: readInput(sequence) }, agent);
      expectSucceeded(await toolgate.result(started.callId, started.runId), 'C');
      return { workflowId: started.callId };
    },
    'C-fast': async (sequence) => {
      const started = await eagerToolgate.start(
        { tool: 'bench_read_fast', input: readInput(sequence) },
        agent,
      );
      expectSucceeded(await eagerToolgate.result(started.callId, started.runId), 'C-fast');
      return { workflowId: started.callId, eagerlyStarted: started.eagerlyStarted === true };
    },
    D: async () => {
      const started = await toolgate.start(
        { tool: 'bench_read', input: readInput(0), key: duplicateKey },
        agent,
      );
      if (started.disposition !== 'existing' || !started.record) {
        throw new Error(`D expected the stored record, got disposition ${started.disposition}`);
      }
      expectSucceeded(started.record, 'D');
      return { workflowId: started.callId };
    },
  };
}

/** Runs `task` over `items` with at most `concurrency` in flight. */
export async function forEachLimited<T>(
  items: readonly T[],
  concurrency: number,
  task: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const item = items[next++] as T;
      await task(item);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, lane));
}

export function round(value: number, digits = 1): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}
