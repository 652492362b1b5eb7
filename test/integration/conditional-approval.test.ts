import { describe, expect, it } from 'vitest';
import { approvalRequiredOf } from '../../src/contracts/check-arguments.ts';
import { defineTool } from '../../src/contracts/define-tool.ts';
import { conditionalCatalog, conditionalTransfer } from '../support/conditional-catalog.ts';
import { agent } from '../support/harness.ts';
import { useTransferVariant } from '../support/transfer-variant-worker.ts';
import { waitFor } from '../support/wait.ts';

/**
 * Conditional approval (docs/design.md "Approval"): `transfer_funds` needs a human only from 100.00
 * on. The condition is decided with the recorded validation, so the branch is in the history.
 */
describe('conditional approval', () => {
  const variant = useTransferVariant({
    catalog: conditionalCatalog,
    contract: conditionalTransfer,
    workflows: 'conditional-approval',
  });

  /** A transfer with the key given, or none (`keyless`): the contract then derives one. */
  const transfer = (reference: string, amountCents: number, keyless = false) => ({
    tool: 'transfer_funds',
    input: { reference, from: 'ACC-1', to: 'ACC-2', amountCents, currency: 'EUR' as const, memo: null },
    ...(keyless ? {} : { key: `cond-${reference}` }),
  });
  const transfers = async (reference: string) =>
    (await variant.harness.readLines(variant.harness.tools.paths.ledgerFile)).filter(
      (line) => line['reference'] === reference,
    );

  it('runs a call whose arguments need no human at once, once, and says so in the record', async () => {
    const record = await variant.client.call(transfer('SMALL', 9_999), agent);
    expect(record).toMatchObject({ status: 'succeeded', effect: 'applied', approvalNotNeeded: true });
    expect(record.approval).toBeUndefined();
    expect(record.transitions.map((transition) => transition.status)).toEqual([
      'pending',
      'running',
      'succeeded',
    ]);
    expect(await transfers('SMALL')).toHaveLength(1);
  });

  it('waits for a human when the arguments call for one', async () => {
    const started = await variant.client.start(transfer('LARGE', 10_000), agent);
    await waitFor(async () =>
      (await variant.harness.client.get(started.callId))?.status === 'awaiting_approval' ? true : undefined,
    );
    expect(await transfers('LARGE')).toHaveLength(0);
    expect(await variant.harness.client.approve(started.callId, { approver: 'alice' })).toMatchObject({
      state: 'accepted',
    });
    const record = await variant.client.result(started.callId);
    expect(record).toMatchObject({ status: 'succeeded', approval: { decidedBy: 'alice' } });
    expect(record.approvalNotNeeded).toBeUndefined();
    expect(await transfers('LARGE')).toHaveLength(1);
  });

  it('keeps the tier’s key rule for a call that needs no human: a repeat is the same call, run once', async () => {
    // No key given: the contract derives one from the reference, as for any transfer.
    const first = await variant.client.call(transfer('REPEAT', 500, true), agent);
    const again = await variant.client.call(transfer('REPEAT', 500, true), agent);
    expect(first).toMatchObject({ status: 'succeeded', approvalNotNeeded: true, key: 'transfer-REPEAT' });
    expect(again.callId).toBe(first.callId);
    expect(await transfers('REPEAT')).toHaveLength(1);
  });

  it('treats a condition that throws, or answers anything but false, as "a human must decide"', () => {
    const throwing = defineTool({
      ...conditionalTransfer,
      approval: {
        ...conditionalTransfer.approval!,
        when: () => {
          throw new Error('bug in the condition');
        },
      },
    });
    const input = { reference: 'R', from: 'ACC-1', to: 'ACC-2', amountCents: 1, currency: 'EUR', memo: null };
    expect(approvalRequiredOf(throwing, input)).toBe(true);
    expect(approvalRequiredOf(conditionalTransfer, input)).toBe(false);
    expect(approvalRequiredOf(conditionalTransfer, { ...input, amountCents: 10_000 })).toBe(true);
    expect(approvalRequiredOf(variant.harness.tools.tools[0]!.contract, input)).toBeUndefined();
    expect(() =>
      defineTool({
        ...conditionalTransfer,
        approval: { ...conditionalTransfer.approval!, when: 'yes' as never },
      }),
    ).toThrow(/approval\.when must be a function/);
  });
});
