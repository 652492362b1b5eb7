import { fileURLToPath } from 'node:url';
import { NativeConnection } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { exampleAllowlist } from '../../examples/contracts.ts';
import type { ToolgateClient } from '../../src/client/toolgate-client.ts';
import { type CatalogWorker, startCatalogWorker } from '../support/catalog-worker.ts';
import { fastPathCatalog } from '../support/fast-path-catalog.ts';
import { createFastPathActivities, firstAttemptFails } from '../support/fast-path-tools.ts';
import { agent, createHarness, type Harness } from '../support/harness.ts';
import { eventTypes, markerNames } from '../support/history.ts';

/** A worker of the fast-path catalog on the harness's task queue, and a client that knows that catalog. */
function startFastPathWorker(harness: Harness, connection: NativeConnection, allow?: readonly string[]) {
  return startCatalogWorker(harness, connection, {
    workflows: fileURLToPath(new URL('../support/workflows/fast-path.ts', import.meta.url)),
    catalog: fastPathCatalog,
    activities: (approvalPublicKeys) =>
      createFastPathActivities(harness.tools, { approvalPublicKeys, ...(allow ? { allow } : {}) }),
  });
}

/**
 * The fast path: a readonly tool with `fastPath: true` runs as a local activity inside the call's
 * first workflow task. Same gates, same outcomes as the regular path; no activity task.
 */
describe('the fast path (a readonly tool run as a local activity)', () => {
  let harness: Harness;
  let connection: NativeConnection;
  let client: ToolgateClient;
  let fast: CatalogWorker | undefined;

  beforeAll(async () => {
    harness = await createHarness({ startWorker: false });
    connection = await NativeConnection.connect({ address: inject('temporalAddress') });
    fast = await startFastPathWorker(harness, connection);
    client = fast.client;
  }, 120_000);
  afterAll(async () => {
    await fast?.stop();
    await connection?.close();
    await harness?.close();
  });

  const logged = async (callId: string, event: string) =>
    (await harness.readLines(harness.tools.paths.executionsFile)).filter(
      (line) => line['callId'] === callId && line['event'] === event,
    );
  const reads = (callId: string) => logged(callId, 'read');

  it('runs the tool inside the first workflow task: no activity task, one local activity', async () => {
    const record = await client.call({ tool: 'read_config_fast', input: { name: 'region' } }, agent);
    expect(record).toMatchObject({
      status: 'succeeded',
      effect: 'none',
      tier: 'readonly',
      output: { name: 'region', value: 'eu-west' },
      attempts: 1,
    });
    expect(record.transitions.map((transition) => transition.status)).toEqual([
      'pending',
      'running',
      'succeeded',
    ]);
    const events = await eventTypes(harness.temporal, record.callId);
    expect(events).not.toContain('activityTaskScheduledEventAttributes');
    expect(events.filter((event) => event === 'workflowTaskCompletedEventAttributes')).toHaveLength(1);
    expect(await markerNames(harness.temporal, record.callId)).toEqual(['core_local_activity']);
    expect(await reads(record.callId)).toHaveLength(1);
  });

  it('refuses invalid arguments before the tool, and runs nothing', async () => {
    const record = await client.call({ tool: 'read_config_fast', input: { name: '../etc/passwd' } }, agent);
    expect(record).toMatchObject({ status: 'denied', reason: 'INVALID_INPUT', effect: 'none', attempts: 0 });
    expect(record.message).toMatch(/^Invalid arguments: name: /);
    expect(await reads(record.callId)).toEqual([]);
  });

  it('records a failure the tool vouches for as failed with effect none, not retried', async () => {
    const record = await client.call({ tool: 'read_config_fast', input: { name: 'no-such-setting' } }, agent);
    expect(record).toMatchObject({ status: 'failed', reason: 'TOOL_FAILED', effect: 'none', attempts: 1 });
    expect(record.message).toBe('There is no setting named no-such-setting.');
    expect(await reads(record.callId)).toHaveLength(1);
  });

  it('retries a retryable failure as a local activity, and succeeds on a later attempt', async () => {
    const record = await client.call({ tool: 'read_config_fast', input: { name: firstAttemptFails } }, agent);
    expect(record).toMatchObject({
      status: 'succeeded',
      effect: 'none',
      attempts: 2,
      output: { name: firstAttemptFails, value: 'attempt 2' },
    });
    expect(await logged(record.callId, 'unavailable')).toHaveLength(2);
    // Still no activity task: the retry was a local activity's.
    expect(await eventTypes(harness.temporal, record.callId)).not.toContain(
      'activityTaskScheduledEventAttributes',
    );
  });
});

describe('the fast path, with its tool left off the allowlist', () => {
  let harness: Harness;
  let connection: NativeConnection;
  let refusing: CatalogWorker | undefined;
  let client: ToolgateClient;
  beforeAll(async () => {
    harness = await createHarness({ startWorker: false });
    connection = await NativeConnection.connect({ address: inject('temporalAddress') });
    refusing = await startFastPathWorker(harness, connection, exampleAllowlist);
    client = refusing.client;
  }, 120_000);
  afterAll(async () => {
    await refusing?.stop();
    await connection?.close();
    await harness?.close();
  });

  it('denies the call as NOT_ALLOWED, and the tool never runs', async () => {
    const record = await client.call({ tool: 'read_config_fast', input: { name: 'region' } }, agent);
    expect(record).toMatchObject({ status: 'denied', reason: 'NOT_ALLOWED', effect: 'none', attempts: 0 });
    const reads = (await harness.readLines(harness.tools.paths.executionsFile)).filter(
      (line) => line['callId'] === record.callId,
    );
    expect(reads).toEqual([]);
  });
});
