import { fileURLToPath } from 'node:url';
import { NativeConnection } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { ToolgateClient } from '../../src/client/toolgate-client.ts';
import { type CatalogWorker, startCatalogWorker } from '../support/catalog-worker.ts';
import { createCliRunner } from '../support/cli-runner.ts';
import { agent, createHarness, type Harness } from '../support/harness.ts';
import { stubbornCatalog } from '../support/stubborn-catalog.ts';
import { createStubbornActivities } from '../support/stubborn-tools.ts';
import { waitFor } from '../support/wait.ts';

/**
 * A cancel that a tool ignores. The executor stops waiting at the tool's deadline; the call ends as
 * the caller asked (`cancelled`, never a retryable `timeout`), and for a tier that may have acted,
 * with its outcome unknown and its key kept.
 */
describe('cancelling an irreversible call whose tool ignores its signal', () => {
  let harness: Harness;
  let connection: NativeConnection;
  let client: ToolgateClient;
  let stubborn: CatalogWorker | undefined;

  beforeAll(async () => {
    harness = await createHarness({ startWorker: false });
    connection = await NativeConnection.connect({ address: inject('temporalAddress') });
    stubborn = await startCatalogWorker(harness, connection, {
      workflows: fileURLToPath(new URL('../support/workflows/stubborn-write.ts', import.meta.url)),
      catalog: stubbornCatalog,
      activities: (approvalPublicKeys) => createStubbornActivities(harness.tools, { approvalPublicKeys }),
    });
    client = stubborn.client;
  }, 120_000);
  afterAll(async () => {
    await stubborn?.stop();
    await connection?.close();
    await harness?.close();
  });

  const logged = async (callId: string, event: string) =>
    (await harness.readLines(harness.tools.paths.executionsFile)).filter(
      (line) => line['callId'] === callId && line['event'] === event,
    );

  it('ends cancelled with OUTCOME_UNKNOWN at the deadline, keeps the key, and the write lands after', async () => {
    const request = { tool: 'stubborn_write', input: { record: 'r-1', delayMs: 7_000 }, key: 'stubborn-r-1' };
    const startedAt = Date.now();
    const started = await client.start(request, agent);
    expect(started.disposition).toBe('started');
    await waitFor(async () => ((await logged(started.callId, 'start')).length > 0 ? true : undefined));

    const record = await client.cancelAndWait(started.callId);
    const elapsed = Date.now() - startedAt;
    expect(record).toMatchObject({
      status: 'cancelled',
      reason: 'OUTCOME_UNKNOWN',
      effect: 'unknown',
      tier: 'irreversible',
      attempts: 1,
    });
    expect(record.message).toContain('did not stop when asked');
    expect(record.message).toContain('check the current state first');
    // Reported at the executor's deadline (5000 ms), before the write it could not stop.
    expect(elapsed).toBeGreaterThanOrEqual(5_000);
    expect(await logged(started.callId, 'wrote')).toEqual([]);

    // The key stays taken: the same call again gets this record, and starts nothing.
    const again = await client.start(request, agent);
    expect(again.disposition).toBe('existing');
    expect(again.callId).toBe(started.callId);
    expect(again.record).toEqual(record);

    // Why the outcome is unknown rather than "nothing happened": the tool went on and wrote.
    await waitFor(async () => ((await logged(started.callId, 'wrote')).length > 0 ? true : undefined));
    expect(await logged(started.callId, 'start')).toHaveLength(1);
  });

  it('a tool that finishes before it sees the cancel: the call ends succeeded, and `toolgate cancel` says so and exits 4', async () => {
    const request = { tool: 'stubborn_write', input: { record: 'r-2', delayMs: 4_000 }, key: 'stubborn-r-2' };
    const started = await client.start(request, agent);
    await waitFor(async () => ((await logged(started.callId, 'start')).length > 0 ? true : undefined));

    const run = createCliRunner({
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TOOLGATE_DATA_DIR: harness.dataDir,
    });
    const cancel = await run('cancel', started.callId);
    // The cancel reached a running call (the write was still sleeping) ...
    expect(await logged(started.callId, 'start')).toHaveLength(1);
    // ... but the tool ignored it and wrote, so nothing was cancelled: not exit 0, and not "cancelled".
    expect(cancel.code).toBe(4);
    expect(String(cancel.json['error'])).toContain('ended succeeded before the cancel could stop it');
    expect(cancel.json['record']).toMatchObject({
      callId: started.callId,
      status: 'succeeded',
      effect: 'applied',
      output: { record: 'r-2' },
    });
    expect(await logged(started.callId, 'wrote')).toHaveLength(1);
    expect(await client.result(started.callId)).toEqual(cancel.json['record']);

    // Cancelling it again takes the already-closed path: the same exit, the same record.
    const again = await run('cancel', started.callId);
    expect(again.code).toBe(4);
    expect(String(again.json['error'])).toContain('already closed (succeeded)');
    expect(await client.cancelAndWait(started.callId)).toEqual(cancel.json['record']);
  });
});
