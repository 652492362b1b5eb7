/**
 * Defects found by outside runs, each shown against the real dev server: the key rule comes after
 * the allowlist and the arguments; a workflow started by hand with a malformed request ends at
 * once; a refused decision does not use up the nonce of a valid one.
 */
import { randomUUID } from 'node:crypto';
import { WorkflowFailedError } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createQuotaGate } from '../../activities/safety/admission-gates.ts';
import { modelResultForRecord } from '../../src/agent/model-messages.ts';
import { type CallRecord, releasedFailureType } from '../../src/contracts/call-record.ts';
import { agent, createHarness, type Harness } from '../support/harness.ts';
import { sendForgedThenSigned } from '../support/nonce-forgery.ts';
import { waitFor } from '../support/wait.ts';

describe('defects found from outside', () => {
  let harness: Harness;
  beforeAll(async () => {
    // One write_report at a time: a keyless call must not take (or leak) that slot.
    harness = await createHarness({
      admissionGates: [createQuotaGate({ perTool: { write_report: { maxConcurrent: 1 } } })],
    });
  });
  afterAll(async () => harness?.close());

  it('a keyless call of a key-requiring tier: NOT_ALLOWED and INVALID_INPUT come before KEY_REQUIRED', async () => {
    const [notAllowed, pathEscape, valid] = await Promise.all([
      // Not on the allowlist: the model must not learn that a key would help, or the tool's tier.
      harness.client.call({ tool: 'delete_everything', input: { confirm: true } }, agent),
      harness.client.call({ tool: 'write_report', input: { path: '../outside.md', content: 'x' } }, agent),
      harness.client.call({ tool: 'write_report', input: { path: 'keyless.md', content: 'x' } }, agent),
    ]);
    expect(notAllowed).toMatchObject({ status: 'denied', reason: 'NOT_ALLOWED', effect: 'none' });
    expect(notAllowed.message).not.toMatch(/key/i);
    expect(pathEscape).toMatchObject({ status: 'denied', reason: 'INVALID_INPUT', effect: 'none' });
    expect(pathEscape.message).toContain('path');
    expect(valid).toMatchObject({ status: 'denied', reason: 'KEY_REQUIRED', effect: 'none' });
    // The keyless calls held no quota slot: a keyed call of the same tool is admitted at once.
    const keyed = await harness.client.call(
      { tool: 'write_report', input: { path: 'keyed.md', content: 'x' }, key: `report-${randomUUID()}` },
      agent,
    );
    expect(keyed).toMatchObject({ status: 'succeeded', effect: 'applied' });
  });

  it('a workflow started by hand without a call context ends at once, INVALID_INPUT, with a record', async () => {
    const cases: Array<[string, unknown]> = [
      ['no context', { tool: 'read_config', input: { name: 'region' } }],
      ['a string', 'read_config please'],
      [
        'a bad principal kind',
        {
          tool: 'read_config',
          input: {},
          fingerprint: 'x',
          context: { tenant: 't', principal: 'p', principalKind: 'robot' },
        },
      ],
    ];
    for (const [what, request] of cases) {
      const workflowId = `malformed-${randomUUID()}`;
      const started = Date.now();
      const handle = await harness.temporal.workflow.start('toolCall', {
        workflowId,
        taskQueue: harness.taskQueue,
        args: [request],
      });
      const failure = await handle.result().then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(failure, what).toBeInstanceOf(WorkflowFailedError);
      const cause = (failure as WorkflowFailedError).cause as { type?: string; details?: unknown[] };
      expect(cause.type, what).toBe(releasedFailureType);
      const record = cause.details?.[0] as CallRecord;
      expect(record, what).toMatchObject({ status: 'denied', reason: 'INVALID_INPUT', effect: 'none' });
      expect(record.message, what).toMatch(/malformed|tool name must be a string/);
      expect(Date.now() - started, what).toBeLessThan(10_000);
      // No workflow task failed on the way: before, the first one threw a TypeError, forever.
      const events = (await handle.fetchHistory()).events ?? [];
      expect(
        events.filter((event) => event.workflowTaskFailedEventAttributes),
        what,
      ).toEqual([]);
    }
  });

  it("a tool's ToolError({ retryable: false }) reaches the model as final, not as worth a retry", async () => {
    const failed = await harness.client.call(
      { tool: 'read_config', input: { name: 'missing_setting' } },
      agent,
    );
    expect(failed).toMatchObject({ status: 'failed', reason: 'TOOL_FAILED', retryable: false, attempts: 1 });
    const { text } = modelResultForRecord(failed);
    expect(text).toContain(
      'Retrying the same call unchanged will not help: the tool said it cannot succeed as asked.',
    );
    expect(text).not.toContain('may help');
  });

  it('a refused decision does not use up the nonce of the valid decision that follows it', async () => {
    const reference = `nonce-${randomUUID().slice(0, 8)}`;
    const started = await harness.client.start(
      {
        tool: 'transfer_funds',
        input: { reference, from: 'ACC-1', to: 'ACC-2', amountCents: 100, currency: 'EUR', memo: null },
      },
      agent,
    );
    await waitFor(async () =>
      (await harness.client.get(started.callId))?.status === 'awaiting_approval' ? true : undefined,
    );
    const record = await harness.client.get(started.callId);
    // Someone who saw the nonce sends it first, unsigned; then the approver's own decision arrives.
    const claims = await sendForgedThenSigned(harness.client, started, record!.fingerprint, harness.signer);
    const closed = await harness.client.result(started.callId);
    expect(closed).toMatchObject({ status: 'succeeded', effect: 'applied' });
    expect(closed.approval?.decisionNonce).toBe(claims.nonce);
    expect(closed.refusedDecisions.map((refusal) => refusal.reason)).toEqual([
      'the signature is missing or not from a trusted approval signer',
    ]);
  });
});
