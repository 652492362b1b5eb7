import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { faultSetup, useFaultRun } from '../support/fault-run.ts';
import { agent } from '../support/harness.ts';

/**
 * A deploy stops a worker with SIGTERM: the worker stops polling, lets the tools it runs finish
 * within its shutdown grace, and exits, so no call it had started ends in doubt, and the calls it
 * had not taken go to the next worker.
 */
const run = useFaultRun('toolgate-drain-');

describe('a worker stopped by SIGTERM', () => {
  it('drains: 50 irreversible calls of a 2 s tool, stopped mid-stream, all succeed, each written once', async () => {
    const { client, startWorker, lines } = await faultSetup(run, 'drain');
    const executions = () => lines('executions.jsonl');
    const first = await startWorker({ identity: 'worker-a', stallAfterMs: { write_report: 2_000 } });
    const calls = await Promise.all(
      Array.from({ length: 50 }, (_, index) =>
        client.start(
          {
            tool: 'write_report',
            input: { path: `drain/r-${index}.md`, content: `report ${index}` },
            key: `drain-${index}`,
          },
          agent,
        ),
      ),
    );
    // Stop the worker while calls still arrive: 10 tools have written and are in their 2 s tail,
    // others are being dispatched to it, the rest wait in the queue for the next worker.
    const deadline = Date.now() + 30_000;
    while ((await executions()).filter((line) => line['event'] === 'wrote').length < 10) {
      if (Date.now() > deadline) throw new Error('10 tools did not start within 30 s');
      await sleep(20);
    }
    const stoppedAt = Date.now();
    await first.stop();
    const exitedAfterMs = Date.now() - stoppedAt;
    await startWorker({ identity: 'worker-b' });
    const records = await Promise.all(calls.map((call) => client.result(call.callId)));
    const statuses = new Map<string, number>();
    for (const record of records) {
      const key = `${record.status}/${record.effect}/${record.reason ?? '-'}`;
      statuses.set(key, (statuses.get(key) ?? 0) + 1);
    }
    console.info(
      `SIGTERM drain: exited ${exitedAfterMs} ms after SIGTERM; outcomes ${JSON.stringify([...statuses])}`,
    );
    const wrote = (await executions()).filter((line) => line['event'] === 'wrote');
    const perWorker = new Map<unknown, number>();
    for (const line of wrote) perWorker.set(line['pid'], (perWorker.get(line['pid']) ?? 0) + 1);
    console.info(
      `SIGTERM drain: reports written per worker process ${JSON.stringify([...perWorker.values()])}`,
    );
    // Each report written once (no duplicate), every call answered (none lost), none in doubt.
    expect(new Set(wrote.map((line) => line['callId'])).size).toBe(50);
    expect(wrote).toHaveLength(50);
    // The stopped worker finished what it had, within its drain grace (5 s), not at once.
    expect(exitedAfterMs).toBeGreaterThan(1_000);
    expect(exitedAfterMs).toBeLessThan(6_000);
    expect(records.filter((record) => record.effect === 'unknown')).toEqual([]);
    expect(records.every((record) => record.status === 'succeeded')).toBe(true);
  });
});
