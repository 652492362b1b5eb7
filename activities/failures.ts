import { ApplicationFailure } from '@temporalio/activity';
import type { ToolFailureDetails } from '../src/contracts/activity-types.ts';

/** What a model is told when the allowlist refuses a tool. */
export const notAllowedMessage =
  'This tool is not enabled for you. Use only the tools listed in your tool definitions.';

/**
 * A failure that crosses into the workflow: a type from `ToolFailureType`, a model-safe message, and
 * details the workflow reads (effect, reason, attempt).
 */
export function failure(
  type: string,
  message: string,
  details: Omit<ToolFailureDetails, 'message'>,
  nonRetryable = false,
) {
  return ApplicationFailure.create({ type, message, details: [{ message, ...details }], nonRetryable });
}
