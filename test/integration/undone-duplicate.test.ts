import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exampleCatalog } from '../../examples/contracts.ts';
import { runOneToolCall } from '../../src/agent/run-tool-calls.ts';
import { ToolgateOperations } from '../../src/client/operations.ts';
import { agent, createHarness, type Harness } from '../support/harness.ts';
import { waitFor } from '../support/wait.ts';

describe('a duplicate of an undone reversible call', () => {
  let harness: Harness;
  let operations: ToolgateOperations;
  beforeAll(async () => {
    harness = await createHarness();
    operations = new ToolgateOperations({ client: harness.client, catalog: exampleCatalog });
  });
  afterAll(async () => harness?.close());

  const labels = async () =>
    JSON.parse(await readFile(harness.tools.paths.labelsFile, 'utf8')) as Record<string, string[]>;

  /** A keyed add_label call on a fresh item that has succeeded and applied its label. */
  const labelled = async () => {
    const key = `undo-dup-${randomUUID()}`;
    const item = `ticket-${randomUUID().slice(0, 8)}`;
    const request = { tool: 'add_label', input: { item, label: 'vip' }, key };
    const record = await harness.client.call(request, agent);
    expect(record.status).toBe('succeeded');
    expect(record.effect).toBe('applied');
    expect((await labels())[item]).toEqual(['vip']);
    return { key, item, request, record };
  };

  it('start and runOneToolCall report the undo, and the effect is not applied again', async () => {
    const { key, item, request, record } = await labelled();

    // Before the undo, a duplicate gets the stored record, with no undo.
    const before = await harness.client.start(request, agent);
    expect(before.disposition).toBe('existing');
    expect(before.record?.undo).toBeUndefined();

    const undone = await operations.undo(record.callId, { operator: 'oscar' });
    expect(undone.undone).toBe(true);
    expect((await labels())[item]).toEqual([]);

    // The library's duplicate says what get says: the call succeeded, and oscar undid it since.
    const duplicate = await harness.client.start(request, agent);
    expect(duplicate.disposition).toBe('existing');
    expect(duplicate.runId).toBe(record.runId);
    expect(duplicate.record?.status).toBe('succeeded');
    expect(duplicate.record?.undo).toMatchObject({ operator: 'oscar', status: 'succeeded' });
    expect(duplicate.record).toEqual(await operations.get(record.callId));

    // The agent adapter tells the model the effect was reversed, not that it is in place.
    const outcome = await runOneToolCall(
      { id: 'toolu_undone', name: 'add_label', input: { item, label: 'vip' } },
      { client: harness.client, context: agent, catalog: exampleCatalog, keyFor: () => key },
    );
    expect(outcome.state).toBe('closed');
    expect(outcome.callId).toBe(record.callId);
    expect(outcome.record?.undo?.status).toBe('succeeded');
    expect(outcome.isError).toBe(true);
    expect(outcome.text).toMatch(/^Undone: /);
    expect(outcome.text).toContain(`undone it at ${new Date(duplicate.record!.undo!.at).toISOString()}`);
    expect(outcome.text).toContain('Do not assume the effect is in place.');
    expect(outcome.text).toContain('Making this same call again will not redo it');

    // As the text says: neither duplicate ran the tool again, and the label stays removed.
    const runs = (await harness.readLines(harness.tools.paths.executionsFile)).filter(
      (line) => line['callId'] === record.callId,
    );
    expect(runs.map((line) => line['tool'])).toEqual(['add_label', 'remove_label']);
    expect((await labels())[item]).toEqual([]);
  });

  it('while the undo runs, a duplicate says so, and once it is done, that it is undone', async () => {
    const { key, item, request, record } = await labelled();

    // No worker: the undo starts and stays running until one comes.
    await harness.stopWorker();
    const undoing = operations.undo(record.callId, { operator: 'olga' });
    try {
      await waitFor(async () => {
        const description = await harness.temporal.workflow
          .getHandle(`${record.callId}/undo`)
          .describe()
          .catch(() => undefined);
        return description?.status.name === 'RUNNING' ? true : undefined;
      });
      const duplicate = await harness.client.start(request, agent);
      expect(duplicate.disposition).toBe('existing');
      expect(duplicate.record?.undo).toMatchObject({ operator: 'olga', status: 'running' });
      const outcome = await runOneToolCall(
        { id: 'toolu_undoing', name: 'add_label', input: { item, label: 'vip' } },
        { client: harness.client, context: agent, catalog: exampleCatalog, keyFor: () => key },
      );
      expect(outcome.isError).toBe(true);
      expect(outcome.text).toMatch(/^Being undone: /);
      expect(outcome.text).toContain('Do not assume the effect is in place.');
    } finally {
      await harness.startWorker();
    }
    expect((await undoing).undone).toBe(true);
    const after = await harness.client.start(request, agent);
    expect(after.record?.undo).toMatchObject({ operator: 'olga', status: 'succeeded' });
    expect((await labels())[item]).toEqual([]);
  });

  it('an undo terminated before it reported counts as failed, everywhere, and may be tried again', async () => {
    const { key, item, request, record } = await labelled();

    // No worker, so the compensation never starts; an operator terminates the undo meanwhile.
    await harness.stopWorker();
    const undoing = operations.undo(record.callId, { operator: 'ursula' });
    const undoHandle = harness.temporal.workflow.getHandle(`${record.callId}/undo`);
    try {
      await waitFor(async () => {
        const description = await undoHandle.describe().catch(() => undefined);
        return description?.status.name === 'RUNNING' ? true : undefined;
      });
      await undoHandle.terminate('stuck');
      const outcome = await undoing;
      expect(outcome.undone).toBe(false);
      expect(outcome.undo).toMatchObject({ operator: 'ursula', status: 'failed' });
      expect(outcome.undone === false && outcome.refusal).toMatch(/^The undo workflow was terminated before/);

      // The read of the call and a duplicate say the same: not a missing undo, a failed one.
      const read = await operations.get(record.callId);
      expect(read?.undo).toMatchObject({ operator: 'ursula', status: 'failed' });
      expect(read?.undo?.message).toContain('the compensation may have run in part, or not at all');
      const duplicate = await harness.client.start(request, agent);
      expect(duplicate.record?.undo).toEqual(read?.undo);
      const told = await runOneToolCall(
        { id: 'toolu_undo_terminated', name: 'add_label', input: { item, label: 'vip' } },
        { client: harness.client, context: agent, catalog: exampleCatalog, keyFor: () => key },
      );
      expect(told.text).toContain('the undo failed, so its effect may still be in place');
      // It was: the compensation never ran.
      expect((await labels())[item]).toEqual(['vip']);
    } finally {
      await harness.startWorker();
    }
    const again = await operations.undo(record.callId, { operator: 'ursula' });
    expect(again.undone).toBe(true);
    expect((await labels())[item]).toEqual([]);
    expect((await operations.get(record.callId))?.undo).toMatchObject({ status: 'succeeded' });
  });
});
