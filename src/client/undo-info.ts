import { type Client, WorkflowFailedError, WorkflowNotFoundError } from '@temporalio/client';
import { ApplicationFailure, CancelledFailure, TerminatedFailure, TimeoutFailure } from '@temporalio/common';
import type { CallRecord, UndoInfo } from '../contracts/call-record.ts';
import { type ToolUndoResult, undoFailedType, undoIdSuffix } from '../contracts/undo.ts';

/**
 * The undo of one run of a call, read from its `<callId>/undo` workflow: undefined when there is
 * none (or it undid another run of the call). A running undo is reported as `running`, with the
 * operator and run its start recorded in its memo.
 */
export async function readUndo(
  temporal: Client,
  callId: string,
  runId: string,
): Promise<UndoInfo | undefined> {
  const handle = temporal.workflow.getHandle(`${callId}${undoIdSuffix}`);
  let description: Awaited<ReturnType<typeof handle.describe>>;
  try {
    description = await handle.describe();
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return undefined;
    throw error;
  }
  const memo: Record<string, unknown> = description.memo ?? {};
  // An undo of another run of the call is not this run's. One started before its memo named the
  // run is taken to be this run's: a succeeded call keeps its key, so its latest run is the one an
  // undo reads.
  if (typeof memo['runId'] === 'string' && memo['runId'] !== runId) return undefined;
  const operator = typeof memo['operator'] === 'string' ? memo['operator'] : 'unknown';
  if (description.status.name === 'RUNNING') {
    return {
      at: description.startTime.toISOString(),
      operator,
      status: 'running',
      message: 'The compensation is running.',
    };
  }
  try {
    const result = (await handle.result()) as ToolUndoResult;
    return result.runId === runId ? undoInfoFromResult(result) : undefined;
  } catch (error) {
    // A read that failed (the server unreachable, say) is not "no undo": the caller reports it.
    const failed = undoInfoFromFailure(error, operator, description.closeTime);
    if (!failed) throw error;
    return failed;
  }
}

/** The record with the undo of its run merged in (as `undo`), when it has one. */
export async function withUndo(temporal: Client, record: CallRecord): Promise<CallRecord> {
  const undo = await readUndo(temporal, record.callId, record.runId);
  return undo ? { ...record, undo } : record;
}

export function undoInfoFromResult(result: ToolUndoResult): UndoInfo {
  return {
    at: result.at,
    operator: result.operator,
    status: 'succeeded',
    message: `Compensation ${result.compensation} ran.`,
  };
}

/**
 * The undo a closed, unsuccessful undo workflow stands for; undefined for any other error (a
 * network error, say), which the caller passes on. An undo workflow that was terminated, timed out
 * or cancelled also counts as failed: its compensation may have run in part, so nobody may assume
 * the effect is gone, and the undo may be tried again (a failed undo does not keep its ID).
 */
export function undoInfoFromFailure(
  error: unknown,
  operator: string,
  closedAt: Date = new Date(),
): UndoInfo | undefined {
  if (!(error instanceof WorkflowFailedError)) return undefined;
  const cause = error.cause;
  if (cause instanceof ApplicationFailure && cause.type === undoFailedType) {
    const details = cause.details?.[0] as { operator?: string; at?: string } | undefined;
    return {
      at: details?.at ?? closedAt.toISOString(),
      operator: details?.operator ?? operator,
      status: 'failed',
      message: cause.message,
    };
  }
  const how =
    cause instanceof TerminatedFailure
      ? 'was terminated'
      : cause instanceof TimeoutFailure
        ? 'timed out'
        : cause instanceof CancelledFailure
          ? 'was cancelled'
          : 'failed';
  return {
    at: closedAt.toISOString(),
    operator,
    status: 'failed',
    message:
      `The undo workflow ${how} before it reported: the compensation may have run in part, or not at all. ` +
      'Check the effect on its target; the undo may be tried again.',
  };
}
