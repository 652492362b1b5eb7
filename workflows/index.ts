import { exampleCatalog } from '../src/tools/example-contracts.ts';
import { createToolCallWorkflow } from './tool-call.ts';
import { createToolUndoWorkflow } from './tool-undo.ts';

/** The default workflows module: the toolCall workflow over the example catalog. */
export const toolCall = createToolCallWorkflow(exampleCatalog);

/** The undo of a succeeded reversible call: runs its compensation once. */
export const toolUndo = createToolUndoWorkflow(exampleCatalog);
