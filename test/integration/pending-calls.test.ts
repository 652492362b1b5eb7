import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exampleCatalog } from '../../examples/contracts.ts';
import { answerAnthropicToolUse } from '../../src/agent/anthropic.ts';
import { awaitPendingCall } from '../../src/agent/run-tool-calls.ts';
import { agent, createHarness, type Harness } from '../support/harness.ts';

const transferInput = (reference: string, amountCents: number) => ({
  reference,
  from: 'ACC-1',
  to: 'ACC-2',
  amountCents,
  currency: 'EUR',
  memo: null,
});

/**
 * A pending call is answered later, from its own run. Once a human rejects it, its key is free, and
 * a later call with the same key but other arguments runs under the same call ID: what the model is
 * finally told about its call must not be that later call's outcome.
 */
describe('a pending call, answered after its key was reused', () => {
  let harness: Harness;
  beforeAll(async () => {
    harness = await createHarness();
  }, 120_000);
  afterAll(async () => {
    await harness?.close();
  });

  it('reports the rejection of its own run, not the approved transfer that reused the key', async () => {
    const reference = `reuse-${Date.now()}`;
    const { outcomes } = await answerAnthropicToolUse(
      {
        content: [
          {
            type: 'tool_use',
            id: 'toolu_small',
            name: 'transfer_funds',
            input: transferInput(reference, 100),
            caller: { type: 'direct' },
          },
        ],
      },
      { client: harness.client, context: agent, catalog: exampleCatalog, pendingPollIntervalMs: 50 },
    );
    const pending = outcomes[0]!;
    expect(pending.state).toBe('pending');
    expect(pending.runId).toBeTruthy();

    expect((await harness.client.reject(pending.callId!, { approver: 'alice' })).accepted).toBe(true);
    const later = await harness.client.start(
      { tool: 'transfer_funds', input: transferInput(reference, 99_900), key: `transfer-${reference}` },
      agent,
    );
    expect(later).toMatchObject({ callId: pending.callId, disposition: 'started' });
    expect(later.runId).not.toBe(pending.runId);
    // The same ID now names the later run; asked for the first run, `get` still answers for it.
    expect(await harness.client.get(pending.callId!, { runId: pending.runId! })).toMatchObject({
      status: 'denied',
      reason: 'APPROVAL_REJECTED',
    });
    expect((await harness.client.approve(later.callId, { approver: 'alice' })).accepted).toBe(true);
    expect(await harness.client.result(later.callId, later.runId)).toMatchObject({ status: 'succeeded' });

    const answered = await awaitPendingCall(harness.client, pending);
    expect(answered).toMatchObject({
      id: 'toolu_small',
      state: 'closed',
      isError: true,
      runId: pending.runId,
    });
    expect(answered.record).toMatchObject({ status: 'denied', reason: 'APPROVAL_REJECTED', effect: 'none' });
    expect(answered.text).toMatch(/^Error APPROVAL_REJECTED/);
    const ledger = await harness.readLines(harness.tools.paths.ledgerFile);
    expect(
      ledger.filter((line) => line['reference'] === reference).map((line) => line['amountCents']),
    ).toEqual([99_900]);
  });

  it('refuses to wait on a pending outcome that lost its run ID, rather than guess', async () => {
    await expect(
      awaitPendingCall(harness.client, { id: 'toolu_x', name: 'transfer_funds', callId: 'toolgate/acme/x' }),
    ).rejects.toThrow(/has no run ID/);
  });
});
