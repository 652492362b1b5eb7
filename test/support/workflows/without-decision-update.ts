/**
 * The `toolCall` workflow as a worker from before decisions by Update served it: the same gates,
 * without the `toolgateDecision` handler (removed as soon as the call registers it), so an Update is
 * rejected for want of a handler and only the `decision` signal reaches the call. What a client
 * meets mid-deploy, while such a worker still runs.
 */
import { setHandler } from '@temporalio/workflow';
import { exampleCatalog } from '../../../examples/contracts.ts';
import type { CallRecord } from '../../../src/contracts/call-record.ts';
import type { ToolCallRequest } from '../../../src/contracts/prepare-call.ts';
import { decisionUpdate } from '../../../workflows/messages.ts';
import { createToolCallWorkflow } from '../../../workflows/tool-call.ts';

const currentToolCall = createToolCallWorkflow(exampleCatalog);

export function toolCall(request: ToolCallRequest): Promise<CallRecord> {
  // The call registers its handlers before its first await: unregister the Update right after.
  const running = currentToolCall(request);
  setHandler(decisionUpdate, undefined);
  return running;
}
