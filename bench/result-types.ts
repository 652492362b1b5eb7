import type { BlockOrder } from './block-order.ts';
import type { LatencySummary } from './measure.ts';
import type { SegmentCell } from './segments.ts';
import type { ThreadGroup } from './thread-cpu.ts';

/** The benchmark variants, in the order the report lists them. */
export const variantNames = [
  'A',
  'B',
  'B-E',
  'C',
  'C-E',
  'C-p2',
  'C-fast',
  'D',
  'D′',
  'I',
  'B-idx',
  'B-idx+cpu',
  'B-LA',
  'B-0',
  'B-read',
  'B-twin',
  'B-sa',
  'B-rec',
] as const;
export type VariantName = (typeof variantNames)[number];

/** Probes: variants run only when `--variants` names them, never in a default run. */
export const probeVariants: ReadonlySet<VariantName> = new Set<VariantName>([
  'B-idx+cpu',
  'B-twin',
  'B-sa',
  'B-rec',
]);

/** What each variant measures, for the report. */
export const variantDescriptions: Record<VariantName, string> = {
  A: 'same gates and tool in-process, no durability (cost floor)',
  B: 'bare Temporal: one workflow, one regular activity, random ID',
  'B-E': 'B with eager workflow start',
  C: 'toolgate readonly call (ToolgateClient.call)',
  'C-E': 'C with eager workflow start',
  'C-p2': 'C started on gate protocol 2 (validation in the workflow): what protocol 3 saves',
  'C-fast': 'toolgate readonly fast path: local activity + eager start',
  D: 'duplicate of a closed call (same key): stored record, nothing runs',
  'D′': 'duplicate joining a running call (time to attach)',
  I: 'irreversible call with a fresh key',
  'B-idx':
    "floor for C: bare Temporal recording a call as toolgate must (C's search attributes, memo, activity options, status upsert and record size), no gates",
  'B-idx+cpu':
    "probe: B-idx plus plain CPU work where C's gates put theirs (caller, first workflow turn, activity; --busy-ms)",
  'B-LA': 'bare Temporal fast path: the tool body as a local activity, eager start (C-fast without toolgate)',
  'B-0': 'floor: bare empty workflow, eager start, closed in its first task (no tool at all)',
  'B-read': "floor: one history read of D's closed call (one RPC, nothing else)",
  'B-twin':
    'probe, an A/A control: B again under a second name (same workflow, worker and input); how far two identical variants land apart in one run',
  'B-sa':
    "probe: B plus the index alone (C's six search attributes at start, its final status upsert); B-idx's other parts left out",
  'B-rec':
    'probe: B-idx without the index (memo, ID policies, request, activity options, record-sized result; no search attributes, no upsert)',
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
  /** The worker process's CPU per call by thread (bench/thread-cpu.ts), where /proc could be read. */
  readonly threadCpuMsPerCall?: Readonly<Record<ThreadGroup, number>>;
  readonly workerRssMb: number;
  readonly serverRssMb: number;
  readonly eagerRequested: number;
  readonly eagerStarted: number;
  readonly repetitions: ReadonlyArray<{ p50Ms: number; p99Ms: number; throughputPerSecond: number }>;
}

export interface HistoryShape {
  readonly events: number;
  readonly eventTypes: readonly string[];
  readonly note?: string;
}

export interface LatencyPhaseResult {
  readonly cells: LatencyCell[];
  readonly histories: Partial<Record<VariantName, HistoryShape>>;
  /** Proof that D ran nothing: the closed call's history and run did not change, no tool executed. */
  readonly duplicateCheck: {
    readonly historyEventsBefore: number;
    readonly historyEventsAfter: number;
    readonly runIdUnchanged: boolean;
    readonly toolExecutionsDuringD: number;
    readonly duplicateCalls: number;
  };
  readonly workerTuning: Record<string, unknown>;
  /** How blocks were ordered (absent in results written before round 10, which were `rotated`). */
  readonly blockOrder?: BlockOrder;
  /** Every round's order of variants, in the order the rounds ran. */
  readonly rounds?: ReadonlyArray<{ readonly condition: string; readonly order: readonly VariantName[] }>;
  /**
   * Where the time of a call goes, at 1 caller and in the open loop: mean parts per variant, from
   * every measured call's history (bench/segments.ts). Absent in results written before round 11.
   */
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
   * With `--waiting-bare`: bare-Temporal variants measured beside C at the same points (in mirrored
   * halves), by variant: none waiting, after the prefill, all waiting, after the drain.
   */
  readonly bareCalls?: Readonly<
    Record<
      string,
      Partial<Record<'unloaded' | 'afterPrefill' | 'whileWaiting' | 'afterDrain', LatencySummary>>
    >
  >;
  readonly approvedCalls: number;
  readonly secondsToApproveAll: number;
  readonly approvalsPerSecond: number;
  readonly approvalErrors: number;
  readonly firstError?: string;
}

/** Which side of a target's line passes. */
export type LineDirection = 'at most' | 'at least';

/** One figure a target checks: a ratio (or a count) under one condition, with its reference's. */
export interface TargetFigure {
  /** `c<N>`, `open`, or what the figure is about when it has no condition (`10000 waiting`). */
  readonly condition: string;
  readonly value: number;
  /** The variant the figure is of, when a target takes the best of several. */
  readonly variant?: VariantName;
  /** The bare-Temporal reference measured in the same run, as a ratio of the same kind. */
  readonly reference?: { readonly variant: VariantName; readonly value: number };
}

export interface TargetCheck {
  readonly target: string;
  readonly measured: string;
  readonly holds: boolean;
  /**
   * The line and the figures behind `measured`, so that runs can be pooled (bench/pool.ts). Absent
   * for a target that is a yes or no (D runs no task). Not written by runs before round 12; the pool
   * computes them again from each run's cells.
   */
  readonly line?: { readonly limit: number; readonly direction: LineDirection };
  readonly figures?: readonly TargetFigure[];
  /** Every variant the figures are made from: the base, the candidates and the reference. */
  readonly reads?: readonly VariantName[];
  /**
   * Set when the target misses and a bare-Temporal reference variant measured in the same run
   * misses it too, wherever this one does: the line is below what Temporal itself does here.
   */
  readonly outOfReach?: string;
  /**
   * Set when the target misses, but in every cell that misses at least one repetition held: the
   * run cannot tell this miss from its own noise. Still a miss; it says how far from the line.
   */
  readonly insideSpread?: string;
  /**
   * Set on an A/A control rather than a target: the same line read for a variant identical to B
   * (B-twin), so that its misses show how often this bench fails a line with no cost at all.
   */
  readonly control?: string;
}
