/**
 * Variant B's workflows module: bare Temporal, nothing of toolgate's in its bundle. B runs on its
 * own worker so that its workflows do not evaluate toolgate's modules (the catalog, zod schemas)
 * that a bare Temporal application would not have.
 */
import {
  proxyActivities,
  proxyLocalActivities,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { type RunToolRequest, type RunToolResult, ToolFailureType } from '../src/contracts/activity-types.ts';
import type { ToolCallRequest } from '../src/contracts/prepare-call.ts';
import { searchAttributeKeys } from '../src/contracts/search-attributes.ts';
import type { BenchReadInput } from './bench-catalog.ts';
import { spin } from './busy-work.ts';

/** The activities of the bare worker: the same tool body as bench_read, with no gates around it. */
export interface BareActivities {
  benchTool(input: BenchReadInput): Promise<unknown>;
  /** B-idx's activity: takes and returns what C's `runTool` does, and only runs the tool body. */
  benchIndexedTool(request: RunToolRequest): Promise<RunToolResult>;
  /** The `B-idx+cpu` probe's activity: B-idx's, after `spin(iterations)`. */
  benchIndexedBusyTool(request: RunToolRequest, iterations: number): Promise<RunToolResult>;
}

const bare = proxyActivities<BareActivities>({
  startToCloseTimeout: '15 seconds',
  retry: { maximumAttempts: 3, initialInterval: '100 milliseconds' },
});

const bareLocal = proxyLocalActivities<BareActivities>({
  startToCloseTimeout: '15 seconds',
  retry: { maximumAttempts: 3, initialInterval: '100 milliseconds' },
});

/** Variant B (and B-E): bare Temporal, one workflow running one regular activity. */
export async function bareCall(input: BenchReadInput): Promise<unknown> {
  return await bare.benchTool(input);
}

// C's activity options for bench_read, as its history shows them: start-to-close past the tool's
// deadline, a heartbeat timeout, and the tool's retry policy.
const bareIndexed = proxyActivities<BareActivities>({
  startToCloseTimeout: '16 seconds',
  heartbeatTimeout: '2 seconds',
  retry: {
    maximumAttempts: 3,
    initialInterval: '200 milliseconds',
    backoffCoefficient: 2,
    maximumInterval: '5 seconds',
    nonRetryableErrorTypes: [
      ToolFailureType.denied,
      ToolFailureType.outputTooLarge,
      ToolFailureType.missingImplementation,
    ],
  },
});

/**
 * Variant B-idx: bare Temporal recording a call the way toolgate must (docs/design.md, "Around the core"), with none of
 * toolgate's code. The client sends C's start (the six search attributes, the memo, the request,
 * the ID policies); the workflow runs one activity with C's options and payload, writes the final
 * status and effect as C does, and returns a result the shape and size of C's record. No gate runs:
 * no fingerprint, no allowlist, no schema, no admission, no executor. C against B-idx is what the
 * gates cost; B-idx against B is what the index and the record cost Temporal.
 *
 * With `work`, it is the `B-idx+cpu` probe (bench/busy-work.ts): the same, plus plain CPU work in
 * its first workflow turn and in its activity, counted in iterations so that a replay does the same.
 * With `finalUpsert` false (and a client that sets no search attributes), it is the `B-rec` probe:
 * the record without the index.
 */
export async function bareIndexedCall(
  request: ToolCallRequest,
  work?: { readonly workflowIterations: number; readonly activityIterations: number } | null,
  finalUpsert = true,
): Promise<unknown> {
  if (work && spin(work.workflowIterations) === 0.5) throw new Error('unreachable: spin returns an integer');
  const { workflowId, runId } = workflowInfo();
  const pendingAt = new Date().toISOString();
  const toolRequest: RunToolRequest = {
    admit: true,
    callId: workflowId,
    tool: request.tool,
    input: request.input,
    tier: 'readonly',
    timeoutMs: 15_000,
    context: request.context,
  };
  const result = await (work
    ? bareIndexed.benchIndexedBusyTool(toolRequest, work.activityIterations)
    : bareIndexed.benchIndexedTool(toolRequest));
  if (finalUpsert) upsertFinalStatus();
  return {
    callId: workflowId,
    runId,
    tool: request.tool,
    tenant: request.context.tenant,
    principal: request.context.principal,
    principalKind: request.context.principalKind,
    fingerprint: request.fingerprint,
    input: request.input,
    status: 'succeeded',
    effect: 'none',
    attempts: result.attempt,
    transitions: [
      { status: 'pending', at: pendingAt },
      { status: 'running', at: pendingAt },
      { status: 'succeeded', at: new Date().toISOString() },
    ],
    refusedDecisions: [],
    tier: 'readonly',
    output: result.output,
  };
}

/** The final status and effect of a readonly call that succeeded, as C writes them. */
function upsertFinalStatus(): void {
  upsertSearchAttributes([
    { key: searchAttributeKeys.callStatus, value: 'succeeded' },
    { key: searchAttributeKeys.callEffect, value: 'none' },
  ]);
}

/**
 * The `B-sa` probe: B plus the index alone. Its client sets C's six search attributes at start,
 * and the workflow writes C's final status upsert after B's activity; nothing else of B-idx's
 * record (memo, ID policies, request, activity options, result) is there. B-sa against B is what
 * the index costs; `B-rec` (B-idx without the index) against B is what the rest of the record costs.
 */
export async function bareSearchAttributesCall(input: BenchReadInput): Promise<unknown> {
  const result = await bare.benchTool(input);
  upsertFinalStatus();
  return result;
}

/**
 * Variant B-LA: bare Temporal's fastest path for a short tool, the same tool body as a local
 * activity, started eagerly: what C-fast is without toolgate.
 */
export async function bareLocalCall(input: BenchReadInput): Promise<unknown> {
  return await bareLocal.benchTool(input);
}

/**
 * Variant B-0: a bare workflow that runs nothing and closes in its first workflow task. Started
 * eagerly, it is the least a call recorded as a workflow can cost on this stack: one start, one
 * workflow task, one close, one result read.
 */
export async function bareEmpty(input: BenchReadInput): Promise<unknown> {
  return { item: input.item, value: 42, unit: 'widgets' };
}
