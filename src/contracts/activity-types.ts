import type { DecisionVerdict } from './approval.ts';
import type { CallContext, CallEffect, CallRecord } from './call-record.ts';
import type { SideEffectTier } from './tier.ts';

/**
 * Input of the admission check (allowlist and quotas), run once per call: as a local activity, or
 * inside the execution activity on the lean readonly path (`RunToolRequest.admit`). Admission gates
 * see these four fields only.
 */
export interface AdmitRequest {
  readonly callId: string;
  readonly tool: string;
  readonly tier: SideEffectTier;
  readonly context: CallContext;
}

/**
 * What the `admitCall` local activity is asked. From gate protocol 3 it also checks the arguments
 * (`check: true`) once the call is admitted, so the verdict is recorded with the admission.
 */
export interface AdmitCallRequest extends AdmitRequest {
  readonly check?: boolean;
  readonly input?: unknown;
  /**
   * The allowlist (and with `check` the arguments) only, no load gate: the call has no key yet, so
   * it ends KEY_REQUIRED and must hold no slot.
   */
  readonly allowlistOnly?: boolean;
}

/** The policy decision, recorded in history so a replay takes the same branch. */
export interface AdmitDecision {
  readonly allowed: boolean;
  /** INVALID_INPUT only when the arguments were checked (`AdmitCallRequest.check`) and failed. */
  readonly reason?: 'NOT_ALLOWED' | 'RATE_LIMITED' | 'INVALID_INPUT';
  readonly message?: string;
  readonly retryAfterSeconds?: number;
  /** The approvers in force when the call was admitted; overrides the contract's list when set. */
  readonly approvers?: readonly string[];
  /** How long an approval-tier call waits, when policy overrides the contract. */
  readonly approvalExpiresAfterMs?: number;
  /** True when a concurrency slot was taken that the workflow must hand back with releaseCall. */
  readonly holdsSlot?: boolean;
  /**
   * True when the arguments were checked against the worker's catalog and pass. Absent when they
   * were not checked: not asked, or this worker's activities know no contract for the tool (then
   * the workflow checks them itself, as before protocol 3).
   */
  readonly validated?: boolean;
  /** The approver's preview of the validated arguments, for an approval-tier tool that has one. */
  readonly preview?: string;
  /**
   * The contract's `approval.when` on the validated arguments: false when they need no human.
   * Absent without a condition (and in histories recorded before it existed): a human is needed.
   */
  readonly approvalRequired?: boolean;
  /** How many distinct approvers must approve, when the contract asks for more than one. */
  readonly approvalQuorum?: number;
}

export interface RunToolRequest {
  readonly callId: string;
  readonly tool: string;
  readonly input: unknown;
  readonly key?: string;
  readonly tier: SideEffectTier;
  readonly timeoutMs: number;
  readonly context: CallContext;
  /** Set for an undo: run the named compensation with the original call's input and output. */
  readonly compensationOf?: { readonly output: unknown };
  /**
   * Admit the call (allowlist, then the admission gates) before running the tool, for a call the
   * workflow did not admit itself (the lean readonly path). A refusal fails the attempt, not
   * retryable, with type `ToolFailureType.denied` and `admission: true` in its details; a
   * concurrency slot taken here is handed back when the attempt ends.
   */
  readonly admit?: boolean;
  /**
   * For `checkAndRunTool`: the arguments already passed the check at admission (`admitCall`), so
   * a failure now means the tool's schema changed while the call was open.
   */
  readonly validatedAtAdmission?: boolean;
}

export interface RunToolResult {
  readonly output: unknown;
  readonly attempt: number;
}

export interface VerifyDecisionRequest {
  readonly payload: unknown;
  readonly callId: string;
  readonly runId: string;
  readonly fingerprint: string;
  readonly requester: string;
  readonly approvers: readonly string[];
}

export interface ReleaseRequest {
  readonly callId: string;
  readonly tool: string;
  readonly context: CallContext;
}

/**
 * The activities the toolCall workflow schedules. Workflows import this by type only; the worker
 * builds the real functions with `createActivities`.
 */
export interface ToolgateActivities {
  admitCall(request: AdmitCallRequest): Promise<AdmitDecision>;
  releaseCall(request: ReleaseRequest): Promise<void>;
  verifyDecision(request: VerifyDecisionRequest): Promise<DecisionVerdict>;
  /**
   * Runs the tool with the input as given, which the workflow validated: protocols 1 and 2, and
   * protocol 3 where the activities knew no contract for the tool. Also runs compensations (undo).
   */
  runTool(request: RunToolRequest): Promise<RunToolResult>;
  /**
   * Protocol 3's executor: admits the call when asked (`admit`), checks the raw arguments against
   * the worker's catalog, then runs the tool with the parsed input. Invalid arguments fail the
   * attempt before the tool starts, not retryable, with type `ToolFailureType.denied`, reason
   * INVALID_INPUT and `admission: true` in the details. A separate activity type, so that a worker
   * from before protocol 3 never runs a tool on arguments nobody checked: it does not know this
   * type and fails the attempt instead.
   */
  checkAndRunTool(request: RunToolRequest): Promise<RunToolResult>;
  /**
   * Which of these calls have closed (their workflow is no longer running). Asked by an admission
   * entity before it refuses for concurrency, so a slot held by a terminated call goes back.
   */
  closedCalls(request: { readonly callIds: readonly string[] }): Promise<{ readonly closed: string[] }>;
}

/** Failure types the runTool activity raises, so the workflow can classify without parsing text. */
export const ToolFailureType = {
  /** The executor's own deadline passed. */
  timeout: 'ToolTimeout',
  /** An execution-time check refused the call before any side effect (path escape, SSRF). */
  denied: 'ToolDenied',
  /** The tool raised an error. */
  failed: 'ToolFailed',
  /** The result is larger than the output limit. */
  outputTooLarge: 'ToolOutputTooLarge',
  /** This worker has no implementation for the tool. */
  missingImplementation: 'ToolMissingImplementation',
} as const;
export type ToolFailureType = (typeof ToolFailureType)[keyof typeof ToolFailureType];

/** Details carried by a runTool failure. Only `message` may reach a model. */
export interface ToolFailureDetails {
  readonly message: string;
  readonly effect?: CallEffect;
  readonly reason?: string;
  readonly attempt?: number;
  /**
   * Set when the activity refused the call before this attempt's tool started: admission, or the
   * argument check of `checkAndRunTool`.
   */
  readonly admission?: boolean;
  readonly retryAfterSeconds?: number;
  /** False when the tool said that repeating the call cannot help (`ToolError({ retryable: false })`). */
  readonly retryable?: boolean;
}

/** What the `lookupToolCall` local activity reports about an existing call. */
export interface ToolCallLookup {
  /** `released` means the latest run closed as Failed, so its key is free again. */
  readonly state: 'running' | 'completed' | 'released' | 'not_found';
  readonly fingerprint?: string;
  /** The stored record, for a closed call. */
  readonly record?: CallRecord;
  /** The run described. Absent from lookups recorded before runs were pinned. */
  readonly runId?: string;
}

/** The activity a worker registers for agent workflows; see `createToolCallLookupActivities`. */
export interface ToolCallLookupActivities {
  /** Describes the call's latest run, or the given run when `runId` is set. */
  lookupToolCall(request: { readonly callId: string; readonly runId?: string }): Promise<ToolCallLookup>;
}
