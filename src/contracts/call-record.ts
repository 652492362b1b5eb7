import type { ReasonCode } from './reason-codes.ts';
import { type SideEffectTier, tierIsRetrySafe } from './tier.ts';

/** The states of a call. docs/design.md, "States and effects", draws the transitions between them. */
export const CallStatus = {
  pending: 'pending',
  awaiting_approval: 'awaiting_approval',
  running: 'running',
  succeeded: 'succeeded',
  denied: 'denied',
  failed: 'failed',
  timeout: 'timeout',
  cancelled: 'cancelled',
} as const;
export type CallStatus = (typeof CallStatus)[keyof typeof CallStatus];

export const terminalStatuses: readonly CallStatus[] = [
  'succeeded',
  'denied',
  'failed',
  'timeout',
  'cancelled',
];

export function isTerminalStatus(status: CallStatus): boolean {
  return terminalStatuses.includes(status);
}

/** Whether the world was touched: `unknown` means the side effect may have happened in part. */
export const CallEffect = { none: 'none', applied: 'applied', unknown: 'unknown' } as const;
export type CallEffect = (typeof CallEffect)[keyof typeof CallEffect];

/** The kind of principal behind a request or a decision. Only humans may approve. */
export type PrincipalKind = 'human' | 'agent' | 'service';

/** Who is asking. It comes from the application that embeds toolgate, never from the model. */
export interface CallContext {
  readonly tenant: string;
  readonly principal: string;
  readonly principalKind: PrincipalKind;
}

export interface Transition {
  readonly status: CallStatus;
  /** ISO timestamp from workflow time, so it replays identically. */
  readonly at: string;
  readonly note?: string;
}

/** A decision that was refused and therefore did not count. */
export interface RefusedDecision {
  readonly at: string;
  readonly decision: string;
  readonly claimedApprover: string;
  readonly reason: string;
  /** The nonce of the signed decision, when it had one, so its sender can find the verdict. */
  readonly nonce?: string;
}

export interface ApprovalState {
  readonly approvers: readonly string[];
  readonly expiresAt: string;
  readonly preview?: string;
  decidedBy?: string;
  decision?: 'approve' | 'reject';
  comment?: string;
  decidedAt?: string;
  /** The nonce of the accepted signed decision. */
  decisionNonce?: string;
  /** How many distinct approvers had to approve, when more than one. */
  readonly quorum?: number;
  /** With a quorum: each approval that counted, in order (the last one completed the quorum). */
  approvals?: Array<{ readonly approver: string; readonly at: string; readonly nonce: string }>;
}

/** Audit of an operator's replay: the new run says which run it replaces and why. */
export interface ReplayInfo {
  readonly replacesRunId: string;
  readonly operator: string;
  readonly force: boolean;
  readonly reason?: string;
}

/**
 * An operator's undo of a succeeded reversible call. `succeeded`: the compensation ran, so the
 * call's effect is reversed. `failed`: it could not run; the effect stands, and an operator may try
 * again. `running`: it is running now (`at` is when it started).
 */
export interface UndoInfo {
  readonly at: string;
  readonly operator: string;
  readonly status: 'succeeded' | 'failed' | 'running';
  readonly message?: string;
}

/**
 * The record of one tool call. It is readable by query while the call is open and from the workflow
 * result once it is closed.
 */
export interface CallRecord {
  readonly callId: string;
  runId: string;
  readonly tool: string;
  tier?: SideEffectTier;
  readonly tenant: string;
  readonly principal: string;
  readonly principalKind: PrincipalKind;
  readonly key?: string;
  readonly fingerprint: string;
  readonly input: unknown;
  status: CallStatus;
  effect: CallEffect;
  reason?: ReasonCode;
  /** Safe to show a model: no stack traces, paths, hosts or secrets. */
  message?: string;
  output?: unknown;
  attempts: number;
  transitions: Transition[];
  refusedDecisions: RefusedDecision[];
  /**
   * Decisions dropped without a record entry: refusals past the list's cap, and decisions dropped
   * unread (counted in `decisionsDroppedUnread` too). Both only happen in a flood of signals.
   */
  refusedDecisionsDropped?: number;
  /**
   * Decisions dropped without being checked, because the queue of decisions waiting to be checked
   * was full (a flood of signals). A valid decision among them did not count: it must be sent again.
   */
  decisionsDroppedUnread?: number;
  /**
   * The claimed nonces of the last decisions dropped unread (at most 20), so an approver's client
   * can tell that its own decision was one of them. Claimed, not verified: anyone who can signal
   * can put a nonce here.
   */
  droppedUnreadNonces?: string[];
  approval?: ApprovalState;
  /**
   * Set when the contract's `approval.when` said these arguments need no human: the call ran without
   * waiting (its tier's other rules still applied).
   */
  approvalNotNeeded?: true;
  replay?: ReplayInfo;
  undo?: UndoInfo;
  /** Set when the record was produced by the client without a workflow run, e.g. KEY_MISMATCH. */
  readonly synthetic?: boolean;
  /** Seconds the caller should wait before trying again, for RATE_LIMITED. */
  retryAfterSeconds?: number;
  /** False when the tool said that repeating the call cannot help, whatever its reason code says. */
  retryable?: boolean;
}

/**
 * The type of the failure a toolCall workflow closes with when it releases its key: closing as
 * Failed lets `ALLOW_DUPLICATE_FAILED_ONLY` start a new run under the same ID (docs/design.md,
 * "Idempotency"). The failure's first detail is the call record.
 */
export const releasedFailureType = 'ToolCallReleased';

/**
 * Whether a closed call frees its key (docs/design.md, "Idempotency"): only when no side effect can
 * have happened, or when the tier is safe to retry. Everything else keeps the key taken, including
 * an outcome nobody knows.
 */
export function keyIsReleased(
  record: Pick<CallRecord, 'status' | 'effect'>,
  tier: SideEffectTier | undefined,
): boolean {
  if (record.status === 'succeeded') return false;
  if (record.effect === 'none') return true;
  return tier !== undefined && tierIsRetrySafe(tier);
}
