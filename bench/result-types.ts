import type { BlockOrder } from './block-order.ts';
import type { LatencySummary } from './measure.ts';
import type { SegmentCell } from './segments.ts';

/** The benchmark variants, in the order the report lists them. */
export const variantNames = ['A', 'B', 'B-twin', 'C', 'C-fast', 'D'] as const;
export type VariantName = (typeof variantNames)[number];

/** What each variant measures, for the report. */
export const variantDescriptions: Record<VariantName, string> = {
  A: 'the same gates and tool body called in-process, no durability: the cost floor',
  B: 'bare Temporal: one workflow, one regular activity, a random ID, on a plain worker of its own',
  'B-twin':
    "the A/A control: B's workflow on B's worker under a second ID prefix; its true ratio to B is 1, so what it shows is the run's noise",
  C: 'a toolgate readonly call through every gate (ToolgateClient.start, then result)',
  'C-fast': "toolgate's fastest readonly path: a fastPath tool (local activity) with eager start",
  D: 'a duplicate of a closed call (same key): the stored record comes back, nothing runs',
};

/** One variant under one condition, all repetitions merged. */
export interface LatencyCell {
  readonly variant: VariantName;
  /** `c<N>` for a closed loop with N callers, `open` for the fixed arrival rate. */
  readonly condition: string;
  readonly latency: LatencySummary;
  readonly throughputPerSecond: number;
  readonly operations: number;
  readonly errors: number;
  readonly firstError?: string;
  /** CPU of the worker process (worker plus the in-process load generator) per call. */
  readonly workerCpuMsPerCall: number;
  readonly serverCpuMsPerCall: number;
  readonly workerRssMb: number;
  readonly serverRssMb: number;
  readonly eagerRequested: number;
  readonly eagerStarted: number;
  readonly repetitions: ReadonlyArray<RepetitionFigures>;
}

/** The figures of one block, which a target reads per repetition as well as merged. */
export interface RepetitionFigures {
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly throughputPerSecond: number;
}

export interface HistoryShape {
  readonly events: number;
  readonly eventTypes: readonly string[];
  readonly note?: string;
}

/** Proof that D ran nothing: the closed call's history and run did not change, no tool executed. */
export interface DuplicateCheck {
  readonly historyEventsBefore: number;
  readonly historyEventsAfter: number;
  readonly runIdUnchanged: boolean;
  readonly toolExecutionsDuringD: number;
  readonly duplicateCalls: number;
}

export interface LatencyPhaseResult {
  readonly cells: LatencyCell[];
  readonly histories: Partial<Record<VariantName, HistoryShape>>;
  readonly duplicateCheck: DuplicateCheck;
  readonly workerTuning: Record<string, unknown>;
  /** Every round's order of variants, in the order the rounds ran. */
  readonly rounds?: ReadonlyArray<{ readonly condition: string; readonly order: readonly VariantName[] }>;
  /** Where the time of a call goes, at 1 caller and in the open loop (bench/segments.ts). */
  readonly segments?: readonly SegmentCell[];
}

export interface WaitingLevel {
  readonly waiting: number;
  readonly secondsToStart: number;
  /** After a full collection in the main thread and in the workflow thread: memory held. */
  readonly workerRssMb: number;
  /** The same moment before those collections: held memory plus garbage not yet collected. */
  readonly workerRssBeforeGcMb?: number;
  /** Whether the workflow thread's collection ran (it needs the runner's --expose-gc). */
  readonly collectedInWorkflowThread?: boolean;
  readonly workerHeapMb: number;
  /** Memory V8 tracks outside its heap (buffers); the rest of RSS is native (Rust core, code, malloc). */
  readonly workerExternalMb: number;
  readonly serverRssMb: number;
}

/** The moments of the waiting phase at which C, and B beside it, are measured. */
export type WaitingPoint = 'unloaded' | 'afterPrefill' | 'whileWaiting' | 'afterDrain';

export interface WaitingPhaseResult {
  readonly cacheSize: number;
  readonly levels: WaitingLevel[];
  readonly resumeCached: LatencySummary;
  readonly resumeEvicted: LatencySummary;
  readonly callUnloaded: LatencySummary;
  readonly callWhileWaiting: LatencySummary;
  /** C again once every waiting call has closed: separates "calls waiting" from "a bigger database". */
  readonly callAfterDrain: LatencySummary;
  /**
   * With `--waiting-prefill N`: C measured after N approval-tier calls were started and approved,
   * before any call waits. None waiting, but the database holds N more closed calls.
   */
  readonly prefill?: {
    readonly calls: number;
    readonly secondsToStartAndApprove: number;
    readonly callAfterPrefill: LatencySummary;
  };
  /**
   * B measured beside C at each point, in mirrored halves (C, B, B, C), so that C's growth can be
   * read against bare Temporal's on the same database in the same minutes. Absent in older results.
   */
  readonly bBesideC?: Partial<Record<WaitingPoint, LatencySummary>>;
  readonly approvedCalls: number;
  readonly secondsToApproveAll: number;
  readonly approvalsPerSecond: number;
  readonly approvalErrors: number;
  readonly firstError?: string;
}

export interface TargetCheck {
  readonly target: string;
  readonly measured: string;
  readonly holds: boolean;
  /**
   * Set on an A/A control rather than a target: the same line read for B-twin, a variant identical
   * to B, so that its misses show how often this bench fails a line with no cost at all.
   */
  readonly control?: string;
  /** What the run says about a miss: within the A/A control's spread, or inside its own noise. */
  readonly note?: string;
}

/** How a run's blocks were made: passed to its runner, and recorded in its results. */
export interface RunShape {
  readonly repetitions: number;
  readonly concurrencyLevels: readonly number[];
  /** Measured operations per block at each concurrency, keyed `c<N>`. */
  readonly operationsPerBlock: Readonly<Record<string, number>>;
  readonly openLoopRatePerSecond: number;
  readonly openLoopDurationMs: number;
  /** How the variants' blocks are ordered in each round (see `block-order.ts`). */
  readonly blockOrder: BlockOrder;
}

/** The whole of `bench/results/latest.json`. */
export interface BenchResults {
  readonly meta: RunShape & {
    readonly startedAt: string;
    readonly finishedAt: string;
    readonly durationSeconds: number;
    readonly quick: boolean;
    readonly cores: number;
    readonly cpuModel: string;
    readonly node: string;
    readonly temporalCli: string;
    readonly serverExtraArgs: readonly string[];
    /** A digest of the product code measured (src/, workflows/, activities/; bench/digest.ts). */
    readonly productDigest: string;
  };
  readonly latency?: LatencyPhaseResult;
  readonly waiting?: WaitingPhaseResult;
  readonly targets: TargetCheck[];
  /** Variants (or the waiting phase) that did not complete every call. Empty on success. */
  readonly incomplete: string[];
}
