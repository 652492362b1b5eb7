/** The workflows module of the example tools: what `toolgate dev` and the demo's worker bundle. */
import { createToolCallWorkflow, createToolUndoWorkflow } from '../workflows/index.ts';
import { exampleCatalog } from './contracts.ts';

export const toolCall = createToolCallWorkflow(exampleCatalog);

/** The undo of a succeeded reversible call: runs its compensation once. */
export const toolUndo = createToolUndoWorkflow(exampleCatalog);
