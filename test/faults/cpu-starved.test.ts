import { availableParallelism } from 'node:os';
import { describe, expect, it } from 'vitest';
import { type ChildHandle, spawnNode } from '../support/child-processes.ts';
import { faultSetup, useFaultRun } from '../support/fault-run.ts';
import { agent } from '../support/harness.ts';
import { mapLimited } from '../support/map-limited.ts';

/**
 * A worker starved of CPU must not turn calls whose tool returned into "unknown", nor run a readonly
 * tool twice. A tool of these (deadline 5 s or 30 s) has no heartbeat timeout or a 15 s one, not
 * the short one a busy machine misses (docs/design.md "Liveness and cancellation").
 */
const run = useFaultRun('toolgate-starved-');

/** One process per core that spins for the whole test. */
async function busyLoops(): Promise<ChildHandle[]> {
  return Promise.all(
    Array.from({ length: availableParallelism() }, async () => {
      const child = await spawnNode(['-e', 'console.log("SPINNING"); for (;;) {}'], 'SPINNING');
      run.children.push(child);
      return child;
    }),
  );
}

/** Seconds from the server's ActivityTaskStarted to the tool's own first log line, per call. */
async function startLagSeconds(callId: string, toolStartedAtMs: number | undefined): Promise<number> {
  if (toolStartedAtMs === undefined) return Number.NaN;
  const history = await run.temporal.workflow.getHandle(callId).fetchHistory();
  const started = (history.events ?? []).find((event) => event.activityTaskStartedEventAttributes);
  if (!started?.eventTime) return Number.NaN;
  const startedAtMs =
    Number(started.eventTime.seconds ?? 0) * 1000 + Number(started.eventTime.nanos ?? 0) / 1e6;
  return (toolStartedAtMs - startedAtMs) / 1000;
}

describe('a worker starved of CPU', () => {
  it('one busy loop per core and a 3 s stop, 200 irreversible and 50 readonly calls: none in doubt, none run twice', async () => {
    const { client, startWorker, lines } = await faultSetup(run, 'starved');
    const worker = await startWorker({ stallAfterMs: { write_report: 500 } });
    const loops = await busyLoops();
    const startedAt = Date.now();
    const writes = Array.from({ length: 200 }, (_, index) => ({
      tool: 'write_report',
      input: { path: `starved/r-${index}.md`, content: `report ${index}` },
      key: `starved-${index}`,
    }));
    const searches = Array.from({ length: 50 }, (_, index) => ({
      tool: 'slow_search',
      input: { query: `starved ${index}`, delayMs: 1_000 },
    }));
    const requests = [...writes, ...searches];
    const calling = mapLimited(requests, requests.length, (request) => client.call(request, agent));
    // Starved outright for 3 s once 100 reports are written: no heartbeat leaves the worker, as
    // under a long GC pause or a throttled container. Longer than the old 2 s heartbeat timeout,
    // shorter than the liveness window and than the tools' start-to-close (5 s + 1 s).
    const deadline = Date.now() + 60_000;
    while ((await lines('executions.jsonl')).filter((line) => line['event'] === 'wrote').length < 100) {
      if (Date.now() > deadline) throw new Error('100 reports were not written within 60 s');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    process.kill(worker.pid, 'SIGSTOP');
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    process.kill(worker.pid, 'SIGCONT');
    const records = await calling;
    const tookMs = Date.now() - startedAt;
    await Promise.all(loops.map((loop) => loop.kill()));

    const executions = await lines('executions.jsonl');
    const wrote = executions.filter((line) => line['event'] === 'wrote');
    const searchStarts = executions.filter(
      (line) => line['tool'] === 'slow_search' && line['event'] === 'start',
    );
    const firstLine = new Map<string, number>();
    for (const line of executions) {
      const callId = String(line['callId']);
      if (!firstLine.has(callId)) firstLine.set(callId, Number(line['atMs']));
    }
    const lags = await mapLimited(records, 20, (record) =>
      startLagSeconds(record.callId, firstLine.get(record.callId)),
    );
    const sorted = lags.filter((lag) => !Number.isNaN(lag)).sort((a, b) => a - b);
    const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]?.toFixed(2);
    const statuses = new Map<string, number>();
    for (const record of records) {
      const key = `${record.tool}:${record.status}/${record.effect}/${record.reason ?? '-'}`;
      statuses.set(key, (statuses.get(key) ?? 0) + 1);
    }
    console.info(
      `CPU-starved (${loops.length} busy loops): 250 calls in ${tookMs} ms; outcomes ${JSON.stringify([...statuses])}; ` +
        `server start → tool start lag p50 ${at(0.5)} s, p99 ${at(0.99)} s, max ${at(1)} s; attempts > 1: ` +
        `${records.filter((record) => record.attempts > 1).length}`,
    );

    // Every tool that returned is recorded with its real effect; nothing is in doubt.
    expect(records.filter((record) => record.effect === 'unknown')).toEqual([]);
    expect(records.every((record) => record.status === 'succeeded')).toBe(true);
    expect(wrote).toHaveLength(200);
    expect(new Set(wrote.map((line) => line['callId'])).size).toBe(200);
    // No readonly tool ran twice.
    expect(searchStarts).toHaveLength(50);
    expect(new Set(searchStarts.map((line) => line['callId'])).size).toBe(50);
  });
});
