/**
 * The benchmark's worker process. main.ts forks it once per phase; it hosts the toolgate worker and
 * the load generator (eager start needs the client on the worker's own connection, in the same
 * process), measures, and sends its results back over IPC.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { Context } from '@temporalio/activity';
import { Client } from '@temporalio/client';
import { bundleWorkflowCode, NativeConnection, Worker } from '@temporalio/worker';
import { createActivities } from '../activities/create-activities.ts';
import {
  createApprovalSigner,
  decisionClaims,
  loadOrCreateApprovalKeys,
} from '../src/client/approval-signer.ts';
import { ToolgateClient } from '../src/client/toolgate-client.ts';
import type { RunToolRequest } from '../src/contracts/activity-types.ts';
import type { CallContext } from '../src/contracts/call-record.ts';
import { callFingerprint } from '../src/contracts/fingerprint.ts';
import { currentGatesProtocol, prepareCall, type ToolCallRequest } from '../src/contracts/prepare-call.ts';
import { bundleToolgateWorkflows, createWorker } from '../src/worker/create-worker.ts';
import { installRuntimeLogging } from '../src/worker/runtime-logging.ts';
import { decisionSignal } from '../workflows/messages.ts';
import { type BenchReadInput, benchCatalog } from './bench-catalog.ts';
import {
  benchAllowlist,
  benchToolBody,
  callInProcess,
  createBenchTools,
  type ExecutionCounter,
} from './bench-tools.ts';
import { type BlockOrder, blockRounds } from './block-order.ts';
import { type BusyWork, calibrateSpin, spin } from './busy-work.ts';
import {
  type CallObserver,
  cpuMilliseconds,
  type LatencySummary,
  newHistogram,
  type Operation,
  type OperationOutcome,
  type RunOutcome,
  residentMegabytes,
  runClosedLoop,
  runOpenLoop,
  summarize,
} from './measure.ts';
import { bundleFileName } from './profile-summary.ts';
import type {
  HistoryShape,
  LatencyCell,
  LatencyPhaseResult,
  VariantName,
  WaitingLevel,
  WaitingPhaseResult,
} from './result-types.ts';
import {
  type CallSegments,
  type CallTiming,
  callSegments,
  meanSegments,
  type SegmentCell,
} from './segments.ts';
import { listThreads, newNodeThreads, type ThreadCpu, threadCpuNow, threadGroups } from './thread-cpu.ts';

/** Everything a runner process needs, passed by main.ts in the BENCH_RUNNER_CONFIG variable. */
export interface RunnerConfig {
  readonly mode: 'latency' | 'waiting';
  readonly address: string;
  readonly serverPid: number;
  readonly dataDir: string;
  readonly variants: readonly VariantName[];
  readonly repetitions: number;
  readonly concurrencyLevels: readonly number[];
  /** Measured operations per block at each concurrency, keyed `c<N>`. */
  readonly operationsPerBlock: Readonly<Record<string, number>>;
  readonly warmupOperations: number;
  readonly openLoopRatePerSecond: number;
  readonly openLoopDurationMs: number;
  readonly duplicateHoldMs: number;
  readonly workerTuning: Record<string, unknown>;
  /**
   * Set with `--cpu-profile`: the folder the profiles go to. Each worker's workflow bundle is
   * written there too, under the name its frames carry (see `keepBundle`).
   */
  readonly bundleDir?: string;
  /** How the variants' blocks are ordered in each round (see `block-order.ts`). */
  readonly blockOrder: BlockOrder;
  /** The extra CPU work of the `B-idx+cpu` probe (see `busy-work.ts`). */
  readonly busyWork: BusyWork;
  readonly waiting: {
    readonly levels: readonly number[];
    readonly cacheSize: number;
    /** Approval-tier calls started and approved before any call waits (`--waiting-prefill`). */
    readonly prefill: number;
    /** Bare-Temporal variants measured beside C at each point (`--waiting-bare`). */
    readonly bare: readonly VariantName[];
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

const agent: CallContext = { tenant: 'bench', principal: 'bench-agent', principalKind: 'agent' };
const workflowsPath = fileURLToPath(new URL('./workflows.ts', import.meta.url));
const bareWorkflowsPath = fileURLToPath(new URL('./bare-workflows.ts', import.meta.url));

function send(message: RunnerMessage): Promise<void> {
  return new Promise((resolve) => {
    if (!process.send) {
      process.stdout.write(`${JSON.stringify(message)}\n`);
      resolve();
      return;
    }
    process.send(message, () => resolve());
  });
}

function progress(line: string): void {
  void send({ type: 'progress', line });
}

interface Environment {
  readonly connection: NativeConnection;
  readonly temporal: Client;
  readonly worker: Worker;
  readonly running: Promise<void>;
  readonly taskQueue: string;
  /** Variant B's own worker: a plain Temporal worker with only B's workflow in its bundle. */
  readonly bare?: { readonly worker: Worker; readonly running: Promise<void>; readonly taskQueue: string };
  readonly toolgate: ToolgateClient;
  readonly eagerToolgate: ToolgateClient;
  /** C's client pinned to gate protocol 2, for C-p2. */
  readonly protocol2Toolgate: ToolgateClient;
  readonly signer: ReturnType<typeof createApprovalSigner>;
  readonly counter: ExecutionCounter;
  /** Each worker's workflow threads, by thread ID (see `thread-cpu.ts`). */
  readonly workflowThreads: { readonly toolgate: number[]; readonly bare: number[] };
}

const quietBundler = {
  trace: () => undefined,
  debug: () => undefined,
  info: () => undefined,
  warn: (message: string) => progress(`bundler: ${message}`),
  error: (message: string) => progress(`bundler: ${message}`),
  log: () => undefined,
};

/**
 * Writes a workflow bundle under the file name the worker gives its script (the source map's
 * `file`, `workflow-bundle-<hash>.js`), which is how a profile's frames name it.
 */
async function keepBundle(folder: string, code: string): Promise<void> {
  const file = bundleFileName(code);
  await mkdir(folder, { recursive: true });
  await writeFile(join(folder, file), code);
}

async function startEnvironment(
  config: RunnerConfig,
  tuning: Record<string, unknown>,
  options: { bare: boolean },
): Promise<Environment> {
  installRuntimeLogging();
  const connection = await NativeConnection.connect({ address: config.address });
  const temporal = new Client({ connection });
  const keys = await loadOrCreateApprovalKeys(join(config.dataDir, 'keys'));
  const signer = createApprovalSigner(keys.privateKey);
  const counter: ExecutionCounter = { count: 0 };
  const toolgateActivities = createActivities({
    tools: createBenchTools(counter),
    policy: benchAllowlist,
    approvalPublicKeys: [keys.publicKey],
  });
  const taskQueue = `bench-${randomUUID()}`;
  const threadsBeforeToolgate = listThreads();
  // Bundled here rather than by Worker.create (the same bundler, the same options), so that a
  // profiled run can keep the code its workflow frames point into.
  const toolgateBundle = await bundleToolgateWorkflows(workflowsPath);
  if (config.bundleDir) await keepBundle(config.bundleDir, toolgateBundle.code);
  const worker = await createWorker({
    connection,
    taskQueue,
    activities: toolgateActivities,
    workflowBundle: toolgateBundle,
    tuning: tuning as never,
  });
  const running = worker.run();
  const workflowThreads = { toolgate: newNodeThreads(threadsBeforeToolgate), bare: [] as number[] };
  let bare: Environment['bare'];
  if (options.bare) {
    // Same connection, slots and cache as toolgate's worker; nothing else of toolgate's.
    const bareTaskQueue = `bench-bare-${randomUUID()}`;
    const bareBundle = await bundleWorkflowCode({ workflowsPath: bareWorkflowsPath, logger: quietBundler });
    if (config.bundleDir) await keepBundle(config.bundleDir, bareBundle.code);
    const threadsBeforeBare = listThreads();
    const bareWorker = await Worker.create({
      connection,
      taskQueue: bareTaskQueue,
      workflowBundle: { code: bareBundle.code },
      activities: {
        benchTool: (input: BenchReadInput) => benchToolBody(input, counter),
        benchIndexedTool: async (request: RunToolRequest) => ({
          output: await benchToolBody(request.input as BenchReadInput, counter),
          attempt: Context.current().info.attempt,
        }),
        benchIndexedBusyTool: async (request: RunToolRequest, iterations: number) => {
          if (spin(iterations) === 0.5) throw new Error('unreachable: spin returns an integer');
          return {
            output: await benchToolBody(request.input as BenchReadInput, counter),
            attempt: Context.current().info.attempt,
          };
        },
      },
      ...tuning,
    });
    bare = { worker: bareWorker, running: bareWorker.run(), taskQueue: bareTaskQueue };
    workflowThreads.bare = newNodeThreads(threadsBeforeBare);
  }
  const common = { client: temporal, taskQueue, catalog: benchCatalog, signer };
  return {
    connection,
    temporal,
    worker,
    running,
    taskQueue,
    ...(bare ? { bare } : {}),
    toolgate: new ToolgateClient(common),
    eagerToolgate: new ToolgateClient({ ...common, eagerStart: true }),
    protocol2Toolgate: new ToolgateClient({ ...common, gateProtocol: 2 }),
    signer,
    counter,
    workflowThreads,
  };
}

async function stopEnvironment(environment: Environment): Promise<void> {
  environment.worker.shutdown();
  environment.bare?.worker.shutdown();
  await Promise.all([environment.running, environment.bare?.running]);
  await environment.connection.close();
}

const readInput = (sequence: number, holdMs = 0) => ({ item: `item-${sequence % 1000}`, holdMs });

function expectSucceeded(record: { status: string; reason?: string }, variant: string): void {
  if (record.status !== 'succeeded') {
    throw new Error(`${variant} call ended ${record.status} (${record.reason ?? 'no reason'})`);
  }
}

/**
 * The search attributes C's client sets at start for bench_read, taken once from the client's own
 * preparation so that B-idx sets exactly the same; B-idx's calls then run none of it.
 */
const indexedAtStart = (() => {
  const prepared = prepareCall({ tool: 'bench_read', input: readInput(0) }, agent, {
    catalog: benchCatalog,
    unique: 'b-idx',
  });
  if (!prepared.ok) throw new Error(`bench_read did not prepare: ${prepared.record.message}`);
  return prepared.searchAttributes;
})();

/** The operation each variant times. */
function variantOperations(
  environment: Environment,
  duplicate: { readonly key: string; readonly callId: string },
  duplicateHoldMs: number,
  busy: {
    readonly callerIterations: number;
    readonly workflowIterations: number;
    readonly activityIterations: number;
  },
) {
  const { temporal, toolgate, eagerToolgate, protocol2Toolgate, counter } = environment;
  const bareQueue = () => {
    if (!environment.bare)
      throw new Error(
        'variant B needs the bare worker (the latency phase, or the waiting phase with --waiting-bare)',
      );
    return environment.bare.taskQueue;
  };
  const bareEager = async (workflowType: string, prefix: string, sequence: number) => {
    const workflowId = `${prefix}-${randomUUID()}`;
    const handle = await temporal.workflow.start(workflowType, {
      workflowId,
      taskQueue: bareQueue(),
      args: [readInput(sequence)],
      requestEagerStart: true,
    });
    await handle.result();
    return { workflowId, eagerlyStarted: handle.eagerlyStarted };
  };
  /** B's call: the bare workflow with one regular activity, a random ID and nothing else. */
  const bareRegular = async (prefix: string, sequence: number): Promise<OperationOutcome> => {
    const workflowId = `${prefix}-${randomUUID()}`;
    await temporal.workflow.execute('bareCall', {
      workflowId,
      taskQueue: bareQueue(),
      args: [readInput(sequence)],
    });
    return { workflowId };
  };
  /** B-idx's call; with `work`, the `B-idx+cpu` probe's (bench/busy-work.ts). */
  const bareIndexed = async (
    sequence: number,
    work?: { readonly workflowIterations: number; readonly activityIterations: number },
    index = true,
  ): Promise<OperationOutcome> => {
    // C's start as the server sees it (ID shape, policies, memo, search attributes, request),
    // built with none of the client's checks: the fingerprint is random bytes of the same length.
    const fingerprint = randomBytes(32).toString('hex');
    const request: ToolCallRequest = {
      tool: 'bench_read',
      input: readInput(sequence),
      context: agent,
      fingerprint,
      protocol: currentGatesProtocol,
    };
    const workflowId = `bare/bench/bench_read/~${randomUUID()}`;
    await temporal.workflow.execute('bareIndexedCall', {
      workflowId,
      taskQueue: bareQueue(),
      args: index ? (work ? [request, work] : [request]) : [request, null, false],
      workflowIdReusePolicy: 'ALLOW_DUPLICATE_FAILED_ONLY',
      workflowIdConflictPolicy: 'USE_EXISTING',
      memo: { fingerprint, startNonce: randomUUID() },
      ...(index ? { typedSearchAttributes: indexedAtStart } : {}),
    });
    return { workflowId };
  };
  const operations: Record<VariantName, Operation> = {
    A: async (sequence) => {
      await callInProcess('bench_read', readInput(sequence), agent, counter);
      return {};
    },
    B: async (sequence) => bareRegular('bare', sequence),
    // The A/A control: B's call exactly, under another name (the prefix has the same length).
    'B-twin': async (sequence) => bareRegular('twin', sequence),
    'B-E': async (sequence) => bareEager('bareCall', 'bare-eager', sequence),
    C: async (sequence) => {
      const started = await toolgate.start({ tool: 'bench_read', input: readInput(sequence) }, agent);
      expectSucceeded(await toolgate.result(started.callId, started.runId), 'C');
      return { workflowId: started.callId };
    },
    'C-E': async (sequence) => {
      const started = await eagerToolgate.start({ tool: 'bench_read', input: readInput(sequence) }, agent);
      expectSucceeded(await eagerToolgate.result(started.callId, started.runId), 'C-E');
      return { workflowId: started.callId, eagerlyStarted: started.eagerlyStarted === true };
    },
    'C-p2': async (sequence) => {
      const started = await protocol2Toolgate.start(
        { tool: 'bench_read', input: readInput(sequence) },
        agent,
      );
      expectSucceeded(await protocol2Toolgate.result(started.callId, started.runId), 'C-p2');
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
        { tool: 'bench_read', input: readInput(0), key: duplicate.key },
        agent,
      );
      if (started.disposition !== 'existing' || !started.record) {
        throw new Error(`D expected the stored record, got disposition ${started.disposition}`);
      }
      expectSucceeded(started.record, 'D');
      return { workflowId: started.callId };
    },
    'D′': async (sequence) => {
      // The leader holds its tool for a while so the duplicate finds it running; only the
      // duplicate's start (send, attach, confirm by memo) is timed.
      const key = `join-${randomUUID()}`;
      const request = { tool: 'bench_read', input: readInput(sequence, duplicateHoldMs), key };
      const leader = await toolgate.start(request, agent);
      const attachStartedAt = performance.now();
      const duplicate = await toolgate.start(request, agent);
      const latencyMicroseconds = Math.max(1, Math.round((performance.now() - attachStartedAt) * 1000));
      if (duplicate.disposition !== 'attached' || duplicate.runId !== leader.runId) {
        throw new Error(`D′ expected to attach to the running call, got ${duplicate.disposition}`);
      }
      const [first, second] = await Promise.all([
        toolgate.result(leader.callId, leader.runId),
        toolgate.result(duplicate.callId, duplicate.runId),
      ]);
      expectSucceeded(first, 'D′ leader');
      expectSucceeded(second, 'D′ duplicate');
      return { workflowId: leader.callId, latencyMicroseconds };
    },
    'B-idx': async (sequence) => bareIndexed(sequence),
    'B-idx+cpu': async (sequence) => {
      if (spin(busy.callerIterations) === 0.5) throw new Error('unreachable: spin returns an integer');
      return bareIndexed(sequence, {
        workflowIterations: busy.workflowIterations,
        activityIterations: busy.activityIterations,
      });
    },
    // The two halves of B-idx over B: the index alone, and everything else of the record alone.
    'B-sa': async (sequence) => {
      const workflowId = `bsai-${randomUUID()}`;
      await temporal.workflow.execute('bareSearchAttributesCall', {
        workflowId,
        taskQueue: bareQueue(),
        args: [readInput(sequence)],
        typedSearchAttributes: indexedAtStart,
      });
      return { workflowId };
    },
    'B-rec': async (sequence) => bareIndexed(sequence, undefined, false),
    'B-LA': async (sequence) => bareEager('bareLocalCall', 'bare-local', sequence),
    'B-0': async (sequence) => bareEager('bareEmpty', 'bare-empty', sequence),
    'B-read': async () => {
      // The read a duplicate makes beside its start, alone: the closed call's history, one page.
      const history = await temporal.workflow.getHandle(duplicate.callId).fetchHistory();
      if (!history.events?.at(-1)?.workflowExecutionCompletedEventAttributes) {
        throw new Error("B-read expected the closed call's history to end in its completion");
      }
      return {};
    },
    I: async (sequence) => {
      const record = await toolgate.call(
        { tool: 'bench_write', input: readInput(sequence), key: `write-${randomUUID()}` },
        agent,
      );
      expectSucceeded(record, 'I');
      if (record.effect !== 'applied') throw new Error(`I expected effect applied, got ${record.effect}`);
      return { workflowId: record.callId };
    },
  };
  return operations;
}

/**
 * Variants whose every call starts a workflow of its own and waits for it to close, so that the
 * call's time can be split by its history (bench/segments.ts).
 */
const ownWorkflowVariants: ReadonlySet<VariantName> = new Set<VariantName>([
  'B',
  'B-twin',
  'B-E',
  'C',
  'C-E',
  'C-p2',
  'C-fast',
  'I',
  'B-idx',
  'B-idx+cpu',
  'B-sa',
  'B-rec',
  'B-LA',
  'B-0',
]);

/**
 * The conditions whose calls are split: with one caller, or arrivals far apart, a call's time is its
 * own path. Under load it is mostly waiting behind other calls, and the parts would show the queue.
 */
const segmentConditions: ReadonlySet<string> = new Set(['c1', 'open']);

/**
 * Splits every recorded call by its history and averages the parts per variant and condition. A
 * call whose history cannot be read or split is counted as skipped, with the first reason, and
 * never costs the run its measurements.
 */
async function splitCalls(temporal: Client, timings: Map<string, CallTiming[]>): Promise<SegmentCell[]> {
  const cells: SegmentCell[] = [];
  for (const [name, calls] of timings) {
    const [variant, condition] = name.split('|') as [VariantName, string];
    const split: CallSegments[] = [];
    let skipped = 0;
    let firstSkip: string | undefined;
    await forEachLimited(calls, 8, async (timing) => {
      try {
        const history = await temporal.workflow.getHandle(timing.workflowId).fetchHistory();
        split.push(callSegments(history.events ?? [], timing));
      } catch (error) {
        skipped++;
        firstSkip ??= error instanceof Error ? error.message : String(error);
      }
    });
    if (skipped > 0) progress(`${variant} ${condition}: ${skipped} call(s) not split (${firstSkip})`);
    const cell = meanSegments(variant, condition, split, skipped);
    if (cell) cells.push(cell);
  }
  return cells;
}

/** Event type names of a workflow's history, from the attribute field each event sets. */
async function historyShape(temporal: Client, workflowId: string): Promise<HistoryShape> {
  const history = await temporal.workflow.getHandle(workflowId).fetchHistory();
  const events = history.events ?? [];
  const eventTypes = events.map((event) => {
    const attributes = Object.keys(event).find(
      (field) => field.endsWith('EventAttributes') && (event as Record<string, unknown>)[field] != null,
    );
    const name = attributes ? attributes.replace(/EventAttributes$/, '') : 'Unknown';
    return name.charAt(0).toUpperCase() + name.slice(1);
  });
  return { events: events.length, eventTypes };
}

interface CellAccumulator {
  histogram: ReturnType<typeof newHistogram>;
  operations: number;
  errors: number;
  firstError?: string;
  elapsedMs: number;
  workerCpuMs: number;
  serverCpuMs: number;
  workerRssMb: number;
  serverRssMb: number;
  eagerRequested: number;
  eagerStarted: number;
  /** Summed over the blocks; absent once any block could not read the threads. */
  threadCpuMs: ThreadCpu | undefined;
  repetitions: Array<{ p50Ms: number; p99Ms: number; throughputPerSecond: number }>;
}

async function measureBlock(
  run: () => Promise<RunOutcome>,
  serverPid: number,
  workflowThreads: Environment['workflowThreads'],
  accumulator: CellAccumulator,
): Promise<void> {
  const cpuBefore = process.cpuUsage();
  const serverCpuBefore = cpuMilliseconds(serverPid) ?? 0;
  const threadsBefore = threadCpuNow(workflowThreads);
  const outcome = await run();
  const threadsAfter = threadCpuNow(workflowThreads);
  const cpu = process.cpuUsage(cpuBefore);
  const sums = accumulator.threadCpuMs;
  if (sums && threadsBefore && threadsAfter) {
    for (const group of threadGroups) sums[group] += threadsAfter[group] - threadsBefore[group];
  } else {
    accumulator.threadCpuMs = undefined;
  }
  accumulator.workerCpuMs += (cpu.user + cpu.system) / 1000;
  accumulator.serverCpuMs += (cpuMilliseconds(serverPid) ?? 0) - serverCpuBefore;
  accumulator.histogram.add(outcome.histogram);
  accumulator.operations += outcome.operations;
  accumulator.errors += outcome.errors;
  if (outcome.firstError) accumulator.firstError ??= outcome.firstError;
  accumulator.elapsedMs += outcome.elapsedMs;
  accumulator.eagerRequested += outcome.eagerRequested;
  accumulator.eagerStarted += outcome.eagerStarted;
  accumulator.workerRssMb = Math.max(accumulator.workerRssMb, process.memoryUsage().rss / 2 ** 20);
  accumulator.serverRssMb = Math.max(accumulator.serverRssMb, residentMegabytes(serverPid) ?? 0);
  const summary = summarize(outcome.histogram);
  accumulator.repetitions.push({
    p50Ms: summary.p50Ms,
    p99Ms: summary.p99Ms,
    throughputPerSecond: round((outcome.operations / outcome.elapsedMs) * 1000),
  });
}

function round(value: number, digits = 1): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}

