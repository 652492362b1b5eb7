import { renderMarkdown } from '../../bench/report.ts';
import type { LatencyCell, VariantName } from '../../bench/result-types.ts';

/**
 * A bench cell with only the figures the target checks read: p90, p99 and max equal the p50, the
 * throughput follows from it, and each repetition is given by its p50 the same way.
 */
export function benchCell(
  variant: VariantName,
  condition: string,
  p50Ms: number,
  repetitionP50s: number[] = [],
): LatencyCell {
  return {
    variant,
    condition,
    latency: { count: 100, p50Ms, p90Ms: p50Ms, p99Ms: p50Ms, maxMs: p50Ms, meanMs: p50Ms },
    throughputPerSecond: 1000 / p50Ms,
    operations: 100,
    errors: 0,
    workerCpuMsPerCall: 1,
    serverCpuMsPerCall: 1,
    workerRssMb: 1,
    serverRssMb: 1,
    eagerRequested: 0,
    eagerStarted: 0,
    repetitions: repetitionP50s.map((p50) => ({ p50Ms: p50, p99Ms: p50, throughputPerSecond: 1000 / p50 })),
  };
}

/**
 * The markdown report of a latency phase with only the given parts (cells, segments…), under a
 * fixed header: for tests of one table at a time.
 */
export function renderLatencyReport(latency: Record<string, unknown>): string {
  return renderMarkdown({
    meta: { startedAt: 'now', cores: 2, repetitions: 1, openLoopRatePerSecond: 15, openLoopDurationMs: 8000 },
    latency: { cells: [], histories: {}, duplicateCheck: {}, ...latency },
    targets: [],
  } as never);
}
