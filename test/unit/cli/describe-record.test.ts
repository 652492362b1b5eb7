import { describe, expect, it } from 'vitest';
import { describeRecord, endedByCancel } from '../../../src/cli/output.ts';
import type { CallRecord } from '../../../src/contracts/call-record.ts';

const waiting: CallRecord = {
  callId: 'toolgate/acme/transfer_funds/t-1',
  runId: 'run-1',
  tool: 'transfer_funds',
  tier: 'approval',
  tenant: 'acme',
  principal: 'agent-1',
  principalKind: 'agent',
  key: 't-1',
  fingerprint: 'f'.repeat(64),
  input: { reference: 't-1' },
  status: 'awaiting_approval',
  effect: 'none',
  attempts: 0,
  transitions: [{ status: 'pending', at: '2026-12-04T07:00:00.000Z' }],
  refusedDecisions: [
    {
      at: '2026-12-04T07:00:01.000Z',
      decision: 'approve',
      claimedApprover: 'alice',
      nonce: 'n-1',
      reason: 'the decision is not a signed decision',
    },
  ],
};

describe('describeRecord', () => {
  it('lists refused decisions, and says how many were dropped unread and what to do', () => {
    const lines = describeRecord({ ...waiting, refusedDecisionsDropped: 3, decisionsDroppedUnread: 3 });
    expect(lines).toContain('refused decisions');
    expect(lines).toContain(
      '  2026-12-04T07:00:01.000Z  approve claimed by alice: the decision is not a signed decision',
    );
    const dropped = lines.filter((line) => line.startsWith('decisions dropped unread: 3 '));
    expect(dropped).toHaveLength(1);
    expect(dropped[0]).toMatch(/must be sent again/);
  });

  it('says nothing about dropped decisions when none were dropped', () => {
    expect(describeRecord(waiting).some((line) => line.includes('dropped'))).toBe(false);
  });
});

describe('endedByCancel', () => {
  it('counts a call stopped by the cancel, and no call that closed any other way', () => {
    expect(endedByCancel({ status: 'cancelled', reason: 'CANCELLED' })).toBe(true);
    // A tool that ignored the cancel until its deadline: still ended by the cancel.
    expect(endedByCancel({ status: 'cancelled', reason: 'OUTCOME_UNKNOWN' })).toBe(true);
    expect(endedByCancel({ status: 'denied', reason: 'CANCELLED' })).toBe(true);
    expect(endedByCancel({ status: 'denied', reason: 'APPROVAL_EXPIRED' })).toBe(false);
    expect(endedByCancel({ status: 'succeeded' })).toBe(false);
    expect(endedByCancel({ status: 'failed', reason: 'TOOL_FAILED' })).toBe(false);
    expect(endedByCancel({ status: 'timeout', reason: 'TIMEOUT' })).toBe(false);
  });
});