async function runLatencyPhase(config: RunnerConfig): Promise<LatencyPhaseResult> {
  const environment = await startEnvironment(config, config.workerTuning, { bare: true });
  try {
    const { toolgate, temporal, counter } = environment;
    progress(`worker ready on ${environment.taskQueue}`);

    // D needs one closed call that keeps its key: a readonly call that succeeded completes and keeps it.
    const duplicateKey = `closed-${randomUUID()}`;
    const original = await toolgate.call(
      { tool: 'bench_read', input: readInput(0), key: duplicateKey },
      agent,
    );
    expectSucceeded(original, 'D setup');
    const duplicateBefore = await historyShape(temporal, original.callId);

    // The probe's work in iterations of this machine's CPU, calibrated here, before any block.
    const spinPerMs = config.variants.includes('B-idx+cpu') ? calibrateSpin(() => performance.now()) : 0;
    const iterations = (ms: number) => Math.round(ms * spinPerMs);
    if (spinPerMs > 0) {
      progress(
        `B-idx+cpu: ${spinPerMs} iterations per ms; extra work per call ${config.busyWork.callerMs} ms caller, ${config.busyWork.workflowMs} ms workflow, ${config.busyWork.activityMs} ms activity`,
      );
    }
    const operations = variantOperations(
      environment,
      { key: duplicateKey, callId: original.callId },
      config.duplicateHoldMs,
      {
        callerIterations: iterations(config.busyWork.callerMs),
        workflowIterations: iterations(config.busyWork.workflowMs),
        activityIterations: iterations(config.busyWork.activityMs),
      },
    );
    const variants = config.variants;

    // Warm-up, discarded: JIT, connection pools, the worker's workflow cache, SQLite pages.
    for (const variant of variants) {
      await runClosedLoop(operations[variant], 4, config.warmupOperations);
    }
    progress('warm-up done');

    const histories: Partial<Record<VariantName, HistoryShape>> = {};
    for (const variant of variants) {
      if (variant === 'A') {
        histories.A = { events: 0, eventTypes: [], note: 'in-process, no workflow' };
        continue;
      }
      const outcome: OperationOutcome = await operations[variant](0);
      if (!outcome.workflowId) continue;
      const shape = await historyShape(temporal, outcome.workflowId);
      histories[variant] =
        variant === 'D'
          ? {
              ...shape,
              note: `the closed call's history; the duplicates added ${shape.events - duplicateBefore.events} events`,
            }
          : shape;
    }

    const accumulators = new Map<string, CellAccumulator>();
    const cellFor = (variant: VariantName, condition: string) => {
      const name = `${variant}|${condition}`;
      let accumulator = accumulators.get(name);
      if (!accumulator) {
        accumulator = {
          histogram: newHistogram(),
          operations: 0,
          errors: 0,
          elapsedMs: 0,
          workerCpuMs: 0,
          serverCpuMs: 0,
          workerRssMb: 0,
          serverRssMb: 0,
          eagerRequested: 0,
          eagerStarted: 0,
          threadCpuMs: { main: 0, toolgateWorkflow: 0, bareWorkflow: 0, core: 0, other: 0 },
          repetitions: [],
        };
        accumulators.set(name, accumulator);
      }
      return accumulator;
    };

    /** Each variant's p50 in its latest block of a condition, for the progress line. */
    const blockSummary = (names: readonly VariantName[], condition: string) =>
      names
        .map((name) => {
          const latest = accumulators.get(`${name}|${condition}`)?.repetitions.at(-1);
          return latest
            ? `${name} ${latest.p50Ms < 1 ? latest.p50Ms.toFixed(3) : Math.round(latest.p50Ms)} ms`
            : undefined;
        })
        .filter((part) => part !== undefined)
        .join(', ');
    let duplicateExecutions = 0;
    let duplicateCalls = 0;
    const nextRound = blockRounds(variants, config.blockOrder);
    const rounds: { condition: string; order: VariantName[] }[] = [];
    const startRound = (condition: string) => {
      const order = nextRound();
      rounds.push({ condition, order });
      return order;
    };
    const timings = new Map<string, CallTiming[]>();
    /** Records when each call of a split variant and condition ran (see `segmentConditions`). */
    const observerFor = (variant: VariantName, condition: string): CallObserver | undefined => {
      if (!ownWorkflowVariants.has(variant) || !segmentConditions.has(condition)) return undefined;
      const name = `${variant}|${condition}`;
      const calls = timings.get(name) ?? [];
      timings.set(name, calls);
      return (outcome, calledAtMs, returnedAtMs) => {
        if (outcome.workflowId) {
          calls.push({ workflowId: outcome.workflowId, startedAtMs: calledAtMs, endedAtMs: returnedAtMs });
        }
      };
    };
    const measure = async (variant: VariantName, condition: string, run: () => Promise<RunOutcome>) => {
      const executionsBefore = counter.count;
      const accumulator = cellFor(variant, condition);
      const operationsBefore = accumulator.operations + accumulator.errors;
      await measureBlock(run, config.serverPid, environment.workflowThreads, accumulator);
      if (variant === 'D') {
        duplicateExecutions += counter.count - executionsBefore;
        duplicateCalls += accumulator.operations + accumulator.errors - operationsBefore;
      }
    };
    for (let repetition = 0; repetition < config.repetitions; repetition++) {
      for (const concurrency of config.concurrencyLevels) {
        const condition = `c${concurrency}`;
        const count = config.operationsPerBlock[condition] ?? concurrency * 10;
        // Interleave: every variant runs one block per condition, in a fresh order per round, so
        // drift in the machine or the database, and what one block leaves behind for the next,
        // land on all variants alike.
        for (const variant of startRound(condition)) {
          const observe = observerFor(variant, condition);
          await measure(variant, condition, () =>
            runClosedLoop(operations[variant], concurrency, count, observe),
          );
        }
        progress(
          `repetition ${repetition + 1}/${config.repetitions}, ${concurrency} caller${concurrency === 1 ? '' : 's'}, p50: ${blockSummary(variants, condition)}`,
        );
      }
      if (config.openLoopDurationMs > 0) {
        for (const variant of startRound('open')) {
          const observe = observerFor(variant, 'open');
          await measure(variant, 'open', () =>
            runOpenLoop(
              operations[variant],
              config.openLoopRatePerSecond,
              config.openLoopDurationMs,
              observe,
            ),
          );
        }
      }
      progress(
        `repetition ${repetition + 1}/${config.repetitions} done (open loop p50: ${blockSummary(variants, 'open')})`,
      );
    }

    progress(
      `splitting ${[...timings.values()].reduce((sum, calls) => sum + calls.length, 0)} calls by their histories`,
    );
    const segments = await splitCalls(temporal, timings);
    const duplicateAfter = await historyShape(temporal, original.callId);
    const current = await temporal.workflow.getHandle(original.callId).describe();
    const cells: LatencyCell[] = [];
    for (const [name, accumulator] of accumulators) {
      const [variant, condition] = name.split('|') as [VariantName, string];
      const calls = Math.max(1, accumulator.operations);
      cells.push({
        variant,
        condition,
        latency: summarize(accumulator.histogram),
        throughputPerSecond: round((accumulator.operations / accumulator.elapsedMs) * 1000),
        operations: accumulator.operations,
        errors: accumulator.errors,
        ...(accumulator.firstError ? { firstError: accumulator.firstError } : {}),
        workerCpuMsPerCall: round(accumulator.workerCpuMs / calls, 3),
        serverCpuMsPerCall: round(accumulator.serverCpuMs / calls, 3),
        ...(accumulator.threadCpuMs
          ? {
              threadCpuMsPerCall: Object.fromEntries(
                threadGroups.map((group) => [
                  group,
                  round((accumulator.threadCpuMs as ThreadCpu)[group] / calls, 3),
                ]),
              ) as ThreadCpu,
            }
          : {}),
        workerRssMb: round(accumulator.workerRssMb),
        serverRssMb: round(accumulator.serverRssMb),
        eagerRequested: accumulator.eagerRequested,
        eagerStarted: accumulator.eagerStarted,
        repetitions: accumulator.repetitions,
      });
    }
    return {
      cells,
      histories,
      duplicateCheck: {
        historyEventsBefore: duplicateBefore.events,
        historyEventsAfter: duplicateAfter.events,
        runIdUnchanged: current.runId === original.runId,
        toolExecutionsDuringD: duplicateExecutions,
        duplicateCalls,
      },
      workerTuning: config.workerTuning,
      blockOrder: config.blockOrder,
      rounds,
      segments,
    };
  } finally {
    await stopEnvironment(environment);
  }
}

