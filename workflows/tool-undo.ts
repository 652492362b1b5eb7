import { ActivityFailure, ApplicationFailure, proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { ToolFailureDetails, ToolgateActivities } from '../src/contracts/activity-types.ts';
import { lookupTool, type ToolCatalog } from '../src/contracts/define-tool.ts';
import { defaultDeadlineGraceMs, livenessTimeoutFor } from '../src/contracts/limits.ts';
import { type ToolUndoRequest, type ToolUndoResult, undoFailedType } from '../src/contracts/undo.ts';

export type { ToolUndoRequest, ToolUndoResult };

/**
 * Builds the `toolUndo` workflow. It runs a reversible tool's compensation once. The operations
 * client starts it under the ID `${callId}/undo`: a second undo joins the running one or finds the
 * completed one, so the compensation never runs twice. A failed undo closes as Failed, which lets
 * an operator try again once the cause is fixed.
 */
export function createToolUndoWorkflow(catalog: ToolCatalog) {
  return async function toolUndo(request: ToolUndoRequest): Promise<ToolUndoResult> {
    const contract = lookupTool(catalog, request.tool);
    if (contract?.tier !== 'reversible' || !contract.compensation) {
      throw ApplicationFailure.create({
        type: undoFailedType,
        nonRetryable: true,
        message: `${request.tool} is not a reversible tool with a compensation, so it cannot be undone.`,
      });
    }
    const startToCloseMs = contract.timeoutMs + defaultDeadlineGraceMs;
    const heartbeatTimeout = livenessTimeoutFor(startToCloseMs);
    const activities = proxyActivities<ToolgateActivities>({
      startToCloseTimeout: startToCloseMs,
      ...(heartbeatTimeout === undefined ? {} : { heartbeatTimeout }),
      retry: {
        maximumAttempts: contract.retry.maximumAttempts,
        initialInterval: contract.retry.initialIntervalMs,
        backoffCoefficient: contract.retry.backoffCoefficient,
        maximumInterval: contract.retry.maximumIntervalMs,
      },
    });
    try {
      const result = await activities.runTool({
        callId: request.callId,
        tool: contract.compensation,
        input: request.input,
        ...(request.key !== undefined ? { key: request.key } : {}),
        tier: contract.tier,
        timeoutMs: contract.timeoutMs,
        context: request.context,
        compensationOf: { output: request.output },
      });
      return {
        callId: request.callId,
        runId: request.runId,
        compensation: contract.compensation,
        operator: request.operator,
        status: 'succeeded',
        at: new Date().toISOString(),
        output: result.output,
        attempts: result.attempt,
      };
    } catch (error) {
      const cause = error instanceof ActivityFailure ? error.cause : error;
      const details =
        cause instanceof ApplicationFailure
          ? (cause.details?.[0] as ToolFailureDetails | undefined)
          : undefined;
      throw ApplicationFailure.create({
        type: undoFailedType,
        nonRetryable: true,
        message: `The compensation ${contract.compensation} failed: ${details?.message ?? 'see the worker logs'}. Fix the cause, then run undo again.`,
        details: [
          { operator: request.operator, at: new Date().toISOString(), undoId: workflowInfo().workflowId },
        ],
      });
    }
  };
}
