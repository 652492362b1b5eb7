import { type Client, WorkflowNotFoundError } from '@temporalio/client';
import { ToolgateClient } from '../src/client/toolgate-client.ts';
import type { ToolCallLookup, ToolCallLookupActivities } from '../src/contracts/activity-types.ts';

/**
 * The local activity agent workflows need to resolve duplicate child calls (see `toolgate/workflow`).
 * Register it on the worker that runs the agent workflows, next to the toolgate activities:
 *
 * ```ts
 * activities: { ...createActivities(...), ...createToolCallLookupActivities(temporalClient) }
 * ```
 */
export function createToolCallLookupActivities(client: Client): ToolCallLookupActivities {
  const toolgate = new ToolgateClient({ client });
  return {
    async lookupToolCall({ callId, runId }): Promise<ToolCallLookup> {
      let description: Awaited<ReturnType<ReturnType<Client['workflow']['getHandle']>['describe']>>;
      try {
        description = await client.workflow.getHandle(callId, runId).describe();
      } catch (error) {
        if (error instanceof WorkflowNotFoundError) return { state: 'not_found' };
        throw error;
      }
      const memoFingerprint = description.memo?.['fingerprint'];
      const known = {
        ...(typeof memoFingerprint === 'string' ? { fingerprint: memoFingerprint } : {}),
        runId: description.runId,
      };
      if (description.status.name === 'RUNNING') return { state: 'running', ...known };
      // Completed keeps its key. Failed, cancelled, terminated or timed out frees it, but the record
      // is still useful.
      return {
        state: description.status.name === 'COMPLETED' ? 'completed' : 'released',
        ...known,
        record: await toolgate.result(callId, description.runId),
      };
    },
  };
}
