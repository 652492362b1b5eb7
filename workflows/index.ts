import { exampleCatalog } from '../src/tools/example-contracts.ts';
import { createToolCallWorkflow } from './tool-call.ts';

/** The default workflows module: the toolCall workflow over the example catalog. */
export const toolCall = createToolCallWorkflow(exampleCatalog);
