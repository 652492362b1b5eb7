import { describe, expect, it } from 'vitest';
import { checkTargets } from '../../bench/report.ts';
import type { LatencyCell, VariantName } from '../../bench/result-types.ts';

/** A cell with only the figures the target checks read. */
function cell(variant: VariantName, condition: string, p50Ms: number): LatencyCell {
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
    repetitions: [],
  };
}

function fastPathCheck(cells: LatencyCell[]) {
  const results = { latency: { cells }, targets: [], incomplete: [] } as unknown as Parameters<
    typeof checkTargets
  >[0];
  return checkTargets(results).find((check) => check.target.startsWith('fastest readonly path'));
}

describe('the bench target checks', () => {
  it('calls a missed target out of reach only when the bare reference misses it too', () => {
    const bareMisses = fastPathCheck([
      cell('B', 'c1', 20),
      cell('C-fast', 'c1', 14),
      cell('B-LA', 'c1', 11),
      cell('B', 'open', 30),
      cell('C-fast', 'open', 12),
      cell('B-LA', 'open', 10),
    ]);
    expect(bareMisses).toMatchObject({ holds: false });
    expect(bareMisses?.outOfReach).toContain('B-LA');
    expect(bareMisses?.measured).toBe('c1: 0.70× (C-fast) ✗ [B-LA 0.55×], open: 0.40× (C-fast) [B-LA 0.33×]');

    const bareHolds = fastPathCheck([cell('B', 'c1', 20), cell('C-fast', 'c1', 14), cell('B-LA', 'c1', 9)]);
    expect(bareHolds).toMatchObject({ holds: false });
    expect(bareHolds?.outOfReach).toBeUndefined();

    const noReference = fastPathCheck([cell('B', 'c1', 20), cell('C-fast', 'c1', 14)]);
    expect(noReference).toMatchObject({ holds: false, measured: 'c1: 0.70× (C-fast) ✗' });
    expect(noReference?.outOfReach).toBeUndefined();

    const holds = fastPathCheck([cell('B', 'c1', 20), cell('C-fast', 'c1', 9), cell('B-LA', 'c1', 11)]);
    expect(holds).toMatchObject({ holds: true });
    expect(holds?.outOfReach).toBeUndefined();
  });
});
