import { type Client, WorkflowFailedError, WorkflowNotFoundError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { type ToolUndoResult, undoFailedType, undoIdSuffix } from '../../workflows/tool-undo.ts';
import type { CallRecord, UndoInfo } from '../contracts/call-record.ts';

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
  try {
    const description = await handle.describe();
    if (description.status.name === 'RUNNING') {
      const memo: Record<string, unknown> = description.memo ?? {};
      // An undo started before its memo named the run is taken to be this run's: a succeeded call
      // keeps its key, so its latest run is the one an undo reads.
      if (typeof memo['runId'] === 'string' && memo['runId'] !== runId) return undefined;
      return {
        at: description.startTime.toISOString(),
        operator: typeof memo['operator'] === 'string' ? memo['operator'] : 'unknown',
        status: 'running',
        message: 'The compensation is running.',
      };
    }
    const result = (await handle.result()) as ToolUndoResult;
    return result.runId === runId ? undoInfoFromResult(result) : undefined;
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return undefined;
    return undoInfoFromFailure(error, 'unknown');
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

/** The undo a failed undo workflow stands for; undefined for any other error. */
export function undoInfoFromFailure(error: unknown, operator: string): UndoInfo | undefined {
  if (!(error instanceof WorkflowFailedError)) return undefined;
  const cause = error.cause;
  if (!(cause instanceof ApplicationFailure) || cause.type !== undoFailedType) return undefined;
  const details = cause.details?.[0] as { operator?: string; at?: string } | undefined;
  return {
    at: details?.at ?? new Date().toISOString(),
    operator: details?.operator ?? operator,
    status: 'failed',
    message: cause.message,
  };
}
