import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { exampleCatalog } from '../../examples/contracts.ts';
import { NoWorkerAnsweredError, ToolgateClient } from '../../src/client/toolgate-client.ts';
import { createCliRunner } from '../support/cli-runner.ts';
import { agent, createHarness, type Harness } from '../support/harness.ts';

/**
 * Waiting on a call that no worker serves. A library caller waits for as long as it takes; a
 * caller that asks for it (the CLI does) is told, after a while, that no worker polls the call's
 * task queue, and the call stays open to run when one comes.
 */
describe('waiting on a call that no worker serves', () => {
  let harness: Harness;
  let connection: Connection;
  let orphanClient: ToolgateClient;
  const opened: string[] = [];

  beforeAll(async () => {
    harness = await createHarness();
    connection = await Connection.connect({ address: inject('temporalAddress') });
    orphanClient = new ToolgateClient({
      client: new Client({ connection }),
      taskQueue: `no-worker-${randomUUID()}`,
      catalog: exampleCatalog,
    });
  }, 120_000);
  afterAll(async () => {
    for (const callId of opened) {
      await orphanClient.temporal.workflow
        .getHandle(callId)
        .terminate('test cleanup')
        .catch(() => undefined);
    }
    await connection?.close();
    await harness?.close();
  });

  it('gives up with NoWorkerAnsweredError naming the queue, and the call stays open', async () => {
    const started = await orphanClient.start({ tool: 'read_config', input: { name: 'region' } }, agent);
    opened.push(started.callId);
    const startedAt = Date.now();
    const waiting = orphanClient.result(started.callId, started.runId, { noWorkerAfterMs: 1_500 });
    await expect(waiting).rejects.toBeInstanceOf(NoWorkerAnsweredError);
    await expect(waiting).rejects.toThrow(`No worker has polled task queue "${orphanClient.taskQueue}"`);
    expect(Date.now() - startedAt).toBeLessThan(15_000);
    const description = await orphanClient.temporal.workflow.getHandle(started.callId).describe();
    expect(description.status.name).toBe('RUNNING');
    // cancel waits the same way: the cancel is asked for, but nothing can carry it out.
    await expect(
      orphanClient.cancelAndWait(started.callId, { noWorkerAfterMs: 1_500 }),
    ).rejects.toBeInstanceOf(NoWorkerAnsweredError);
  });

  it('the CLI: call and cancel exit 6 with what to do, instead of hanging, and the call stays open', async () => {
    const run = createCliRunner({
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TOOLGATE_TASK_QUEUE: orphanClient.taskQueue,
      TOOLGATE_DATA_DIR: harness.dataDir,
    });
    const called = await run('call', 'read_config', '--input', '{"name":"region"}', '--tenant', 'cli-orphan');
    expect(called.code, called.stderr).toBe(6);
    expect(String(called.json['error'])).toMatch(/No worker has polled task queue .* The call stays open/);
    const callId = String(called.json['error']).match(/toolgate get (\S+)$/)?.[1];
    expect(callId).toMatch(/^toolgate\/cli-orphan\/read_config\//);
    opened.push(callId!);
    expect((await orphanClient.temporal.workflow.getHandle(callId!).describe()).status.name).toBe('RUNNING');
    const cancelled = await run('cancel', callId!);
    expect(cancelled.code, cancelled.stderr).toBe(6);
    expect(String(cancelled.json['error'])).toContain('No worker has polled task queue');
  }, 90_000);

  it('keeps waiting while a worker polls, for a call longer than the limit', async () => {
    const started = await harness.client.start(
      { tool: 'slow_search', input: { query: 'q', delayMs: 4_000 } },
      agent,
    );
    const record = await harness.client.result(started.callId, started.runId, { noWorkerAfterMs: 1_000 });
    expect(record).toMatchObject({ status: 'succeeded' });
  });

  it('a long wait with a live worker leaves no listener behind per look (no leak warning)', async () => {
    // The watchdog looks every 2 s; before, each look left an abort listener on the wait's signal,
    // and past ten Node warned of a leak (as `toolgate call` did while a human took their time).
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(`${warning.name}: ${warning.message}`);
    process.on('warning', onWarning);
    try {
      const started = await harness.client.start(
        { tool: 'slow_search', input: { query: 'long', delayMs: 25_000 } },
        agent,
      );
      const record = await harness.client.result(started.callId, started.runId, { noWorkerAfterMs: 1_000 });
      expect(record).toMatchObject({ status: 'succeeded' });
      expect(warnings.filter((warning) => warning.includes('MaxListenersExceeded'))).toEqual([]);
    } finally {
      process.off('warning', onWarning);
    }
  }, 60_000);
});
