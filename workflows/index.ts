/**
 * `toolgate/workflow`: code that runs inside Temporal's workflow sandbox. Import it only from a
 * workflows module (the file a worker's `workflowsPath` names) or from your own workflow code.
 *
 * A workflows module exports the `toolCall` workflow built over your catalog, and `toolUndo` if any
 * tool is reversible:
 *
 * ```ts
 * import { createToolCallWorkflow, createToolUndoWorkflow } from 'toolgate/workflow';
 * import { catalog } from './contracts.js';
 *
 * export const toolCall = createToolCallWorkflow(catalog);
 * export const toolUndo = createToolUndoWorkflow(catalog);
 * ```
 *
 * An agent written as a workflow runs each tool call as a child `toolCall` workflow with
 * `callToolAsChild(request, context, { catalog })`: the same gates, key and record as the client's
 * `call()`.
 */

export type {
  ChildCallDisposition,
  ChildCallOptions,
  ChildCallOutcome,
  ChildCallRequest,
  ChildToolCall,
} from './child-call.ts';
export {
  callToolAsChild,
  duplicateCallFailureType,
  startToolCallChild,
} from './child-call.ts';
export { decisionSignal, recordQuery } from './messages.ts';
export type { ToolCallRequest, ToolCallWorkflowOptions } from './tool-call.ts';
export { createToolCallWorkflow } from './tool-call.ts';
export type { ToolUndoRequest, ToolUndoResult } from './tool-undo.ts';
export { createToolUndoWorkflow } from './tool-undo.ts';
