import { describe, expect, it } from 'vitest';
import type { BenchResults, LatencyCell } from '../../bench/result-types.ts';
import { checkTargets, missNote, repetitionRatios } from '../../bench/targets.ts';
import { benchCell as cell } from '../support/bench-cells.ts';

function targetCheck(cells: LatencyCell[], prefix: string) {
  const results = { latency: { cells }, targets: [], incomplete: [] } as unknown as BenchResults;
  return checkTargets(results).find((check) => check.target.startsWith(prefix));
}

describe('the bench target checks', () => {
  it('marks a miss within noise when it lies no further past the line than B-twin lies from B', () => {
    // B 20 ms, C 22.6 ms: 1.13× B, 1.027× past the 1.10× line.
    const run = (twinP50?: number) =>
      targetCheck(
        [cell('B', 'c1', 20), cell('C', 'c1', 22.6), ...(twinP50 ? [cell('B-twin', 'c1', twinP50)] : [])],
        'C p50',
      );
    // B-twin 1.05× B: the run's two identical variants land further apart than C lies past the line.
    const within = run(21);
    expect(within).toMatchObject({
      holds: false,
      measured: "c1: 1.13× ✗ (within noise: 1.027× past the line, B-twin's spread 1.050×)",
    });
    expect(within?.note).toContain('within noise');
    expect(missNote(within!)).toContain('within noise');
    // The spread counts either way: B-twin at 0.95× B is as far from 1.00 as 1.053×.
    expect(run(19)?.note).toContain('within noise');
    // B-twin 1.02× B: C lies beyond the run's noise, a plain miss.
    const beyond = run(20.4);
    expect(beyond).toMatchObject({
      holds: false,
      measured: "c1: 1.13× ✗ (1.027× past the line, beyond B-twin's spread 1.020×)",
    });
    expect(beyond?.note).toBeUndefined();
    expect(missNote(beyond!)).toBe('');
    // Without the A/A control the run cannot say how far apart two identical variants land.
    expect(run()).toMatchObject({ holds: false, measured: 'c1: 1.13× ✗' });
    expect(run()?.note).toBeUndefined();
  });

  it('calls a target within noise only when every cell that misses is', () => {
    const cells = [
      cell('B', 'c1', 20),
      cell('C', 'c1', 22.6),
      cell('B-twin', 'c1', 21),
      cell('B', 'c4', 50),
      cell('C', 'c4', 60),
      cell('B-twin', 'c4', 51),
    ];
    const check = targetCheck(cells, 'C p50');
    expect(check?.measured).toContain('c1: 1.13× ✗ (within noise');
    expect(check?.measured).toContain("c4: 1.20× ✗ (1.091× past the line, beyond B-twin's spread 1.020×)");
    expect(check?.note).toBeUndefined();
  });

  it('reads the throughput line on its own side: below the line, against B-twin either way', () => {
    // C at 23 ms against B's 20: 0.87× B's throughput, 1.035× short of the 0.90× line.
    const throughput = (twinP50: number) =>
      targetCheck([cell('B', 'c4', 20), cell('C', 'c4', 23), cell('B-twin', 'c4', twinP50)], 'C throughput');
    expect(throughput(21)?.note).toContain('within noise');
    expect(throughput(20.4)?.note).toBeUndefined();
    // The open loop's throughput is the arrival rate: never read.
    const open = targetCheck([cell('B', 'open', 20), cell('C', 'open', 30)], 'C throughput');
    expect(open).toBeUndefined();
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
    expect(failedBlock?.note).toBeUndefined();
  });

  it("says a miss is inside the run's noise only when every missing cell has a repetition that holds", () => {
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
    expect(inside?.note).toContain("inside this run's noise");
    expect(missNote(inside!)).toContain('noise');

    const outside = withC4(60, [58, 60, 62]);
    expect(outside).toMatchObject({ holds: false });
    expect(outside?.note).toBeUndefined();
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
      } as unknown as BenchResults).find((check) => check.target.startsWith('D runs'));
    // Without D the check would hold having tested nothing.
    expect(withDuplicates(0)).toBeUndefined();
    expect(withDuplicates(48)).toMatchObject({ holds: true });
  });

  it("reads C's three lines for B-twin as A/A controls, only in a run that measured it", () => {
    const cells = [cell('B', 'c1', 20), cell('C', 'c1', 21), cell('B', 'c4', 50), cell('C', 'c4', 51)];
    expect(targetCheck(cells, 'A/A control')).toBeUndefined();
    const twin = [...cells, cell('B-twin', 'c1', 22.6), cell('B-twin', 'c4', 49)];
    const p50 = targetCheck(twin, 'A/A control: B-twin p50');
    // B itself, under a second name, can miss: 22.6 / 20 = 1.13. It is judged against nothing.
    expect(p50).toMatchObject({ holds: false, measured: 'c1: 1.13× ✗, c4: 0.98×' });
    expect(p50?.control).toContain('not a target');
    expect(p50?.note).toBeUndefined();
    expect(missNote(p50!)).toContain('A/A control');
    expect(targetCheck(twin, 'A/A control: B-twin throughput')).toMatchObject({ holds: false });
    expect(targetCheck(twin, 'C p50')).toMatchObject({ holds: true, measured: 'c1: 1.05×, c4: 1.02×' });
  });

  it('reads the fastest readonly path from C-fast, and only where C-fast was measured', () => {
    const withoutFast = [cell('B', 'c1', 20), cell('C', 'c1', 9), cell('B', 'c4', 50), cell('C', 'c4', 52)];
    expect(targetCheck(withoutFast, 'fastest readonly path')).toBeUndefined();
    const partly = targetCheck([...withoutFast, cell('C-fast', 'c4', 24)], 'fastest readonly path');
    expect(partly).toMatchObject({ holds: true, measured: 'c4: 0.48×' });
  });

  it("reads C's tail while calls wait beside B's, and says when B grew as much", () => {
    const p99 = (p99Ms: number) => ({
      count: 1_200,
      p50Ms: p99Ms / 2,
      p90Ms: p99Ms,
      p99Ms,
      maxMs: p99Ms,
      meanMs: p99Ms / 2,
    });
    const waitingCheck = (cUnloaded: number, cWaiting: number, b?: [number, number]) => {
      const waiting = {
        cacheSize: 100,
        levels: [{ waiting: 10_000, secondsToStart: 40, workerRssMb: 500 }],
        resumeCached: p99(20),
        resumeEvicted: p99(30),
        callUnloaded: p99(cUnloaded),
        callWhileWaiting: p99(cWaiting),
        callAfterDrain: p99(cWaiting),
        ...(b ? { bBesideC: { unloaded: p99(b[0]), whileWaiting: p99(b[1]) } } : {}),
        approvedCalls: 9_980,
        secondsToApproveAll: 170,
        approvalsPerSecond: 58,
        approvalErrors: 0,
      };
      const results = { waiting, targets: [], incomplete: [] } as unknown as BenchResults;
      return checkTargets(results).find((check) => check.target.startsWith('C p99 with 10000 waiting'));
    };
    // C 1.50×, B beside it 1.80×: the dev server's tail grew for bare Temporal too.
    const bGrew = waitingCheck(100, 150, [100, 180]);
    expect(bGrew).toMatchObject({ holds: false });
    expect(bGrew?.measured).toContain('[B beside it: 180 vs 100 ms (1.80×)]');
    expect(bGrew?.note).toContain('grew as much');
    // B held (1.10×) where C missed: C's own miss.
    expect(waitingCheck(100, 150, [100, 110])?.note).toBeUndefined();
    // Without B beside it: a plain miss.
    const alone = waitingCheck(100, 150);
    expect(alone).toMatchObject({ holds: false });
    expect(alone?.measured).not.toContain('beside it');
    expect(waitingCheck(100, 110, [100, 180])).toMatchObject({ holds: true });
  });
});
