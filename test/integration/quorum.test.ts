import { describe, expect, inject, it } from 'vitest';
import { defineTool } from '../../src/contracts/define-tool.ts';
import { createCliRunner } from '../support/cli-runner.ts';
import { agent } from '../support/harness.ts';
import { quorumCatalog, quorumTransfer } from '../support/quorum-catalog.ts';
import { useTransferVariant } from '../support/transfer-variant-worker.ts';
import { waitFor } from '../support/wait.ts';

/** A quorum (docs/design.md "Approval"): two distinct approvers, each counted once; one rejection ends it. */
describe('approval by a quorum of two', () => {
  const variant = useTransferVariant({
    catalog: quorumCatalog,
    contract: quorumTransfer,
    workflows: 'quorum',
  });

  const start = async (reference: string) => {
    const started = await variant.client.start(
      {
        tool: 'transfer_funds',
        input: {
          reference,
          from: 'ACC-1',
          to: 'ACC-2',
          amountCents: 700,
          currency: 'EUR' as const,
          memo: null,
        },
        key: `quorum-${reference}`,
      },
      agent,
    );
    await waitFor(async () =>
      (await variant.harness.client.get(started.callId))?.status === 'awaiting_approval' ? true : undefined,
    );
    return started;
  };
  const transfers = async (reference: string) =>
    (await variant.harness.readLines(variant.harness.tools.paths.ledgerFile)).filter(
      (line) => line['reference'] === reference,
    );

  it('runs once two distinct approvers have approved; the same person twice, under any spelling, counts once', async () => {
    const started = await start('Q1');
    expect(await variant.harness.client.approve(started.callId, { approver: 'alice' })).toMatchObject({
      state: 'accepted',
      reason: 'counted: 1 of 2 approvals',
    });
    const twice = await variant.harness.client.approve(started.callId, { approver: 'ALICE' });
    expect(twice).toMatchObject({ accepted: false, state: 'refused' });
    expect(twice.reason).toBe(
      "ALICE's approval already counts toward the quorum; another approver must decide",
    );
    expect((await variant.harness.client.get(started.callId))?.status).toBe('awaiting_approval');
    expect(await transfers('Q1')).toHaveLength(0);
    expect(
      await variant.harness.client.approve(started.callId, { approver: 'bob', roles: ['finance'] }),
    ).toMatchObject({
      state: 'accepted',
      reason: 'counted: 2 of 2 approvals',
    });
    const record = await variant.harness.client.result(started.callId);
    expect(record).toMatchObject({
      status: 'succeeded',
      effect: 'applied',
      approval: { quorum: 2, decidedBy: 'bob' },
    });
    expect(record.approval?.approvals?.map((entry) => entry.approver)).toEqual(['alice', 'bob']);
    expect(record.refusedDecisions.map((entry) => entry.claimedApprover)).toEqual(['ALICE']);
    expect(await transfers('Q1')).toHaveLength(1);
  });

  it('ends at one rejection, even after an approval', async () => {
    const started = await start('Q2');
    expect(await variant.harness.client.approve(started.callId, { approver: 'alice' })).toMatchObject({
      state: 'accepted',
    });
    expect(
      await variant.harness.client.reject(started.callId, {
        approver: 'bob',
        roles: ['finance'],
        comment: 'not this one',
      }),
    ).toMatchObject({ state: 'accepted' });
    const record = await variant.harness.client.result(started.callId);
    expect(record).toMatchObject({ status: 'denied', reason: 'APPROVAL_REJECTED', effect: 'none' });
    expect(record.approval?.approvals?.map((entry) => entry.approver)).toEqual(['alice']);
    expect(await transfers('Q2')).toHaveLength(0);
  });

  it('refuses a quorum the contract cannot mean', () => {
    for (const bad of [0, 1.5, 21]) {
      expect(() =>
        defineTool({ ...quorumTransfer, approval: { ...quorumTransfer.approval!, quorum: bad } }),
      ).toThrow(/approval\.quorum must be a whole number of approvers from 1 to 20/);
    }
  });

  it('toolgate approve says how far the quorum has come', async () => {
    const started = await start('Q3');
    const run = createCliRunner({
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TOOLGATE_TASK_QUEUE: variant.harness.taskQueue,
      TOOLGATE_DATA_DIR: variant.harness.dataDir,
    });
    const first = await run('approve', started.callId, '--as', 'alice');
    expect(first.code).toBe(0);
    expect(first.json).toMatchObject({
      accepted: true,
      state: 'accepted',
      reason: 'counted: 1 of 2 approvals',
    });
    const second = await run('approve', started.callId, '--as', 'bob', '--role', 'finance');
    expect(second.json).toMatchObject({ accepted: true, reason: 'counted: 2 of 2 approvals' });
    expect((await variant.harness.client.result(started.callId)).status).toBe('succeeded');
  });
});
