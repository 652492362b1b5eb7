import { fileURLToPath } from 'node:url';
import { NativeConnection, type Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createActivities } from '../../activities/create-activities.ts';
import { createExampleActivities } from '../../examples/tools.ts';
import { loadOrCreateApprovalKeys } from '../../src/client/approval-signer.ts';
import type { ToolgateActivities } from '../../src/contracts/activity-types.ts';
import { bundleToolgateWorkflows, createWorker } from '../../src/worker/create-worker.ts';
import { agent, createHarness, type Harness } from '../support/harness.ts';
import { eventTypes as historyEventTypes, markerNames, scheduledActivityTypes } from '../support/history.ts';
import { tightenedCatalog, tightenedTransfer } from '../support/tightened-catalog.ts';
import { waitFor } from '../support/wait.ts';

/**
 * Gate protocol 3 records the validation gate's verdict in history. These tests change what the
 * workers run while calls are open, as a release does: a tightened schema, a worker that is older.
 */
describe('validation recorded in history (gate protocol 3)', () => {
  let harness: Harness;
  let connection: NativeConnection;
  const others: Array<{ worker: Worker; running: Promise<void> }> = [];
  beforeAll(async () => {
    harness = await createHarness();
    connection = await NativeConnection.connect({ address: inject('temporalAddress') });
  });
  afterAll(async () => {
    await stopOthers();
    await connection?.close();
    await harness?.close();
  });

  async function startOther(activities: ToolgateActivities, code: string): Promise<void> {
    const worker = await createWorker({
      connection,
      taskQueue: harness.taskQueue,
      activities,
      workflowBundle: { code },
    });
    others.push({ worker, running: worker.run() });
  }
  async function stopOthers(): Promise<void> {
    for (const { worker } of others) if (worker.getState() === 'RUNNING') worker.shutdown();
    await Promise.all(others.map((other) => other.running));
    others.length = 0;
  }
  const eventTypes = (callId: string) => historyEventTypes(harness.temporal, callId);
  const transfer = (reference: string, amountCents: number) => ({
    tool: 'transfer_funds',
    input: { reference, from: 'ACC-1', to: 'ACC-2', amountCents, currency: 'EUR', memo: null },
  });

  it('refuses an approval-tier call with invalid arguments at admission: no human is asked, nothing runs', async () => {
    const record = await harness.client.call({ ...transfer('P3-BAD', -5), key: 'p3-bad' }, agent);
    expect(record).toMatchObject({ status: 'denied', reason: 'INVALID_INPUT', effect: 'none', attempts: 0 });
    expect(record.message).toMatch(/^Invalid arguments: amountCents: /);
    expect(record.transitions.map((transition) => transition.status)).toEqual(['pending', 'denied']);
    expect(record.approval).toBeUndefined();
    const events = await eventTypes(record.callId);
    // The verdict is the admission marker's; no activity was scheduled. (An approval-tier call's
    // first task also sets two patch markers: `decisions-queued-at-expiry` and
    // `nonce-used-when-counted`.)
    expect(await markerNames(harness.temporal, record.callId)).toEqual([
      'core_patch',
      'core_patch',
      'core_local_activity',
    ]);
    expect(events).not.toContain('activityTaskScheduledEventAttributes');
  });

  it('checks a readonly call in its execution activity, before the tool: pending to denied, nothing ran', async () => {
    const record = await harness.client.call({ tool: 'read_config', input: { name: 7 } }, agent);
    expect(record).toMatchObject({ status: 'denied', reason: 'INVALID_INPUT', effect: 'none', attempts: 0 });
    expect(record.transitions.map((transition) => transition.status)).toEqual(['pending', 'denied']);
    expect(await scheduledActivityTypes(harness.temporal, record.callId)).toEqual(['checkAndRunTool']);
    const executions = await harness.readLines(harness.tools.paths.executionsFile);
    expect(executions.filter((line) => line['callId'] === record.callId)).toEqual([]);
  });

  it('keeps a call that waits for approval alive across a release that tightens its schema, and refuses it before it runs', async () => {
    // Started and admitted under the shipped schema: 5.00 passes.
    const started = await harness.client.start(transfer('P3-TIGHT', 500), agent);
    await waitFor(
      async () =>
        (await harness.client.get(started.callId))?.status === 'awaiting_approval' ? true : undefined,
      {
        what: 'the transfer to wait for approval',
      },
    );
    // The release: every worker now runs a catalog that caps transfers at 4.00.
    await harness.stopWorker();
    const keys = await loadOrCreateApprovalKeys(`${harness.dataDir}/keys`);
    const tightenedTools = harness.tools.tools.map((tool) =>
      tool.contract.name === tightenedTransfer.name ? { ...tool, contract: tightenedTransfer } : tool,
    );
    const { code } = await bundleToolgateWorkflows(
      fileURLToPath(new URL('../support/workflows/tightened-transfer.ts', import.meta.url)),
    );
    await startOther(
      createExampleActivities(
        { tools: tightenedTools, compensations: harness.tools.compensations },
        { catalog: tightenedCatalog, approvalPublicKeys: [keys.publicKey] },
      ),
      code,
    );
    try {
      // The new worker replays the open call (no nondeterminism: the verdict is recorded), takes
      // the approval, and its executor refuses the arguments the new schema does not accept.
      await harness.client.approve(started.callId, { approver: 'alice' });
      const record = await harness.client.result(started.callId);
      expect(record).toMatchObject({
        status: 'denied',
        reason: 'INVALID_INPUT',
        effect: 'none',
        attempts: 0,
        approval: {
          decision: 'approve',
          decidedBy: 'alice',
          preview: 'Transfer 5.00 EUR from ACC-1 to ACC-2',
        },
      });
      expect(record.message).toMatch(
        /amountCents: .*The tool's schema changed after this call was admitted; nothing ran\.$/,
      );
      expect(record.transitions.map((transition) => transition.status)).toEqual([
        'pending',
        'awaiting_approval',
        'denied',
      ]);
      expect(await harness.readLines(harness.tools.paths.ledgerFile)).toEqual([]);
      // Nothing moved, so the key is free: the same transfer under the new schema's cap goes through.
      const retried = await harness.client.start(transfer('P3-TIGHT', 300), agent);
      expect(retried.disposition).toBe('started');
      await harness.client.cancelAndWait(retried.callId);
      expect(await harness.client.result(retried.callId)).toMatchObject({
        status: 'denied',
        reason: 'CANCELLED',
      });
    } finally {
      await stopOthers();
      await harness.startWorker();
    }
  }, 120_000);

  it('reports an execution taken by a worker from before protocol 3 as failed with nothing run, and frees the key', async () => {
    await harness.stopWorker();
    const keys = await loadOrCreateApprovalKeys(`${harness.dataDir}/keys`);
    const current = createExampleActivities(harness.tools, { approvalPublicKeys: [keys.publicKey] });
    // What an older worker registers: no checkAndRunTool.
    const older = {
      admitCall: current.admitCall,
      releaseCall: current.releaseCall,
      verifyDecision: current.verifyDecision,
      runTool: current.runTool,
    } as unknown as ToolgateActivities;
    await startOther(older, inject('workflowBundle'));
    let upgraded = false;
    try {
      const request = { tool: 'write_report', input: { path: 'p3-old.md', content: 'x' }, key: 'p3-old' };
      const record = await harness.client.call(request, agent);
      expect(record).toMatchObject({ status: 'failed', reason: 'TOOL_FAILED', effect: 'none', attempts: 0 });
      expect(record.message).toMatch(/older than this release .* nothing ran/);
      expect(record.transitions.map((transition) => transition.status)).toEqual(['pending', 'failed']);
      const executions = await harness.readLines(harness.tools.paths.executionsFile);
      expect(executions.filter((line) => line['callId'] === record.callId)).toEqual([]);
      // The key was released: once the workers are current, the same request runs.
      await stopOthers();
      await harness.startWorker();
      upgraded = true;
      const again = await harness.client.call(request, agent);
      expect(again).toMatchObject({ status: 'succeeded', effect: 'applied' });
      expect(again.runId).not.toBe(record.runId);
    } finally {
      await stopOthers();
      if (!upgraded) await harness.startWorker();
    }
  }, 120_000);

  it('falls back to validating in the workflow when the worker knows no contract for the tool', async () => {
    await harness.stopWorker();
    const keys = await loadOrCreateApprovalKeys(`${harness.dataDir}/keys`);
    // A worker without write_report's implementation, and no catalog: its admitCall cannot check.
    await startOther(
      createActivities({
        tools: harness.tools.tools.filter((tool) => tool.contract.name !== 'write_report'),
        policy: { allow: ['write_report'] },
        approvalPublicKeys: [keys.publicKey],
      }),
      inject('workflowBundle'),
    );
    let upgraded = false;
    try {
      const scheduledTypes = (callId: string) => scheduledActivityTypes(harness.temporal, callId);
      const invalid = await harness.client.call(
        { tool: 'write_report', input: { path: '../escape.md', content: 'x' }, key: 'p3-fallback-bad' },
        agent,
      );
      // The workflow's own verdict: denied before any activity was scheduled.
      expect(invalid).toMatchObject({ status: 'denied', reason: 'INVALID_INPUT', effect: 'none' });
      expect(await scheduledTypes(invalid.callId)).toEqual([]);
      const valid = await harness.client.call(
        { tool: 'write_report', input: { path: 'fallback.md', content: 'x' }, key: 'p3-fallback-ok' },
        agent,
      );
      // Validated by the workflow, so executed by runTool; this worker has no implementation.
      expect(await scheduledTypes(valid.callId)).toEqual(['runTool']);
      expect(valid).toMatchObject({ status: 'failed', effect: 'none' });
      expect(valid.message).toMatch(/not available on the executor/);
      await stopOthers();
      await harness.startWorker();
      upgraded = true;
    } finally {
      await stopOthers();
      if (!upgraded) await harness.startWorker();
    }
  }, 120_000);
});
