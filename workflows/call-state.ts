/**
 * One call's state as its gates run (docs/design.md, "Shape"), and the few ways it changes: a
 * transition, the close that settles the outcome, a recorded refusal. The gates in `tool-call.ts`
 * take this state and the workflow's settings as arguments; nothing here closes over a call.
 */
import type { SearchAttributeUpdatePair } from '@temporalio/common';
import {
  CancellationScope,
  condition,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { AdmitDecision, ToolgateActivities } from '../src/contracts/activity-types.ts';
import type { DecisionAnswer } from '../src/contracts/approval.ts';
import {
  type CallEffect,
  type CallRecord,
  type CallStatus,
  isTerminalStatus,
} from '../src/contracts/call-record.ts';
import type { ToolCatalog, ToolContract } from '../src/contracts/define-tool.ts';
import type { PayloadLimits } from '../src/contracts/limits.ts';
import {
  leanGatesProtocol,
  recordedValidationProtocol,
  type ToolCallRequest,
} from '../src/contracts/prepare-call.ts';
import { type ReasonCode, reasonCodes } from '../src/contracts/reason-codes.ts';
import { searchAttributeKeys } from '../src/contracts/search-attributes.ts';
import { decisionSignal, decisionUpdate, recordQuery } from './messages.ts';

/**
 * Unwinds the gates once a call's outcome is settled; caught in `toolCall` and never seen outside.
 * Not an Error: it needs no stack, and capturing one is measurable per call in the sandbox.
 */
export class CallClosed {}

/** What every call of one `toolCall` workflow shares: its catalog, limits and activity options. */
export interface GateSettings {
  readonly catalog: ToolCatalog;
  readonly limits: PayloadLimits;
  /**
   * The liveness window: the heartbeat timeout of a tool whose attempt may run longer than this;
   * a shorter one has none (docs/design.md "Liveness and cancellation").
   */
  readonly heartbeatTimeoutMs: number;
  /** Extra time the server's start-to-close timer allows past the executor's own deadline. */
  readonly deadlineGraceMs: number;
  /**
   * Policy checks as local activities: their results are markers in history, so a replay takes
   * the same branch even if the allowlist or the approvers changed since.
   */
  readonly policy: ToolgateActivities;
}

/** What one call knows and has decided so far, handed from gate to gate. */
export interface CallState {
  readonly request: ToolCallRequest;
  readonly record: CallRecord;
  /** Gate protocol 2 or later: readonly calls are admitted by the activity that runs them. */
  readonly lean: boolean;
  /** Gate protocol 3 or later: the argument check is decided by an activity and recorded. */
  readonly recorded: boolean;
  /** Decisions received and not yet checked, oldest first. */
  readonly pendingDecisions: unknown[];
  /**
   * The answers to decisions sent by Update, by payload, once checked: the handler waits for its
   * own. Only the payloads an Update sent are kept.
   */
  readonly decisionAnswers: Map<unknown, DecisionAnswer | undefined>;
  /** A decision has counted; later ones are refused as they arrive. */
  decided: boolean;
  contract?: ToolContract;
  /** Whether the approval wait is `awaitDecisionUntilExpiry` (see `decisionsQueuedAtExpiryPatch`). */
  checkQueuedAtExpiry: boolean;
  /** Only a decision that counts uses its nonce (see `nonceUsedWhenCountedPatch`). */
  countedNoncesOnly: boolean;
  /** The tier needs a key and the call has none: KEY_REQUIRED once the allowlist and arguments pass. */
  keyMissing: boolean;
  admission?: AdmitDecision;
  /** An admission is in flight: a slot may be held even if it is interrupted. */
  admitting: boolean;
  /** A readonly call on the lean path: admitted by its execution activity. */
  admitInExecution: boolean;
  /** The arguments are checked by an activity, not in this workflow. */
  checkedByExecutor: boolean;
  /** The arguments the tool gets: as sent, or as the schema parsed them. */
  input: unknown;
}

/** The most decisions a call queues; more are counted as dropped, so signals cannot grow the record. */
const maxPendingDecisions = 50;
/** The most refused decisions a record lists; more are only counted. */
const maxRecordedRefusals = 100;
/** The most nonces of decisions dropped unread that a record keeps. */
const maxDroppedNonces = 20;

/**
 * Starts a call's record and registers its query and decision signal. The request is read
 * defensively: a workflow started by hand with a malformed one still gets a record, which gate 1
 * then closes as INVALID_INPUT (`describeRequestProblem`).
 */
export function openCall(request: ToolCallRequest): CallState {
  const info = workflowInfo();
  const given = (typeof request === 'object' && request !== null ? request : {}) as Partial<ToolCallRequest>;
  const context = (
    typeof given.context === 'object' && given.context !== null ? given.context : {}
  ) as Partial<ToolCallRequest['context']>;
  const text = (value: unknown) => (typeof value === 'string' ? value : '');
  const record: CallRecord = {
    callId: info.workflowId,
    runId: info.runId,
    tool: text(given.tool),
    tenant: text(context.tenant),
    principal: text(context.principal),
    principalKind: context.principalKind ?? 'agent',
    ...(given.key !== undefined ? { key: given.key } : {}),
    fingerprint: text(given.fingerprint),
    input: given.input,
    status: 'pending',
    effect: 'none',
    attempts: 0,
    transitions: [{ status: 'pending', at: now() }],
    refusedDecisions: [],
    ...(given.replay ? { replay: given.replay } : {}),
  };
  // The gate protocol is pinned by the start event: histories from earlier protocols replay down
  // the path they took.
  const protocol = typeof given.protocol === 'number' ? given.protocol : 1;
  const call: CallState = {
    request,
    record,
    lean: protocol >= leanGatesProtocol,
    recorded: protocol >= recordedValidationProtocol,
    pendingDecisions: [],
    decisionAnswers: new Map(),
    decided: false,
    checkQueuedAtExpiry: false,
    countedNoncesOnly: false,
    keyMissing: false,
    admitting: false,
    admitInExecution: false,
    checkedByExecutor: false,
    input: given.input,
  };
  setHandler(recordQuery, () => record);
  setHandler(decisionSignal, (payload: unknown) => {
    receiveDecision(call, payload);
  });
  setHandler(decisionUpdate, (payload: unknown) => answerDecision(call, payload), {
    validator: checkDecisionShape,
  });
  return call;
}

/**
 * A decision by Update: queued and checked as a signal's is, then answered. The call may close
 * before it is read (expired, cancelled, denied at an earlier gate): then that is the answer.
 */
async function answerDecision(call: CallState, payload: unknown): Promise<DecisionAnswer> {
  const tier = call.contract?.tier;
  if (tier !== undefined && tier !== 'approval') {
    return {
      accepted: false,
      reason: `the call's tool is ${tier}-tier, which never waits for a human decision`,
    };
  }
  call.decisionAnswers.set(payload, undefined);
  const dropped = receiveDecision(call, payload);
  if (dropped) {
    call.decisionAnswers.delete(payload);
    return { accepted: false, dropped: true, reason: dropped };
  }
  // Not cancellable: a cancel closes the call, and that closing is then the answer.
  await CancellationScope.nonCancellable(() =>
    condition(() => call.decisionAnswers.get(payload) !== undefined || isTerminalStatus(call.record.status)),
  );
  const answer = call.decisionAnswers.get(payload);
  call.decisionAnswers.delete(payload);
  return (
    answer ?? {
      accepted: false,
      closed: true,
      reason: `the call closed (${call.record.status}) before this decision was checked`,
    }
  );
}

/**
 * The Update's validator: the shape of a signed decision, nothing more (no signature, no clock),
 * so a malformed one is refused without a word in history.
 */
function checkDecisionShape(payload: unknown): void {
  const candidate = payload as { claims?: unknown; signature?: unknown } | null;
  if (typeof candidate !== 'object' || candidate === null || Array.isArray(candidate)) {
    throw new TypeError('a decision is an object with claims and a signature');
  }
  if (
    typeof candidate.claims !== 'object' ||
    candidate.claims === null ||
    typeof candidate.signature !== 'string'
  ) {
    throw new TypeError('a decision is an object with claims and a signature');
  }
}

/** Records the answer to a decision an Update is waiting for; signals' decisions are not kept. */
export function answer(call: CallState, payload: unknown, given: DecisionAnswer): void {
  if (call.decisionAnswers.has(payload)) call.decisionAnswers.set(payload, given);
}

/** Queues a decision, or refuses it at once; returns why, when it was dropped unread. */
function receiveDecision(call: CallState, payload: unknown): string | undefined {
  const { record } = call;
  // A flood of signals must not grow the record past Temporal's payload limit: the queue is
  // bounded and refusals past a cap are only counted.
  if (call.pendingDecisions.length >= maxPendingDecisions) {
    record.refusedDecisionsDropped = (record.refusedDecisionsDropped ?? 0) + 1;
    record.decisionsDroppedUnread = (record.decisionsDroppedUnread ?? 0) + 1;
    const { nonce } = describeClaim(payload);
    if (nonce !== undefined) {
      record.droppedUnreadNonces = [...(record.droppedUnreadNonces ?? []), nonce].slice(-maxDroppedNonces);
    }
    return (
      `this decision was dropped unread and did not count. The call's queue of decisions to check was full ` +
      `(${record.decisionsDroppedUnread} dropped unread so far): someone is flooding it with signals; find out ` +
      "who can signal workflows in the call's namespace. Send it again once the flood stops (a decision never counts twice)"
    );
  }
  if (call.decided) {
    // A decision after the first accepted one never counts; it is recorded and nothing else.
    const reason = 'the call was already decided';
    recordRefusal(call, { at: now(), ...describeClaim(payload), reason });
    answer(call, payload, { accepted: false, reason });
    return undefined;
  }
  call.pendingDecisions.push(payload);
  return undefined;
}

/** The workflow's clock, as an ISO string. */
export function now(): string {
  return new Date().toISOString();
}

/** Moves the call to `status`; `index: false` keeps it out of visibility (the record still has it). */
export function transition(call: CallState, status: CallStatus, options: { index?: boolean } = {}): void {
  const { record } = call;
  record.status = status;
  record.transitions.push({ status, at: now() });
  if (options.index === false) return;
  const updates: SearchAttributeUpdatePair[] = [
    { key: searchAttributeKeys.callStatus, value: status },
    { key: searchAttributeKeys.callEffect, value: record.effect },
  ];
  if (record.reason) updates.push({ key: searchAttributeKeys.reasonCode, value: record.reason });
  upsertSearchAttributes(updates);
}

/** Settles the call's outcome and unwinds the gates. */
export function close(
  call: CallState,
  status: CallStatus,
  reason: ReasonCode | undefined,
  effect: CallEffect,
  message?: string,
): never {
  const { record } = call;
  record.effect = effect;
  if (reason) record.reason = reason;
  record.message = message ?? (reason ? reasonCodes[reason].meaning : undefined);
  transition(call, status);
  throw new CallClosed();
}

/** Denies the call: nothing ran, so its effect is none. */
export function deny(call: CallState, reason: ReasonCode, message?: string): never {
  return close(call, 'denied', reason, 'none', message);
}

export function recordRefusal(call: CallState, refusal: CallRecord['refusedDecisions'][number]): void {
  const { record } = call;
  if (record.refusedDecisions.length >= maxRecordedRefusals) {
    record.refusedDecisionsDropped = (record.refusedDecisionsDropped ?? 0) + 1;
  } else {
    record.refusedDecisions.push(refusal);
  }
}

/** What a refused payload claimed, for the audit. The payload is untrusted, so read defensively. */
export function describeClaim(payload: unknown): {
  decision: string;
  claimedApprover: string;
  nonce?: string;
} {
  const claims =
    payload && typeof payload === 'object' && 'claims' in payload
      ? (payload as { claims: unknown }).claims
      : undefined;
  const read = (field: string) =>
    claims && typeof claims === 'object' && typeof (claims as Record<string, unknown>)[field] === 'string'
      ? ((claims as Record<string, unknown>)[field] as string).slice(0, 128)
      : undefined;
  const nonce = read('nonce');
  return {
    decision: read('decision') ?? 'unknown',
    claimedApprover: read('approver') ?? 'unknown',
    ...(nonce ? { nonce } : {}),
  };
}
