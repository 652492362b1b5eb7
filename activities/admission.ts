/**
 * Admission (docs/design.md, "Admission"): the allowlist, deny by default, then each load gate
 * (quotas, breakers) in order, and the per-tool approval overrides a worker's policy sets.
 */
import type { AdmitDecision, AdmitRequest, ReleaseRequest } from '../src/contracts/activity-types.ts';
import { type AllowlistPolicy, isToolAllowed } from '../src/policy/allowlist.ts';
import { notAllowedMessage } from './failures.ts';

/** A gate that can refuse a call for load reasons (quotas, breakers). See `src/policy`. */
export interface AdmissionGate {
  admit(request: AdmitRequest): AdmitDecision | undefined;
  release(request: ReleaseRequest): void;
}

export interface ToolPolicy extends AllowlistPolicy {
  /** Per-tool approval overrides: who may approve and how long a call waits. */
  readonly approvals?: Readonly<
    Record<string, { readonly approvers?: readonly string[]; readonly expiresAfterMs?: number }>
  >;
}

/** The allowlist and the load gates of one worker. */
export interface Admission {
  /**
   * The allowlist, then every load gate in order (`loadGates: false` checks the allowlist only).
   * Synchronous: nothing here waits.
   */
  admit(request: AdmitRequest, options?: { readonly loadGates?: boolean }): AdmitDecision;
  /** Hands back what the load gates took for a call. Idempotent. */
  release(request: ReleaseRequest): void;
}

export function createAdmission(policy: ToolPolicy, gates: readonly AdmissionGate[]): Admission {
  return {
    admit(request, { loadGates = true } = {}) {
      if (!isToolAllowed(policy, request.tool, request.context.tenant)) {
        return { allowed: false, reason: 'NOT_ALLOWED', message: notAllowedMessage };
      }
      const refusal = loadGates ? passLoadGates(gates, request) : { holdsSlot: false };
      if ('allowed' in refusal) return refusal;
      const override =
        policy.approvals && Object.hasOwn(policy.approvals, request.tool)
          ? policy.approvals[request.tool]
          : undefined;
      return {
        allowed: true,
        ...(override?.approvers ? { approvers: [...override.approvers] } : {}),
        ...(override?.expiresAfterMs !== undefined
          ? { approvalExpiresAfterMs: override.expiresAfterMs }
          : {}),
        ...(refusal.holdsSlot ? { holdsSlot: true } : {}),
      };
    },
    release(request) {
      for (const gate of gates) gate.release(request);
    },
  };
}

/**
 * Every load gate in order: the first refusal, with what earlier gates took handed back so a
 * refusal leaves nothing held; or whether a gate now holds a slot for the call.
 */
function passLoadGates(
  gates: readonly AdmissionGate[],
  request: AdmitRequest,
): AdmitDecision | { readonly holdsSlot: boolean } {
  let holdsSlot = false;
  for (const [index, gate] of gates.entries()) {
    const decision = gate.admit(request);
    if (decision && !decision.allowed) {
      if (holdsSlot) for (const earlier of gates.slice(0, index)) earlier.release(request);
      return decision;
    }
    if (decision?.holdsSlot) holdsSlot = true;
  }
  return { holdsSlot };
}

/**
 * The four fields admission gates see, and nothing else: a gate never gets the arguments, and
 * `release` gets the same object `admit` got.
 */
export function admitRequestOf(request: AdmitRequest): AdmitRequest {
  return { callId: request.callId, tool: request.tool, tier: request.tier, context: request.context };
}