/** Runs `task` over `items` with at most `concurrency` in flight. */
async function forEachLimited<T>(
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

function collectGarbage(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

/** A full collection in this thread and in the workflow thread (see `benchCollectGarbage`). */
async function collectGarbageEverywhere(temporal: Client, taskQueue: string): Promise<boolean> {
  collectGarbage();
  const collected = (await temporal.workflow.execute('benchCollectGarbage', {
    workflowId: `bench-gc-${randomUUID()}`,
    taskQueue,
  })) as boolean;
  // V8 hands freed pages back to the system shortly after a collection.
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  return collected;
}

async function runWaitingPhase(config: RunnerConfig): Promise<WaitingPhaseResult> {
  const settings = config.waiting;
  const environment = await startEnvironment(
    config,
    { ...config.workerTuning, maxCachedWorkflows: settings.cacheSize },
    { bare: settings.bare.length > 0 },
  );
  try {
    const { toolgate, temporal, signer } = environment;
    const noBusyWork = { callerIterations: 0, workflowIterations: 0, activityIterations: 0 };
    const operations = variantOperations(environment, { key: 'unused', callId: 'unused' }, 0, noBusyWork);
    const warmUp = (operation: Operation) =>
      runClosedLoop(operation, settings.callConcurrency, Math.min(20, settings.callOperations));
    const block = async (operation: Operation, count: number) =>
      (await runClosedLoop(operation, settings.callConcurrency, count)).histogram;
    // With --waiting-bare, bare variants are measured beside C at each point, in halves mirrored
    // (C, B, B-idx, B-idx, B, C), so that none meets a database the others' calls have grown more.
    type Point = keyof NonNullable<WaitingPhaseResult['bareCalls']>[string];
    const bareCalls: Record<string, Partial<Record<Point, LatencySummary>>> = {};
    const measureC = async (point?: Point) => {
      await warmUp(operations.C);
      if (settings.bare.length === 0 || point === undefined)
        return block(operations.C, settings.callOperations);
      const order: VariantName[] = ['C', ...settings.bare];
      for (const variant of settings.bare) await warmUp(operations[variant]);
      const half = Math.ceil(settings.callOperations / 2);
      const histograms = new Map<VariantName, Awaited<ReturnType<typeof block>>>();
      for (const variant of [...order, ...[...order].reverse()]) {
        const measured = await block(operations[variant], half);
        const earlier = histograms.get(variant);
        if (earlier) earlier.add(measured);
        else histograms.set(variant, measured);
      }
      for (const variant of settings.bare) {
        const summary = summarize(histograms.get(variant)!);
        bareCalls[variant] = { ...bareCalls[variant], [point]: summary };
        progress(`${variant} beside C: p50 ${summary.p50Ms} ms, p99 ${summary.p99Ms} ms`);
      }
      return histograms.get('C')!;
    };
    const callUnloaded = summarize(await measureC('unloaded'));
    progress(`C unloaded: p50 ${callUnloaded.p50Ms} ms, p99 ${callUnloaded.p99Ms} ms`);

    interface Waiting {
      readonly callId: string;
      readonly runId: string;
      readonly fingerprint: string;
    }
    const waiting: Waiting[] = [];
    const startWaiting = async (reference: string): Promise<Waiting> => {
      const input = { reference, amountCents: 12_345 };
      const started = await toolgate.start({ tool: 'bench_transfer', input }, agent);
      if (started.disposition !== 'started')
        throw new Error(`waiting call not started: ${started.disposition}`);
      return {
        callId: started.callId,
        runId: started.runId ?? '',
        fingerprint: callFingerprint('bench_transfer', input),
      };
    };
    const awaitingCount = () =>
      temporal.workflow.count(`TaskQueue = "${environment.taskQueue}" AND CallStatus = "awaiting_approval"`);
    const waitForAwaiting = async (expected: number) => {
      const deadline = Date.now() + 600_000;
      while (Date.now() < deadline) {
        if ((await awaitingCount()).count >= expected) return;
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
      throw new Error(`fewer than ${expected} calls reached awaiting_approval within 10 minutes`);
    };

    const approve = async (call: Waiting) => {
      const claims = decisionClaims({
        callId: call.callId,
        runId: call.runId,
        decision: 'approve',
        approver: 'bench-approver',
        approverKind: 'human',
        roles: ['finance'],
        fingerprint: call.fingerprint,
      });
      const handle = temporal.workflow.getHandle(call.callId);
      await handle.signal(decisionSignal, signer.sign(claims));
      const record = await toolgate.result(call.callId);
      expectSucceeded(record, 'approved call');
    };

    let approvalErrors = 0;
    let firstError: string | undefined;
    const approveAll = async (calls: readonly Waiting[], label: string) => {
      const startedAt = performance.now();
      let approved = 0;
      await forEachLimited(calls, settings.approveConcurrency, async (call) => {
        try {
          await approve(call);
        } catch (error) {
          approvalErrors++;
          firstError ??= error instanceof Error ? error.message : String(error);
        }
        if (++approved % 1000 === 0) {
          const seconds = (performance.now() - startedAt) / 1000;
          progress(`${label}: approved ${approved}/${calls.length} (${Math.round(approved / seconds)}/s)`);
        }
      });
      return round((performance.now() - startedAt) / 1000, 2);
    };

    // With --waiting-prefill: the same number of calls again, closed before any call waits, so that
    // C is measured against a database as big as the one it meets later, with none waiting.
    let prefill: WaitingPhaseResult['prefill'];
    if (settings.prefill > 0) {
      const startedAt = performance.now();
      const closing: Waiting[] = [];
      await forEachLimited(
        Array.from({ length: settings.prefill }, () => randomUUID()),
        settings.startConcurrency,
        async (reference) => {
          closing.push(await startWaiting(reference));
          if (closing.length % 1000 === 0) progress(`prefill: started ${closing.length}/${settings.prefill}`);
        },
      );
      await waitForAwaiting(settings.prefill);
      await approveAll(closing, 'prefill');
      const secondsToStartAndApprove = round((performance.now() - startedAt) / 1000, 2);
      const callAfterPrefill = summarize(await measureC('afterPrefill'));
      progress(
        `C after ${settings.prefill} calls closed, none waiting: p50 ${callAfterPrefill.p50Ms} ms, p99 ${callAfterPrefill.p99Ms} ms`,
      );
      prefill = { calls: settings.prefill, secondsToStartAndApprove, callAfterPrefill };
    }

    const levels: WaitingLevel[] = [];
    for (const level of settings.levels) {
      const startedAt = performance.now();
      const references = Array.from({ length: level - waiting.length }, () => randomUUID());
      await forEachLimited(references, settings.startConcurrency, async (reference) => {
        waiting.push(await startWaiting(reference));
        if (waiting.length % 1000 === 0) progress(`started ${waiting.length}/${level} waiting calls`);
      });
      await waitForAwaiting(level);
      const secondsToStart = round((performance.now() - startedAt) / 1000, 2);
      // Let the worker settle, then measure memory that is really held, not garbage.
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      const rssBeforeGc = process.memoryUsage().rss;
      const collectedInWorkflowThread = await collectGarbageEverywhere(temporal, environment.taskQueue);
      const memory = process.memoryUsage();
      const entry: WaitingLevel = {
        waiting: level,
        secondsToStart,
        workerRssMb: round(memory.rss / 2 ** 20),
        workerRssBeforeGcMb: round(rssBeforeGc / 2 ** 20),
        collectedInWorkflowThread,
        workerHeapMb: round(memory.heapUsed / 2 ** 20),
        workerExternalMb: round(memory.external / 2 ** 20),
        serverRssMb: residentMegabytes(config.serverPid) ?? 0,
      };
      levels.push(entry);
      progress(`${level} waiting: ${JSON.stringify(entry)}`);
    }

    // Resume latency: a call approved right after it started is in the worker's cache; one of the
    // oldest calls was evicted long ago (the cache holds `cacheSize`), so its history is replayed.
    const cachedHistogram = newHistogram();
    const evictedHistogram = newHistogram();
    const oldest = waiting.splice(0, settings.resumeSamples);
    for (let sample = 0; sample < settings.resumeSamples; sample++) {
      const fresh = await startWaiting(randomUUID());
      const deadline = Date.now() + 30_000;
      while ((await toolgate.get(fresh.callId))?.status !== 'awaiting_approval') {
        if (Date.now() > deadline) throw new Error('a fresh waiting call never reached awaiting_approval');
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      let startedAt = performance.now();
      await approve(fresh);
      cachedHistogram.recordValue(Math.round((performance.now() - startedAt) * 1000));
      const evicted = oldest[sample] as Waiting;
      startedAt = performance.now();
      await approve(evicted);
      evictedHistogram.recordValue(Math.round((performance.now() - startedAt) * 1000));
    }
    const resumeCached = summarize(cachedHistogram);
    const resumeEvicted = summarize(evictedHistogram);
    progress(`resume cached p50 ${resumeCached.p50Ms} ms, evicted p50 ${resumeEvicted.p50Ms} ms`);

    const callWhileWaiting = summarize(await measureC('whileWaiting'));
    progress(
      `C with ${waiting.length} waiting: p50 ${callWhileWaiting.p50Ms} ms, p99 ${callWhileWaiting.p99Ms} ms`,
    );

    const secondsToApproveAll = await approveAll(waiting, 'drain');
    progress(`approved ${waiting.length} in ${secondsToApproveAll} s`);
    const callAfterDrain = summarize(await measureC('afterDrain'));

    return {
      cacheSize: settings.cacheSize,
      levels,
      resumeCached,
      resumeEvicted,
      callUnloaded,
      callWhileWaiting,
      callAfterDrain,
      ...(prefill ? { prefill } : {}),
      ...(settings.bare.length > 0 ? { bareCalls } : {}),
      approvedCalls: waiting.length,
      secondsToApproveAll,
      approvalsPerSecond: round(waiting.length / Math.max(0.001, secondsToApproveAll)),
      approvalErrors,
      ...(firstError ? { firstError } : {}),
    };
  } finally {
    await stopEnvironment(environment);
  }
}

async function main(): Promise<void> {
  const config = JSON.parse(process.env['BENCH_RUNNER_CONFIG'] ?? '{}') as RunnerConfig;
  try {
    if (config.mode === 'latency') {
      await send({ type: 'latency', result: await runLatencyPhase(config) });
    } else {
      await send({ type: 'waiting', result: await runWaitingPhase(config) });
    }
  } catch (error) {
    await send({
      type: 'failed',
      error: error instanceof Error ? (error.stack ?? error.message) : String(error),
    });
    process.exitCode = 1;
  }
}

await main();
