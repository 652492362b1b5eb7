/** The toolCall workflow of a catalog whose transfers need two distinct approvers. */
import { createToolCallWorkflow } from '../../../workflows/tool-call.ts';
import { quorumCatalog } from '../quorum-catalog.ts';

export const toolCall = createToolCallWorkflow(quorumCatalog);
