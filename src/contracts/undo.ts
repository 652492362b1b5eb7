import type { CallContext } from './call-record.ts';

/** What an operator's undo asks for: the succeeded call's identity, input and output. */
export interface ToolUndoRequest {
  /** The call being undone; the undo's own workflow ID is `${callId}/undo`. */
  readonly callId: string;
  readonly runId: string;
  readonly tool: string;
  readonly input: unknown;
  readonly output: unknown;
  readonly key?: string;
  readonly context: CallContext;
  readonly operator: string;
}

/** The outcome of an undo, merged into the call record's `undo` field by the operations client. */
export interface ToolUndoResult {
  readonly callId: string;
  readonly runId: string;
  readonly compensation: string;
  readonly operator: string;
  readonly status: 'succeeded';
  readonly at: string;
  readonly output: unknown;
  readonly attempts: number;
}

/** The type of the failure an undo closes with when its compensation could not run. */
export const undoFailedType = 'ToolUndoFailed';

/** The suffix that turns a call ID into the ID of its undo. */
export const undoIdSuffix = '/undo';
