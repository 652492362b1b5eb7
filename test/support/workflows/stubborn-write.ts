/** The toolCall workflow of a catalog with an irreversible tool that ignores cancellation. */
import { createToolCallWorkflow } from '../../../workflows/tool-call.ts';
import { stubbornCatalog } from '../stubborn-catalog.ts';

export const toolCall = createToolCallWorkflow(stubbornCatalog);
