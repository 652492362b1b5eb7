import { fileURLToPath } from 'node:url';
import { NativeConnection } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { exampleCatalog } from '../../examples/contracts.ts';
import { createExampleActivities } from '../../examples/tools.ts';
import { startCatalogWorker } from '../support/catalog-worker.ts';
import { agent, createHarness, type Harness } from '../support/harness.ts';
import { quantile } from '../support/mass-cancel.ts';
import { waitFor } from '../support/wait.ts';

/**
 * Decisions sent as a Workflow Update (docs/design.md "Approval"): approve() and reject() answer
 * with the worker's verdict, never "sent, not yet known".
 */
let harness: Harness;
let connection: NativeConnection;

beforeAll(async () => {
  connection = await NativeConnection.connect({ address: inject('temporalAddress') });
  harness = await createHarness({
    policy: {
      allow: ['transfer_funds', 'slow_search'],
      approvals: { transfer_funds: { expiresAfterMs: 120_000 } },
    },
  });
}, 60_000);

afterAll(async () => {
  await harness?.close();
  await connection?.close();
});

const transfer = (reference: string) => ({
  tool: 'transfer_funds',
  input: { reference, from: 'ACC-1', to: 'ACC-2', amountCents: 100, currency: 'EUR' as const, memo: null },
  key: `update-${reference}`,
});

const awaitingApproval = (callId: string) =>
  waitFor(
    async () => ((await harness.client.get(callId))?.status === 'awaiting_approval' ? true : undefined),
    {
      what: `${callId} to wait for approval`,
    },
  );

const eventMs = (event: { eventTime?: { seconds?: unknown; nanos?: unknown } | null }) =>
  Number(event.eventTime?.seconds ?? 0) * 1000 + Number(event.eventTime?.nanos ?? 0) / 1e6;

