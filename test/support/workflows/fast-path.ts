/** The toolCall workflow of a catalog with a fast-path readonly tool (`read_config_fast`). */
import { createToolCallWorkflow } from '../../../workflows/tool-call.ts';
import { fastPathCatalog } from '../fast-path-catalog.ts';

export const toolCall = createToolCallWorkflow(fastPathCatalog);
