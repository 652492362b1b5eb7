import { WorkflowFailedError } from '@temporalio/client';
import {
  ApplicationFailure,
  CancelledFailure,
  RetryState,
  TerminatedFailure,
  TimeoutFailure,
  TimeoutType,
} from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { undoInfoFromFailure } from '../../../src/client/undo-info.ts';
import { undoFailedType } from '../../../src/contracts/undo.ts';

const closedAt = new Date('2026-12-05T03:00:00.000Z');
const failedWith = (cause: Error) =>
  new WorkflowFailedError('Workflow execution failed', cause, RetryState.NON_RETRYABLE_FAILURE);

describe('undoInfoFromFailure', () => {
  it('reads a failed compensation from its details', () => {
    const cause = ApplicationFailure.create({
      message: 'remove_label failed: the label store is read-only',
      type: undoFailedType,
      nonRetryable: true,
      details: [{ operator: 'oscar', at: '2026-12-05T02:59:00.000Z' }],
    });
    expect(undoInfoFromFailure(failedWith(cause), 'someone', closedAt)).toEqual({
      at: '2026-12-05T02:59:00.000Z',
      operator: 'oscar',
      status: 'failed',
      message: 'remove_label failed: the label store is read-only',
    });
  });

  it.each([
    ['was terminated', new TerminatedFailure('stuck')],
    ['timed out', new TimeoutFailure('run timeout', undefined, TimeoutType.START_TO_CLOSE)],
    ['was cancelled', new CancelledFailure('cancelled')],
    ['failed', ApplicationFailure.create({ message: 'a bug', type: 'TypeError' })],
  ])('counts an undo workflow that %s as a failed undo, the effect unknown', (how, cause) => {
    expect(undoInfoFromFailure(failedWith(cause), 'ursula', closedAt)).toEqual({
      at: '2026-12-05T03:00:00.000Z',
      operator: 'ursula',
      status: 'failed',
      message: `The undo workflow ${how} before it reported: the compensation may have run in part, or not at all. Check the effect on its target; the undo may be tried again.`,
    });
  });

  it('leaves any other error to the caller', () => {
    expect(undoInfoFromFailure(new Error('14 UNAVAILABLE: connection refused'), 'ursula')).toBeUndefined();
  });
});
