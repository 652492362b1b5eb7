import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { runClosedLoop, runOpenLoop } from '../../bench/measure.ts';

describe('the bench load loops', () => {
  it('never times an open-loop call as shorter than the call itself', async () => {
    // Arrivals 3 ms apart: the loop's timers fire on whole milliseconds, so some calls leave a
    // little before their scheduled arrival. Their latency must count from when they left.
    const durations: number[] = [];
    const outcome = await runOpenLoop(
      async () => {
        await sleep(2);
        return { workflowId: 'w' };
      },
      333,
      300,
      (_outcome, calledAtMs, returnedAtMs) => durations.push(returnedAtMs - calledAtMs),
    );
    expect(outcome.operations).toBe(100);
    expect(durations).toHaveLength(100);
    const shortestCallMs = Math.min(...durations);
    // The histogram keeps 3 significant digits: allow its rounding, nothing more.
    expect(outcome.histogram.minNonZeroValue / 1000).toBeGreaterThanOrEqual(shortestCallMs * 0.999);
  });

  it('tells the observer when each call left and returned, on the wall clock', async () => {
    const seen: Array<{ id: string | undefined; calledAtMs: number; returnedAtMs: number }> = [];
    const before = performance.timeOrigin + performance.now();
    let sequence = 0;
    await runClosedLoop(
      async () => {
        await sleep(1);
        return { workflowId: `w${sequence++}` };
      },
      2,
      6,
      (outcome, calledAtMs, returnedAtMs) => seen.push({ id: outcome.workflowId, calledAtMs, returnedAtMs }),
    );
    const after = performance.timeOrigin + performance.now();
    expect(seen.map((call) => call.id).sort()).toEqual(['w0', 'w1', 'w2', 'w3', 'w4', 'w5']);
    for (const call of seen) {
      expect(call.calledAtMs).toBeGreaterThanOrEqual(before);
      expect(call.returnedAtMs).toBeGreaterThan(call.calledAtMs);
      expect(call.returnedAtMs).toBeLessThanOrEqual(after);
    }
    // Within a few seconds of Date.now(): the same clock the server stamps its events with.
    expect(Math.abs(seen[0]!.calledAtMs - Date.now())).toBeLessThan(5_000);
  });
});