describe('decisions by Workflow Update', () => {
  it('answers 50 parallel approvals, each accepted, and each transfer runs once', async () => {
    const calls = await Promise.all(
      Array.from({ length: 50 }, (_, index) => harness.client.start(transfer(`P${index}`), agent)),
    );
    await Promise.all(calls.map((call) => awaitingApproval(call.callId)));
    const sentAt = new Map<string, number>();
    const outcomes = await Promise.all(
      calls.map((call) => {
        sentAt.set(call.callId, Date.now());
        return harness.client.approve(call.callId, { approver: 'alice' });
      }),
    );
    expect(outcomes.map((outcome) => outcome.state)).toEqual(calls.map(() => 'accepted'));
    const records = await Promise.all(calls.map((call) => harness.client.result(call.callId)));
    expect(records.map((record) => record.status)).toEqual(calls.map(() => 'succeeded'));
    const ledger = await harness.readLines(harness.tools.paths.ledgerFile);
    for (let index = 0; index < 50; index++) {
      expect(ledger.filter((line) => line['reference'] === `P${index}`)).toHaveLength(1);
    }
    // From approve() to the tool's start, as the server recorded it.
    const toStart = await Promise.all(
      calls.map(async (call) => {
        const events = (await harness.temporal.workflow.getHandle(call.callId).fetchHistory()).events ?? [];
        const started = events.find((event) => event.activityTaskStartedEventAttributes);
        return eventMs(started!) - sentAt.get(call.callId)!;
      }),
    );
    console.info(
      `50 parallel approvals: all accepted; approve() → tool start p50 ${quantile(toStart, 0.5).toFixed(0)} ms, p99 ${quantile(toStart, 0.99).toFixed(0)} ms`,
    );
  });

  it('refuses a malformed decision in the validator, writing nothing to the call', async () => {
    const call = await harness.client.start(transfer('MALFORMED'), agent);
    await awaitingApproval(call.callId);
    const eventsBefore = (await harness.temporal.workflow.getHandle(call.callId).fetchHistory()).events
      ?.length;
    for (const payload of ['approve', null, { claims: 'x' }, [1, 2]]) {
      const outcome = await harness.client.sendDecision(call.callId, payload);
      expect(outcome).toMatchObject({ accepted: false, state: 'refused' });
      expect(outcome.reason).toMatch(/a decision is an object with claims and a signature/);
    }
    const history = (await harness.temporal.workflow.getHandle(call.callId).fetchHistory()).events ?? [];
    expect(history.length).toBe(eventsBefore);
    expect((await harness.client.get(call.callId))?.refusedDecisions).toEqual([]);
    // A well-shaped forgery passes the validator, and is refused and recorded by the verification.
    const forged = await harness.client.sendDecision(call.callId, {
      claims: { approver: 'alice', decision: 'approve' },
      signature: 'AAAA',
    });
    expect(forged).toMatchObject({
      accepted: false,
      state: 'refused',
      reason: 'the decision is not a signed decision',
    });
    expect((await harness.client.get(call.callId))?.refusedDecisions).toHaveLength(1);
    expect(await harness.client.approve(call.callId, { approver: 'alice' })).toMatchObject({
      state: 'accepted',
    });
  });

  it('answers "closed" for a decision the call never read, because it was cancelled first', async () => {
    const call = await harness.client.start(transfer('CLOSED'), agent);
    await awaitingApproval(call.callId);
    await harness.stopWorker();
    let outcome: ReturnType<Harness['client']['approve']> | undefined;
    try {
      outcome = harness.client.approve(call.callId, { approver: 'alice' });
      // The Update is held by the server until a worker takes it; the cancel goes into history.
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      await harness.client.cancel(call.callId);
    } finally {
      await harness.startWorker();
    }
    const answered = await outcome;
    const record = await harness.client.result(call.callId);
    expect(record).toMatchObject({ status: 'denied', reason: 'CANCELLED', effect: 'none' });
    // Cancelled first, then the decision: the call closed before reading it.
    expect(answered).toMatchObject({ accepted: false, state: 'closed' });
    expect(answered?.reason).toMatch(/the call closed \(denied\) before this decision was checked/);
  });

  it('refuses at once a decision for a call whose tier never waits for one', async () => {
    const call = await harness.client.start(
      { tool: 'slow_search', input: { query: 'q', delayMs: 5_000 } },
      agent,
    );
    await waitFor(async () =>
      (await harness.client.get(call.callId))?.status === 'running' ? true : undefined,
    );
    const started = Date.now();
    const outcome = await harness.client.sendDecision(call.callId, {
      claims: { approver: 'alice' },
      signature: 'x',
    });
    expect(outcome).toMatchObject({ accepted: false, state: 'refused' });
    expect(outcome.reason).toBe("the call's tool is readonly-tier, which never waits for a human decision");
    expect(Date.now() - started).toBeLessThan(3_000);
    await harness.client.cancelAndWait(call.callId);
  });

  it('falls back to the signal when the worker predates the Update (mid-deploy), and still answers', async () => {
    await harness.stopWorker();
    const old = await startCatalogWorker(harness, connection, {
      workflows: fileURLToPath(new URL('../support/workflows/without-decision-update.ts', import.meta.url)),
      catalog: exampleCatalog,
      activities: (approvalPublicKeys) =>
        createExampleActivities(harness.tools, {
          approvalPublicKeys: [...approvalPublicKeys],
          policy: { allow: ['transfer_funds'] },
        }),
    });
    try {
      const call = await harness.client.start(transfer('OLD-WORKER'), agent);
      await awaitingApproval(call.callId);
      const forged = await harness.client.sendDecision(call.callId, {
        claims: { approver: 'alice' },
        signature: 'x',
      });
      expect(forged).toMatchObject({
        accepted: false,
        state: 'refused',
        reason: 'the decision is not a signed decision',
      });
      expect(await harness.client.approve(call.callId, { approver: 'alice' })).toMatchObject({
        accepted: true,
        state: 'accepted',
      });
      expect(await harness.client.result(call.callId)).toMatchObject({
        status: 'succeeded',
        effect: 'applied',
      });
      const events = (await harness.temporal.workflow.getHandle(call.callId).fetchHistory()).events ?? [];
      // Both went as signals: the rejected Updates left nothing in history.
      expect(events.filter((event) => event.workflowExecutionSignaledEventAttributes)).toHaveLength(2);
      expect(events.filter((event) => event.workflowExecutionUpdateAcceptedEventAttributes)).toHaveLength(0);
    } finally {
      await old.stop();
      await harness.startWorker();
    }
  });
});
