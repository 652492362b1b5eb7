/** The toolCall workflow of a catalog whose transfers need a human only from 100.00 on. */
import { createToolCallWorkflow } from '../../../workflows/tool-call.ts';
import { conditionalCatalog } from '../conditional-catalog.ts';

export const toolCall = createToolCallWorkflow(conditionalCatalog);
