import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { faultSetup, useFaultRun } from '../support/fault-run.ts';
import { agent } from '../support/harness.ts';
import { mapLimited } from '../support/map-limited.ts';

/**
 * Two worker processes on one data directory, as two replicas on one volume: every add_label lands,
 * because each read-modify-write of the label store holds a lock file, not only a queue in its own
 * process.
 */
const run = useFaultRun('toolgate-labels-');

describe('the example label store shared by two worker processes', () => {
  it('keeps all of 100 labels added at once through both workers', async () => {
    const { client, startWorker, lines, dataDir } = await faultSetup(run, 'labels');
    await startWorker({ identity: 'replica-a' });
    await startWorker({ identity: 'replica-b' });
    const labels = Array.from({ length: 100 }, (_, index) => `label-${index}`);
    const records = await mapLimited(labels, labels.length, (label) =>
      client.call(
        { tool: 'add_label', input: { item: 'shared-item', label }, key: `labels-${label}` },
        agent,
      ),
    );
    expect(records.filter((record) => record.status !== 'succeeded')).toEqual([]);
    const added = (await lines('executions.jsonl')).filter((line) => line['event'] === 'added');
    const perProcess = new Map<unknown, number>();
    for (const line of added) perProcess.set(line['pid'], (perProcess.get(line['pid']) ?? 0) + 1);
    console.info(`labels: added per worker process ${JSON.stringify([...perProcess.values()])}`);
    // Both replicas did part of the work, or the test would not show anything about sharing.
    expect(perProcess.size).toBe(2);
    const stored = JSON.parse(await readFile(join(dataDir, 'labels.json'), 'utf8')) as Record<
      string,
      string[]
    >;
    expect(stored['shared-item']).toEqual([...labels].sort());
  });
});
