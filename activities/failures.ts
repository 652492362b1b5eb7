import { ApplicationFailure } from '@temporalio/activity';
import { ApplicationFailureCategory } from '@temporalio/common';
import type { ToolFailureDetails } from '../src/contracts/activity-types.ts';

/** What a model is told when the allowlist refuses a tool. */
export const notAllowedMessage =
  'This tool is not enabled for you. Use only the tools listed in your tool definitions.';

/**
 * A failure that crosses into the workflow: a type from `ToolFailureType`, a model-safe message, and
 * details the workflow reads (effect, reason, attempt). An `expected` failure (a denial, a deadline,
 * a tool saying it failed) is an outcome, not an incident: it is marked benign, so the SDK logs it
 * at debug level and the executor's own warn line is the only one. An unexpected one (a tool that
 * threw something other than ToolError, a missing implementation) keeps the SDK's warning too.
 */
export function failure(
  type: string,
  message: string,
  details: Omit<ToolFailureDetails, 'message'>,
  nonRetryable = false,
  expected = true,
) {
  return ApplicationFailure.create({
    type,
    message,
    details: [{ message, ...details }],
    nonRetryable,
    ...(expected ? { category: ApplicationFailureCategory.BENIGN } : {}),
  });
}
