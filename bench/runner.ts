/**
 * The benchmark's worker process. main.ts forks it once per phase; it hosts the toolgate worker and
 * the load generator (eager start needs the client on the worker's own connection, in the same
 * process), measures, and sends its results back over IPC. This file is its entry and the latency
 * phase; the waiting phase is in waiting-phase.ts.
 */
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import type { ExecutionCounter } from './bench-tools.ts';
import { blockRounds } from './block-order.ts';
import {
  agent,
  expectSucceeded,
  forEachLimited,
  progress,
  type RunnerConfig,
  readInput,
  round,
  send,
  startEnvironment,
  stopEnvironment,
  variantOperations,
} from './environment.ts';
import {
  type CallObserver,
  cpuMilliseconds,
  newHistogram,
  type Operation,
  type RunOutcome,
  residentMegabytes,
  runClosedLoop,
  runOpenLoop,
  summarize,
} from './measure.ts';
import type {
  HistoryShape,
  LatencyCell,
  LatencyPhaseResult,
  RepetitionFigures,
  VariantName,
} from './result-types.ts';
import {
  type CallSegments,
  type CallTiming,
  callSegments,
  meanSegments,
  type SegmentCell,
} from './segments.ts';
import { runWaitingPhase } from './waiting-phase.ts';

/**
 * Variants whose every call starts a workflow of its own and waits for it to close, so that the
 * call's time can be split by its history (bench/segments.ts).
 */
const ownWorkflowVariants: ReadonlySet<VariantName> = new Set<VariantName>(['B', 'B-twin', 'C', 'C-fast']);

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

/** One history per variant, from one call made outside the measured blocks. */
async function recordHistories(
  temporal: Client,
  variants: readonly VariantName[],
  operations: Record<VariantName, Operation>,
  duplicateBefore: HistoryShape,
): Promise<Partial<Record<VariantName, HistoryShape>>> {
  const histories: Partial<Record<VariantName, HistoryShape>> = {};
  for (const variant of variants) {
    if (variant === 'A') {
      histories.A = { events: 0, eventTypes: [], note: 'in-process, no workflow' };
      continue;
    }
    const outcome = await operations[variant](0);
    if (!outcome.workflowId) continue;
    const shape = await historyShape(temporal, outcome.workflowId);
    const added = shape.events - duplicateBefore.events;
    histories[variant] =
      variant === 'D'
        ? { ...shape, note: `the closed call's history; the duplicates added ${added} events` }
        : shape;
  }
  return histories;
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
  repetitions: RepetitionFigures[];
}

function newAccumulator(): CellAccumulator {
  return {
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
    repetitions: [],
  };
}

