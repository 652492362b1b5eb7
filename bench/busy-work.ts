/**
 * A measured amount of plain CPU work, for the `B-idx+cpu` probe: B-idx with extra work placed where
 * C's gates put theirs (the caller before its start, the workflow's first turn, the activity). It
 * answers one question: does the same amount of extra CPU, on the same threads, cost bare Temporal
 * what the gates cost C, at 1 caller and in the open loop?
 *
 * The work is counted in iterations, not timed, so the workflow can run it deterministically. The
 * runner calibrates iterations per millisecond once, on its main thread, before any block.
 */

/** Where the probe's extra work goes, in milliseconds of this machine's CPU per call. */
export interface BusyWork {
  readonly callerMs: number;
  readonly workflowMs: number;
  readonly activityMs: number;
}

/** The split used unless `--busy-ms` says otherwise (see docs/benchmarks.md, round 16). */
export const defaultBusyWork: BusyWork = { callerMs: 0.5, workflowMs: 1, activityMs: 0.5 };

// Taken once: inside the workflow sandbox every read of a global such as `Math` goes through the
// V8 context's interceptor, which made a loop over `Math.imul` about 190 times slower there.
const imul = Math.imul;

/** Runs `iterations` rounds of integer hashing and returns the hash, so the loop cannot be elided. */
export function spin(iterations: number): number {
  let hash = 2166136261;
  for (let index = 0; index < iterations; index++) {
    hash = imul(hash ^ index, 16777619) >>> 0;
  }
  return hash;
}

/** Iterations of `spin` per millisecond on this thread: the median of several timed runs. */
export function calibrateSpin(now: () => number): number {
  const iterations = 2_000_000;
  const rates: number[] = [];
  spin(iterations); // warm the JIT
  for (let run = 0; run < 7; run++) {
    const startedAt = now();
    const hash = spin(iterations);
    const elapsed = now() - startedAt;
    if (hash === 0.5) throw new Error('unreachable: spin returns an integer');
    rates.push(iterations / Math.max(elapsed, 0.001));
  }
  rates.sort((a, b) => a - b);
  return Math.round(rates[Math.floor(rates.length / 2)] as number);
}
