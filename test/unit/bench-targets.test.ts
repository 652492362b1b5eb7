import { describe, expect, it } from 'vitest';
import { checkTargets, missNote, repetitionRatios } from '../../bench/report.ts';
import type { LatencyCell } from '../../bench/result-types.ts';
import { benchCell } from '../support/bench-cells.ts';

const cell = benchCell;

function targetCheck(cells: LatencyCell[], prefix: string) {
  const results = { latency: { cells }, targets: [], incomplete: [] } as unknown as Parameters<
    typeof checkTargets
  >[0];
  return checkTargets(results).find((check) => check.target.startsWith(prefix));
}

const fastPathCheck = (cells: LatencyCell[]) => targetCheck(cells, 'fastest readonly path');

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

  it("measures C's lines against B-idx, bare Temporal storing and indexing a call as toolgate must", () => {
    const withFloor = (floorP50: number) =>
      targetCheck(
        [
          cell('B', 'c1', 20),
          cell('C', 'c1', 23),
          cell('B-idx', 'c1', floorP50),
          cell('B', 'c4', 50),
          cell('C', 'c4', 52),
          cell('B-idx', 'c4', 51),
        ],
        'C p50',
      );
    // The floor misses the line too where C misses it: out of reach, with the floor's figure shown.
    const floorMisses = withFloor(22.4);
    expect(floorMisses).toMatchObject({ holds: false });
    expect(floorMisses?.measured).toBe('c1: 1.15× ✗ [B-idx 1.12×], c4: 1.04× [B-idx 1.02×]');
    expect(floorMisses?.outOfReach).toContain('B-idx');
    // The floor holds where C misses: the gates' own cost takes C over, so it is a plain miss.
    const floorHolds = withFloor(21);
    expect(floorHolds).toMatchObject({ holds: false });
    expect(floorHolds?.outOfReach).toBeUndefined();
    // The throughput line reads the same reference.
    const throughput = targetCheck(
      [cell('B', 'c1', 20), cell('C', 'c1', 25), cell('B-idx', 'c1', 24)],
      'C throughput',
    );
    expect(throughput?.measured).toBe('c1: 0.80× ✗ [B-idx 0.83×]');
    expect(throughput?.outOfReach).toContain('B-idx');
  });

  it("pairs each repetition with B's block of the same repetition", () => {
    const base = cell('B', 'c4', 20, [20, 25, 15]);
    expect(
      repetitionRatios(cell('C', 'c4', 22, [22, 25, 18]), base, 'p50Ms').map((r) => r.toFixed(2)),
    ).toEqual(['1.10', '1.00', '1.20']);
    // A cell that lost a repetition is not paired at all rather than paired wrongly.
    expect(repetitionRatios(cell('C', 'c4', 22, [22, 25]), base, 'p50Ms')).toEqual([]);
    // Nor is one with a block whose calls all failed: its p50 reads 0, which is no figure at all.
    expect(repetitionRatios(cell('C', 'c4', 22, [22, 0, 18]), base, 'p50Ms')).toEqual([]);
    const failedBlock = targetCheck(
      [cell('B', 'c1', 20, [20, 20, 20]), cell('C', 'c1', 25, [24, 0, 26])],
      'C p50',
    );
    expect(failedBlock).toMatchObject({ holds: false, measured: 'c1: 1.25× ✗' });
    expect(failedBlock?.insideSpread).toBeUndefined();
  });

  it("says a miss is inside the run's noise only when every missing cell has a repetition that holds", () => {
    // The same miss at 1 caller (one repetition holds), with C at 4 callers as given.
    const withC4 = (p50: number, repetitions: number[]) =>
      targetCheck(
        [
          cell('B', 'c1', 20, [20, 20, 20]),
          cell('C', 'c1', 23, [21, 23, 24]),
          cell('B', 'c4', 50, [50, 50, 50]),
          cell('C', 'c4', p50, repetitions),
        ],
        'C p50',
      );
    const inside = withC4(54, [54, 56, 53]);
    expect(inside).toMatchObject({ holds: false });
    expect(inside?.measured).toBe('c1: 1.15× ✗ {repetitions 1.05–1.20×}, c4: 1.08× {repetitions 1.06–1.12×}');
    expect(inside?.insideSpread).toContain('noise');
    expect(missNote(inside!)).toContain('noise');

    const outside = withC4(60, [58, 60, 62]);
    expect(outside).toMatchObject({ holds: false });
    expect(outside?.insideSpread).toBeUndefined();
    expect(missNote(outside!)).toBe('');

    // Out of reach takes precedence: the reference says more than the spread does.
    const reach = fastPathCheck([
      cell('B', 'c1', 20, [20, 20]),
      cell('C-fast', 'c1', 14, [9, 14]),
      cell('B-LA', 'c1', 11),
    ]);
    expect(reach?.outOfReach).toContain('B-LA');
    expect(reach?.insideSpread).toBeUndefined();
  });

  it('checks that D ran nothing only in a run that made duplicate calls', () => {
    const withDuplicates = (duplicateCalls: number) =>
      checkTargets({
        latency: {
          cells: [cell('B', 'c1', 20)],
          duplicateCheck: {
            historyEventsBefore: 12,
            historyEventsAfter: 12,
            runIdUnchanged: true,
            toolExecutionsDuringD: 0,
            duplicateCalls,
          },
        },
        targets: [],
        incomplete: [],
      } as unknown as Parameters<typeof checkTargets>[0]).find((check) => check.target.startsWith('D runs'));
    // Without D the check would hold having tested nothing.
    expect(withDuplicates(0)).toBeUndefined();
    expect(withDuplicates(48)).toMatchObject({ holds: true });
  });

  it("reads C's three lines for B-twin as an A/A control, only in a run that measured it", () => {
    const cells = [cell('B', 'c1', 20), cell('C', 'c1', 21), cell('B', 'c4', 50), cell('C', 'c4', 51)];
    // Without B-twin there is no control, and no target reads it.
    expect(targetCheck(cells, 'A/A control')).toBeUndefined();
    const twin = [...cells, cell('B-twin', 'c1', 22.6), cell('B-twin', 'c4', 49)];
    const p50 = targetCheck(twin, 'A/A control: B-twin p50');
    // B itself, under a second name, can miss: 22.6 / 20 = 1.13.
    expect(p50).toMatchObject({ holds: false, measured: 'c1: 1.13× ✗, c4: 0.98×' });
    expect(p50?.control).toContain('not a target');
    expect(p50?.outOfReach).toBeUndefined();
    expect(missNote(p50!)).toContain('A/A control');
    const throughput = targetCheck(twin, 'A/A control: B-twin throughput');
    expect(throughput?.figures?.map((figure) => figure.condition)).toEqual(['c1', 'c4']);
    expect(throughput).toMatchObject({ holds: false, line: { limit: 0.9, direction: 'at least' } });
    // The issue's own targets are unchanged by it.
    expect(targetCheck(twin, 'C p50')).toMatchObject({ holds: true, reads: ['B', 'C', 'B-idx'] });
  });

  it('calls a miss at the floor when C lies no further from a holding B-idx than B-twin lies from B', () => {
    // B 20 ms, B-idx 21.6 (1.08×, holds), C 22.6 (1.13×, misses): C over B-idx is 1.046.
    const run = (twinP50?: number) =>
      targetCheck(
        [
          cell('B', 'c1', 20),
          cell('C', 'c1', 22.6),
          cell('B-idx', 'c1', 21.6),
          ...(twinP50 === undefined ? [] : [cell('B-twin', 'c1', twinP50)]),
        ],
        'C p50',
      );
    // Without an A/A control the run cannot say how far apart two identical variants land: a miss.
    expect(run()?.outOfReach).toBeUndefined();
    // B-twin 1.05× B: C lies within the run's A/A spread of its floor (1.046 <= 1.050).
    const within = run(21);
    expect(within).toMatchObject({ holds: false });
    expect(within?.measured).toBe("c1: 1.13× ✗ [B-idx 1.08×] (C over B-idx 1.046 <= B-twin's 1.050)");
    expect(within?.outOfReach).toContain('A/A spread');
    // The spread counts either way: B-twin 0.95× B is as far from B as 1.05×.
    expect(run(19)?.outOfReach).toContain('A/A spread');
    // B-twin 1.03× B: C lies beyond that spread, so the gates' own cost is a miss.
    const beyond = run(20.6);
    expect(beyond?.outOfReach).toBeUndefined();
    expect(beyond?.measured).toBe('c1: 1.13× ✗ [B-idx 1.08×]');
    // Throughput is read on its own side: C below B-idx, against B-twin's distance from B.
    const throughput = (twinP50: number) =>
      targetCheck(
        [cell('B', 'c4', 20), cell('C', 'c4', 23), cell('B-idx', 'c4', 22), cell('B-twin', 'c4', twinP50)],
        'C throughput',
      );
    // C 0.87× B, B-idx 0.91× (holds); B-idx over C 1.045.
    expect(throughput(21)?.outOfReach).toContain('A/A spread');
    expect(throughput(20.4)?.outOfReach).toBeUndefined();
  });

  it('reads the fastest readonly path only where C-fast was measured, never from C alone', () => {
    // A run of B and C only (say --variants B,C) has C at 1.05×: that is not the fast path missing.
    const withoutFast = [cell('B', 'c1', 20), cell('C', 'c1', 21), cell('B', 'c4', 50), cell('C', 'c4', 52)];
    expect(fastPathCheck(withoutFast)).toBeUndefined();
    // With C-fast in one condition only, that condition is read, and the best of the three wins.
    const partly = fastPathCheck([...withoutFast, cell('C-fast', 'c4', 24), cell('C-E', 'c4', 20)]);
    expect(partly).toMatchObject({ holds: true, measured: 'c4: 0.40× (C-E)' });
    expect(partly?.figures?.map((figure) => figure.condition)).toEqual(['c4']);
  });

  it('reads the waiting target against B-idx measured beside C: out of reach only when the floor misses too', () => {
    const p99 = (p99Ms: number) => ({
      count: 1_200,
      p50Ms: p99Ms / 2,
      p90Ms: p99Ms,
      p99Ms,
      maxMs: p99Ms,
      meanMs: p99Ms / 2,
    });
    const waitingCheck = (cUnloaded: number, cWaiting: number, floor?: [number, number]) => {
      const waiting = {
        cacheSize: 100,
        levels: [{ waiting: 10_000, secondsToStart: 40, workerRssMb: 500 }],
        resumeCached: p99(20),
        resumeEvicted: p99(30),
        callUnloaded: p99(cUnloaded),
        callWhileWaiting: p99(cWaiting),
        callAfterDrain: p99(cWaiting),
        ...(floor
          ? { bareCalls: { 'B-idx': { unloaded: p99(floor[0]), whileWaiting: p99(floor[1]) } } }
          : {}),
        approvedCalls: 9_980,
        secondsToApproveAll: 170,
        approvalsPerSecond: 58,
        approvalErrors: 0,
      };
      const results = { waiting, targets: [], incomplete: [] } as unknown as Parameters<
        typeof checkTargets
      >[0];
      return checkTargets(results).find((check) => check.target.startsWith('C p99 with 10000 waiting'));
    };

    // C 1.50×, B-idx beside it 1.80×: a miss that bare Temporal makes too.
    const floorMisses = waitingCheck(100, 150, [100, 180]);
    expect(floorMisses).toMatchObject({ holds: false });
    expect(floorMisses?.outOfReach).toContain('B-idx');
    expect(floorMisses?.measured).toContain('[B-idx beside it: 180 vs 100 ms (1.80×)]');
    expect(floorMisses?.figures).toEqual([
      { condition: '10000 waiting', value: 1.5, reference: { variant: 'B-idx', value: 1.8 } },
    ]);
    expect(missNote(floorMisses!)).toContain('out of reach');

    // B-idx held (1.10×) where C missed: toolgate's own miss.
    const floorHolds = waitingCheck(100, 150, [100, 110]);
    expect(floorHolds).toMatchObject({ holds: false });
    expect(floorHolds?.outOfReach).toBeUndefined();

    // No floor measured (--waiting-bare none, or a run before round 27): a plain miss, no reference.
    const alone = waitingCheck(100, 150);
    expect(alone).toMatchObject({ holds: false, figures: [{ condition: '10000 waiting', value: 1.5 }] });
    expect(alone?.outOfReach).toBeUndefined();
    expect(alone?.measured).not.toContain('beside it');

    expect(waitingCheck(100, 110, [100, 180])).toMatchObject({ holds: true });
    expect(waitingCheck(100, 110, [100, 180])?.outOfReach).toBeUndefined();
  });
});
