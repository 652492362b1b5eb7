/**
 * Gate 4's wait for a human decision (docs/design.md, "Approval"): decisions arrive as signals,
 * each is verified by a local activity, refused ones are recorded, and the call expires on a timer.
 */
import { CancellationScope, condition, isCancellation, log, sleep } from '@temporalio/workflow';
import type { DecisionClaims } from '../src/contracts/approval.ts';
import { reasonCodes } from '../src/contracts/reason-codes.ts';
import { countApproval } from '../src/policy/quorum.ts';
import {
  answer,
  type CallState,
  deny,
  describeClaim,
  type GateSettings,
  now,
  recordRefusal,
} from './call-state.ts';

/** Waits for a decision that counts; denies the call on expiry or cancel. */
export function awaitDecision(
  call: CallState,
  settings: GateSettings,
  approvers: readonly string[],
  expiresAtMs: number,
): Promise<DecisionClaims> {
  return call.checkQueuedAtExpiry
    ? awaitDecisionUntilExpiry(call, settings, approvers, expiresAtMs)
    : awaitDecisionBeforePatch(call, settings, approvers, expiresAtMs);
}

function denyCancelledWhileWaiting(call: CallState): never {
  return deny(call, 'CANCELLED', 'The call was cancelled while it waited for approval; nothing ran.');
}

function denyExpired(call: CallState): never {
  return deny(
    call,
    'APPROVAL_EXPIRED',
    `${reasonCodes.APPROVAL_EXPIRED.meaning} ${reasonCodes.APPROVAL_EXPIRED.nextStep}`,
  );
}

/**
 * The wait of approval calls started before the `decisions-queued-at-expiry` patch: a condition
 * with a timeout, read again after every refused decision. Such a call expired with a valid
 * decision still unread.
 */
async function awaitDecisionBeforePatch(
  call: CallState,
  settings: GateSettings,
  approvers: readonly string[],
  expiresAtMs: number,
): Promise<DecisionClaims> {
  const seenNonces = new Set<string>();
  for (;;) {
    const remainingMs = expiresAtMs - Date.now();
    let arrived: boolean;
    try {
      arrived = remainingMs > 0 && (await condition(() => call.pendingDecisions.length > 0, remainingMs));
    } catch (error) {
      if (isCancellation(error)) return denyCancelledWhileWaiting(call);
      throw error;
    }
    if (!arrived) return denyExpired(call);
    const claims = await checkNextDecision(call, settings, approvers, seenNonces);
    if (claims) return claims;
  }
}

/**
 * The wait of calls started since the `decisions-queued-at-expiry` patch. The expiry is one timer
 * for the whole wait, so whether the call has expired is an event in its history, never a clock
 * read after a local activity (whose time a replay may see a workflow task earlier). The decisions
 * already queued when it expires are still checked, since checking the one ahead of them (a forged
 * one, say) may have run past it; those that arrive later are not, so a stream of signals cannot
 * hold the call open, and a decision signed after the expiry never counts.
 */
async function awaitDecisionUntilExpiry(
  call: CallState,
  settings: GateSettings,
  approvers: readonly string[],
  expiresAtMs: number,
): Promise<DecisionClaims> {
  const seenNonces = new Set<string>();
  let expired = false;
  const expiry = new CancellationScope();
  void expiry
    .run(() => sleep(Math.max(1, expiresAtMs - Date.now())))
    .then(
      () => {
        expired = true;
      },
      () => undefined,
    );
  let leftAfterExpiry: number | undefined;
  try {
    for (;;) {
      if (!expired) {
        try {
          await condition(() => expired || call.pendingDecisions.length > 0);
        } catch (error) {
          if (isCancellation(error)) return denyCancelledWhileWaiting(call);
          throw error;
        }
      }
      if (expired) {
        leftAfterExpiry ??= call.pendingDecisions.length;
        if (leftAfterExpiry === 0) return denyExpired(call);
        leftAfterExpiry--;
      }
      const claims = await checkNextDecision(call, settings, approvers, seenNonces, () =>
        expired ? expiresAtMs : undefined,
      );
      if (claims) return claims;
    }
  } finally {
    expiry.cancel();
  }
}

/**
 * Checks the oldest queued decision: its claims if it counts, or undefined once its refusal is
 * recorded. `signedBy` gives, once the call has expired, the time a counting decision must have
 * been signed by.
 */
async function checkNextDecision(
  call: CallState,
  settings: GateSettings,
  approvers: readonly string[],
  seenNonces: Set<string>,
  signedBy: () => number | undefined = () => undefined,
): Promise<DecisionClaims | undefined> {
  const { record } = call;
  const payload = call.pendingDecisions.shift();
  const verdict = await settings.policy.verifyDecision({
    payload,
    callId: record.callId,
    runId: record.runId,
    fingerprint: record.fingerprint,
    requester: record.principal,
    approvers,
  });
  const deadline = signedBy();
  const late = verdict.accepted && deadline !== undefined && Date.parse(verdict.claims.issuedAt) > deadline;
  if (verdict.accepted && !late && !seenNonces.has(verdict.claims.nonce)) {
    const quorum = record.approval!.quorum ?? 1;
    if (quorum > 1 && verdict.claims.decision === 'approve') {
      return countTowardQuorum(call, payload, verdict.claims, quorum, seenNonces);
    }
    seenNonces.add(verdict.claims.nonce);
    record.approval!.decisionNonce = verdict.claims.nonce;
    answer(call, payload, { accepted: true });
    return verdict.claims;
  }
  const refusal = verdict.accepted
    ? {
        ...describeClaim(payload),
        reason: late
          ? 'the decision was signed after the call expired'
          : 'this signed decision was already used',
      }
    : {
        ...describeClaim(payload),
        ...(verdict.nonce ? { nonce: verdict.nonce } : {}),
        reason: verdict.reason,
      };
  // A refused decision uses up its nonce only for calls started before `nonce-used-when-counted`.
  if (refusal.nonce && !call.countedNoncesOnly) seenNonces.add(refusal.nonce);
  recordRefusal(call, { at: now(), ...refusal });
  answer(call, payload, { accepted: false, reason: refusal.reason });
  log.warn('approval decision refused', { callId: record.callId, ...refusal });
  return undefined;
}

/**
 * An approval toward a quorum of `quorum` distinct approvers: counted once per person (names
 * compared as identities), the claims returned once the last one needed has counted. A second
 * approval by someone already counted is refused and recorded.
 */
function countTowardQuorum(
  call: CallState,
  payload: unknown,
  claims: DecisionClaims,
  quorum: number,
  seenNonces: Set<string>,
): DecisionClaims | undefined {
  const approval = call.record.approval!;
  approval.approvals ??= [];
  const step = countApproval(
    approval.approvals,
    { approver: claims.approver, at: now(), nonce: claims.nonce },
    quorum,
  );
  if (step.kind === 'repeat') {
    recordRefusal(call, { at: now(), ...describeClaim(payload), reason: step.reason });
    answer(call, payload, { accepted: false, reason: step.reason });
    return undefined;
  }
  seenNonces.add(claims.nonce);
  answer(call, payload, { accepted: true, reason: `counted: ${step.counted} of ${quorum} approvals` });
  if (step.kind === 'counted') return undefined;
  approval.decisionNonce = claims.nonce;
  return claims;
}
