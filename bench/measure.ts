import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import * as hdr from 'hdr-histogram-js';

/** Latencies are recorded in microseconds, from 1 µs to 10 minutes, with 3 significant digits. */
export function newHistogram(): hdr.Histogram {
  return hdr.build({
    lowestDiscernibleValue: 1,
    highestTrackableValue: 600_000_000,
    numberOfSignificantValueDigits: 3,
  });
}

/** What one operation reports besides its latency. */
export interface OperationOutcome {
  /** The workflow the operation drove, for fetching one history per variant. */
  readonly workflowId?: string;
  /** Whether the server started the workflow eagerly on this process's worker. */
  readonly eagerlyStarted?: boolean;
}

export type Operation = (sequence: number) => Promise<OperationOutcome>;

/**
 * Told about every operation that succeeded, with when it was called and when it returned, in
 * milliseconds since the epoch on the clock the server's event times use.
 */
export type CallObserver = (outcome: OperationOutcome, calledAtMs: number, returnedAtMs: number) => void;

export interface RunOutcome {
  readonly histogram: hdr.Histogram;
  readonly operations: number;
  readonly errors: number;
  readonly firstError?: string;
  readonly elapsedMs: number;
  readonly eagerRequested: number;
  readonly eagerStarted: number;
}

interface Tally {
  histogram: hdr.Histogram;
  operations: number;
  errors: number;
  firstError?: string;
  eagerRequested: number;
  eagerStarted: number;
}

function newTally(): Tally {
  return { histogram: newHistogram(), operations: 0, errors: 0, eagerRequested: 0, eagerStarted: 0 };
}

async function timed(
  operation: Operation,
  sequence: number,
  startedAt: number,
  tally: Tally,
  observe?: CallObserver,
): Promise<void> {
  try {
    const calledAt = performance.now();
    const outcome = await operation(sequence);
    const returnedAt = performance.now();
    observe?.(outcome, performance.timeOrigin + calledAt, performance.timeOrigin + returnedAt);
    // An open-loop call can leave up to a millisecond before its scheduled arrival (timers fire on
    // whole milliseconds); its latency then counts from when it left, never from after that.
    const from = Math.min(startedAt, calledAt);
    tally.histogram.recordValue(Math.max(1, Math.round((returnedAt - from) * 1000)));
    tally.operations++;
    if (outcome.eagerlyStarted !== undefined) {
      tally.eagerRequested++;
      if (outcome.eagerlyStarted) tally.eagerStarted++;
    }
  } catch (error) {
    tally.errors++;
    tally.firstError ??= error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  }
}

/** Closed loop: `concurrency` callers, each starting its next operation as soon as one returns. */
export async function runClosedLoop(
  operation: Operation,
  concurrency: number,
  count: number,
  observe?: CallObserver,
): Promise<RunOutcome> {
  const tally = newTally();
  let next = 0;
  const startedAt = performance.now();
  const caller = async () => {
    for (;;) {
      const sequence = next++;
      if (sequence >= count) return;
      await timed(operation, sequence, performance.now(), tally, observe);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, caller));
  return { ...tally, elapsedMs: performance.now() - startedAt };
}

/**
 * Open loop: operations arrive at a fixed rate whatever the latency. Latency counts from the
 * scheduled arrival, so a stall shows up in every call that queued behind it (no coordinated
 * omission), or from when the call left if that was earlier. `maximumInFlight` bounds the damage
 * if the system cannot keep up.
 */
export async function runOpenLoop(
  operation: Operation,
  ratePerSecond: number,
  durationMs: number,
  observe?: CallObserver,
  maximumInFlight = 2_000,
): Promise<RunOutcome> {
  const tally = newTally();
  const count = Math.max(1, Math.round((ratePerSecond * durationMs) / 1000));
  const intervalMs = 1000 / ratePerSecond;
  const startedAt = performance.now();
  const inFlight = new Set<Promise<void>>();
  for (let sequence = 0; sequence < count; sequence++) {
    const scheduledAt = startedAt + sequence * intervalMs;
    const waitMs = scheduledAt - performance.now();
    if (waitMs > 1) await new Promise((resolve) => setTimeout(resolve, waitMs));
    while (inFlight.size >= maximumInFlight) await Promise.race(inFlight);
    const running: Promise<void> = timed(operation, sequence, scheduledAt, tally, observe).finally(() =>
      inFlight.delete(running),
    );
    inFlight.add(running);
  }
  await Promise.all(inFlight);
  return { ...tally, elapsedMs: performance.now() - startedAt };
}

/** A latency summary in milliseconds. */
export interface LatencySummary {
  readonly count: number;
  readonly p50Ms: number;
  readonly p90Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
  readonly meanMs: number;
}

export function summarize(histogram: hdr.Histogram): LatencySummary {
  const milliseconds = (microseconds: number) => Math.round(microseconds) / 1000;
  return {
    count: histogram.totalCount,
    p50Ms: milliseconds(histogram.getValueAtPercentile(50)),
    p90Ms: milliseconds(histogram.getValueAtPercentile(90)),
    p99Ms: milliseconds(histogram.getValueAtPercentile(99)),
    maxMs: milliseconds(histogram.maxValue),
    meanMs: milliseconds(histogram.mean),
  };
}

/** Resident set size of a process in MiB, from /proc (Linux). Undefined where /proc is missing. */
export function residentMegabytes(pid: number): number | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const match = /VmRSS:\s+(\d+)\s+kB/.exec(status);
    return match ? Math.round((Number(match[1]) / 1024) * 10) / 10 : undefined;
  } catch {
    return undefined;
  }
}

/** User plus system CPU time of a process in milliseconds, from /proc/<pid>/stat (100 ticks/s). */
export function cpuMilliseconds(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name may hold spaces, so count fields from the closing parenthesis.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const userTicks = Number(fields[11]);
    const systemTicks = Number(fields[12]);
    return (userTicks + systemTicks) * 10;
  } catch {
    return undefined;
  }
}
