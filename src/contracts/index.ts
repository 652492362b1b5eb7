/**
 * `toolgate/contracts`: the workflow-safe half of a tool, and the vocabulary every side shares
 * (tiers, call records, reason codes). Nothing here does I/O or imports Node, so a contracts file
 * can be imported by workflows, workers and clients alike.
 *
 * ```ts
 * import { createCatalog, defineTool, sandboxedRelativePath } from 'toolgate/contracts';
 * import { z } from 'zod';
 *
 * export const saveNote = defineTool({
 *   name: 'save_note',
 *   description: 'Save a note under a relative path.',
 *   input: () => z.strictObject({ path: sandboxedRelativePath(), text: z.string().max(10_000) }),
 *   tier: 'reversible',
 *   timeoutMs: 5_000,
 * });
 * export const catalog = createCatalog([saveNote]);
 * ```
 */

export type {
  ToolCallLookup,
  ToolCallLookupActivities,
  ToolFailureDetails,
  ToolgateActivities,
} from './activity-types.ts';
export type { DecisionClaims, SignedDecision } from './approval.ts';
export { callId, idempotencyKeyPattern } from './call-id.ts';
export type {
  ApprovalState,
  CallContext,
  CallRecord,
  PrincipalKind,
  RefusedDecision,
  ReplayInfo,
  Transition,
  UndoInfo,
} from './call-record.ts';
export {
  CallEffect,
  CallStatus,
  isTerminalStatus,
  terminalStatuses,
} from './call-record.ts';
export type {
  DefineToolOptions,
  ToolApprovalSettings,
  ToolCatalog,
  ToolContract,
  ToolRetryOptions,
} from './define-tool.ts';
export { createCatalog, defineTool, lookupTool } from './define-tool.ts';
export { callFingerprint } from './fingerprint.ts';
export type { PayloadLimits } from './limits.ts';
export { checkInputLimits, defaultPayloadLimits } from './limits.ts';
export type { CallRequest } from './prepare-call.ts';
export type { ReasonCodeInfo } from './reason-codes.ts';
export { isReasonCode, ReasonCode, reasonCodes, retryableReasonCodes } from './reason-codes.ts';
export type { ParsedSafeUrl, SafeUrlRules } from './safe-url.ts';
export { hostMatches, parseSafeUrl, safeUrlProblem, safeUrlSchema } from './safe-url.ts';
export type { RelativePathRules } from './sandboxed-path.ts';
export { relativePathProblem, sandboxedRelativePath } from './sandboxed-path.ts';
export { searchAttributeKeys } from './search-attributes.ts';
export { SideEffectTier, sideEffectTiers, tierRequiresKey } from './tier.ts';
export type { ToolUndoRequest, ToolUndoResult } from './undo.ts';
