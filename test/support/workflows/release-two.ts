/**
 * The `toolCall` workflow of a later release whose code adds a command after every call: it tags
 * the run with a memo. Guarded by `patched()`, as docs/operators.md "Deploys" says a change that
 * alters commands must be, so calls that started under the earlier release finish on this one.
 */
import { patched, upsertMemo } from '@temporalio/workflow';
import { exampleCatalog } from '../../../examples/contracts.ts';
import type { CallRecord } from '../../../src/contracts/call-record.ts';
import type { ToolCallRequest } from '../../../src/contracts/prepare-call.ts';
import { createToolCallWorkflow } from '../../../workflows/tool-call.ts';

/** The patch ID of the release's change. */
export const releaseTwoPatch = 'release-two-memo';

const earlierToolCall = createToolCallWorkflow(exampleCatalog);

export async function toolCall(request: ToolCallRequest): Promise<CallRecord> {
  const record = await earlierToolCall(request);
  if (patched(releaseTwoPatch)) upsertMemo({ closedByRelease: 'two' });
  return record;
}
