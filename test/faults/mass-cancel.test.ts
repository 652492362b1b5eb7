import { describe, expect, inject, it } from 'vitest';
import { faultSetup, useFaultRun } from '../support/fault-run.ts';
import { cancelRound, heartbeatRequests, quantile } from '../support/mass-cancel.ts';

/**
 * Cancelling many running tools at once (test/support/mass-cancel.ts) on the dev server. Two rounds
 * in the same run, an A/A pair, show how much the figures move on their own.
 */
const run = useFaultRun('toolgate-cancel-');

describe('cancelling 100 running tools at once', () => {
  it('cancel() returns within 2 s, tools abort about a second later at worst, none succeeds after its cancel', async () => {
    const setup = await faultSetup(run, 'cancel');
    await setup.startWorker({ tuning: { maxConcurrentActivityTaskExecutions: 200 } });
    for (const round of ['round A', 'round B']) {
      const result = await cancelRound(
        { ...setup, countHeartbeats: () => heartbeatRequests(inject('temporalMetricsUrl')) },
        round,
      );
      // About three heartbeats a second per running tool (the throttle is 333 ms), not a flood.
      expect(result.heartbeatsPerToolSecond).toBeGreaterThan(2);
      expect(result.heartbeatsPerToolSecond).toBeLessThan(3.5);
      expect(result.cancels.map((cancel) => cancel.receipt.callId)).toEqual(
        result.cancels.map((cancel) => cancel.callId),
      );
      expect(Math.max(...result.returned)).toBeLessThanOrEqual(2_000);
      // Every tool saw its abort (none missing: NaN), and none ran on to its end.
      expect(result.toAbort.filter((delay) => Number.isNaN(delay))).toEqual([]);
      expect(result.finished).toEqual([]);
      expect(result.records.map((record) => `${record.status}/${record.effect}`)).toEqual(
        result.records.map(() => 'cancelled/none'),
      );
      // The aim is p99 ≤ 1 s (docs/design.md "Liveness and cancellation"). On a two-core machine
      // with the single-writer SQLite server, rounds measure 0.85–1.61 s (median 1.2 s), slower
      // late in a full CI run on a shared VM. This bound only catches a path that has stopped
      // working (the figures above are the measurement), not the aim, nor the old path (1.6–2.3 s).
      expect(quantile(result.toAbort, 0.99)).toBeLessThanOrEqual(2_500);
    }
  });
});
