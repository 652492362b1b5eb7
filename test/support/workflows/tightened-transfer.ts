/** The toolCall workflow of a release whose `transfer_funds` refuses amounts over 4.00. */
import { createToolCallWorkflow } from '../../../workflows/tool-call.ts';
import { tightenedCatalog } from '../tightened-catalog.ts';

export const toolCall = createToolCallWorkflow(tightenedCatalog);