/** Runs one block and adds what it measured (latency, CPU, memory) to its cell. */
async function measureBlock(
  run: () => Promise<RunOutcome>,
  serverPid: number,
  accumulator: CellAccumulator,
): Promise<void> {
  const cpuBefore = process.cpuUsage();
  const serverCpuBefore = cpuMilliseconds(serverPid) ?? 0;
  const outcome = await run();
  const cpu = process.cpuUsage(cpuBefore);
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

function latencyCell(name: string, accumulator: CellAccumulator): LatencyCell {
  const [variant, condition] = name.split('|') as [VariantName, string];
  const calls = Math.max(1, accumulator.operations);
  return {
    variant,
    condition,
    latency: summarize(accumulator.histogram),
    throughputPerSecond: round((accumulator.operations / accumulator.elapsedMs) * 1000),
    operations: accumulator.operations,
    errors: accumulator.errors,
    ...(accumulator.firstError ? { firstError: accumulator.firstError } : {}),
    workerCpuMsPerCall: round(accumulator.workerCpuMs / calls, 3),
    serverCpuMsPerCall: round(accumulator.serverCpuMs / calls, 3),
    workerRssMb: round(accumulator.workerRssMb),
    serverRssMb: round(accumulator.serverRssMb),
    eagerRequested: accumulator.eagerRequested,
    eagerStarted: accumulator.eagerStarted,
    repetitions: accumulator.repetitions,
  };
}

/**
 * The latency phase's record of its blocks: each cell's figures, every round's order, when each
 * split call ran, and what D's blocks did to the tool counter.
 */
class LatencyBlocks {
  readonly accumulators = new Map<string, CellAccumulator>();
  readonly rounds: { condition: string; order: VariantName[] }[] = [];
  readonly timings = new Map<string, CallTiming[]>();
  duplicateExecutions = 0;
  duplicateCalls = 0;
  private readonly nextRound: () => VariantName[];

  constructor(
    private readonly config: RunnerConfig,
    private readonly counter: ExecutionCounter,
  ) {
    this.nextRound = blockRounds(config.variants, config.blockOrder);
  }

  /** The order of the next round, recorded with its condition. */
  startRound(condition: string): VariantName[] {
    const order = this.nextRound();
    this.rounds.push({ condition, order });
    return order;
  }

  /** Records when each call of a split variant and condition ran (see `segmentConditions`). */
  observerFor(variant: VariantName, condition: string): CallObserver | undefined {
    if (!ownWorkflowVariants.has(variant) || !segmentConditions.has(condition)) return undefined;
    const name = `${variant}|${condition}`;
    const calls = this.timings.get(name) ?? [];
    this.timings.set(name, calls);
    return (outcome, calledAtMs, returnedAtMs) => {
      if (outcome.workflowId) {
        calls.push({ workflowId: outcome.workflowId, startedAtMs: calledAtMs, endedAtMs: returnedAtMs });
      }
    };
  }

  async measure(variant: VariantName, condition: string, run: () => Promise<RunOutcome>): Promise<void> {
    const name = `${variant}|${condition}`;
    const accumulator = this.accumulators.get(name) ?? newAccumulator();
    this.accumulators.set(name, accumulator);
    const executionsBefore = this.counter.count;
    const callsBefore = accumulator.operations + accumulator.errors;
    await measureBlock(run, this.config.serverPid, accumulator);
    if (variant === 'D') {
      this.duplicateExecutions += this.counter.count - executionsBefore;
      this.duplicateCalls += accumulator.operations + accumulator.errors - callsBefore;
    }
  }

  /** Each variant's p50 in its latest block of a condition, for the progress line. */
  blockSummary(condition: string): string {
    return this.config.variants
      .flatMap((name) => {
        const latest = this.accumulators.get(`${name}|${condition}`)?.repetitions.at(-1);
        if (!latest) return [];
        return [`${name} ${latest.p50Ms < 1 ? latest.p50Ms.toFixed(3) : Math.round(latest.p50Ms)} ms`];
      })
      .join(', ');
  }

  cells(): LatencyCell[] {
    return [...this.accumulators].map(([name, accumulator]) => latencyCell(name, accumulator));
  }
}

const callers = (count: number) => `${count} caller${count === 1 ? '' : 's'}`;

/**
 * Every repetition: one round per closed-loop level, then one of the open loop. Interleaved, every
 * variant runs one block per condition, in a fresh order per round, so drift in the machine or
 * the database, and what one block leaves behind for the next, land on all variants alike.
 */
async function runRounds(
  config: RunnerConfig,
  operations: Record<VariantName, Operation>,
  blocks: LatencyBlocks,
): Promise<void> {
  for (let repetition = 1; repetition <= config.repetitions; repetition++) {
    const label = `repetition ${repetition}/${config.repetitions}`;
    for (const concurrency of config.concurrencyLevels) {
      const condition = `c${concurrency}`;
      const count = config.operationsPerBlock[condition] ?? concurrency * 10;
      for (const variant of blocks.startRound(condition)) {
        const observe = blocks.observerFor(variant, condition);
        await blocks.measure(variant, condition, () =>
          runClosedLoop(operations[variant], concurrency, count, observe),
        );
      }
      progress(`${label}, ${callers(concurrency)}, p50: ${blocks.blockSummary(condition)}`);
    }
    if (config.openLoopDurationMs <= 0) continue;
    for (const variant of blocks.startRound('open')) {
      const observe = blocks.observerFor(variant, 'open');
      const { openLoopRatePerSecond: rate, openLoopDurationMs: duration } = config;
      await blocks.measure(variant, 'open', () => runOpenLoop(operations[variant], rate, duration, observe));
    }
    progress(`${label} done (open loop p50: ${blocks.blockSummary('open')})`);
  }
}

async function runLatencyPhase(config: RunnerConfig): Promise<LatencyPhaseResult> {
  const environment = await startEnvironment(config, config.workerTuning);
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
    const operations = variantOperations(environment, duplicateKey);

    // Warm-up, discarded: JIT, connection pools, the worker's workflow cache, SQLite pages.
    for (const variant of config.variants)
      await runClosedLoop(operations[variant], 4, config.warmupOperations);
    progress('warm-up done');
    const histories = await recordHistories(temporal, config.variants, operations, duplicateBefore);

    const blocks = new LatencyBlocks(config, counter);
    await runRounds(config, operations, blocks);
    const splitCount = [...blocks.timings.values()].reduce((sum, calls) => sum + calls.length, 0);
    progress(`splitting ${splitCount} calls by their histories`);
    const segments = await splitCalls(temporal, blocks.timings);
    return {
      cells: blocks.cells(),
      histories,
      duplicateCheck: await duplicateCheck(temporal, original, duplicateBefore, blocks),
      workerTuning: config.workerTuning,
      rounds: blocks.rounds,
      segments,
    };
  } finally {
    await stopEnvironment(environment);
  }
}

/** Whether D's blocks left the closed call as they found it. */
async function duplicateCheck(
  temporal: Client,
  original: { readonly callId: string; readonly runId?: string },
  before: HistoryShape,
  blocks: LatencyBlocks,
): Promise<LatencyPhaseResult['duplicateCheck']> {
  const after = await historyShape(temporal, original.callId);
  const current = await temporal.workflow.getHandle(original.callId).describe();
  return {
    historyEventsBefore: before.events,
    historyEventsAfter: after.events,
    runIdUnchanged: current.runId === original.runId,
    toolExecutionsDuringD: blocks.duplicateExecutions,
    duplicateCalls: blocks.duplicateCalls,
  };
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
