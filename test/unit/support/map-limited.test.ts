import { describe, expect, it } from 'vitest';
import { mapLimited } from '../../support/map-limited.ts';

const tick = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('mapLimited (test support)', () => {
  it('keeps the order of the items and never runs more than the limit at once', async () => {
    let inFlight = 0;
    let peak = 0;
    const results = await mapLimited([5, 1, 4, 2, 3, 0], 2, async (item, index) => {
      inFlight++;
      peak = Math.max(peak, inFlight);
      await tick(item * 3);
      inFlight--;
      return `${index}:${item}`;
    });
    expect(results).toEqual(['0:5', '1:1', '2:4', '3:2', '4:3', '5:0']);
    expect(peak).toBe(2);
  });

  it('starts nothing after a failure, waits for the items in flight, and names the failed item', async () => {
    const started: number[] = [];
    const finished: number[] = [];
    const outcome = mapLimited([0, 1, 2, 3, 4, 5, 6, 7], 3, async (item) => {
      started.push(item);
      if (item === 1) throw new Error('boom');
      await tick(30);
      finished.push(item);
      return item;
    });
    await expect(outcome).rejects.toThrow('item 1 of 8 (1) failed: boom');
    // Items 0 and 2 were in flight when 1 failed: they finished before the error was thrown.
    expect(finished.sort()).toEqual([0, 2]);
    expect(started.sort()).toEqual([0, 1, 2]);
  });

  it('throws the failure after a bounded wait when an item in flight never finishes', async () => {
    const outcome = mapLimited(
      ['hangs', 'fails'],
      2,
      (item) => (item === 'hangs' ? new Promise<never>(() => undefined) : Promise.reject(new Error('no'))),
      { settleAfterFailureMs: 50 },
    );
    await expect(outcome).rejects.toThrow('item 1 of 2 (fails) failed (1 still in flight after 50 ms): no');
  });

  it('returns an empty list for no items', async () => {
    expect(await mapLimited([], 4, async () => 1)).toEqual([]);
  });
});
