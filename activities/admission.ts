/**
 * Admission (docs/design.md, "Admission"): the allowlist, deny by default, then each load gate
 * (quotas, breakers) in order, and the per-tool approval overrides a worker's policy sets.
 */
import type { Client } from '@temporalio/client';
import type { AdmitDecision, AdmitRequest, ReleaseRequest } from '../src/contracts/activity-types.ts';
import { type AllowlistPolicy, isToolAllowed } from '../src/policy/allowlist.ts';
import type { OperatorLogger } from './executor.ts';
import { notAllowedMessage } from './failures.ts';

/** What a load gate is asked: the call's four fields, and how long it may hold a slot. */
export interface GateRequest extends AdmitRequest {
  /**
   * How long the call may hold a concurrency slot at most: its approval wait, if any, and every
   * attempt of its tool. Past it, the slot may be reclaimed.
   */
  readonly leaseMs: number;
}

/** Where a gate keeps its state: the cluster, reached through the activity's client. */
export interface GateContext {
  readonly client: Client;
  /** The task queue the worker serves; admission entities run there too. */
  readonly taskQueue: string;
  readonly logger: OperatorLogger;
}

/** A gate that can refuse a call for load reasons (quotas, breakers): see `safety/admission-gates.ts`. */
export interface AdmissionGate {
  admit(
    request: GateRequest,
    context: GateContext,
  ): Promise<AdmitDecision | undefined> | AdmitDecision | undefined;
  /** Hands back what `admit` took for the call. Idempotent. */
  release(request: ReleaseRequest, context: GateContext): Promise<void> | void;
  /**
   * Wraps one attempt of the tool, e.g. to take a breaker's permit and report what the attempt
   * did. Throws, before the attempt, a failure that refuses it.
   */
  guardAttempt?<T>(
    request: GateRequest & { readonly attempt: number },
    attempt: () => Promise<T>,
    context: GateContext,
  ): Promise<T>;
}

export interface ToolPolicy extends AllowlistPolicy {
  /** Per-tool approval overrides: who may approve and how long a call waits. */
  readonly approvals?: Readonly<
    Record<string, { readonly approvers?: readonly string[]; readonly expiresAfterMs?: number }>
  >;
}

/** The allowlist and the load gates of one worker. */
export interface Admission {
  /** The allowlist, then every load gate in order (`loadGates: false` checks the allowlist only). */
  admit(
    request: GateRequest,
    context: GateContext,
    options?: { readonly loadGates?: boolean },
  ): Promise<AdmitDecision>;
  /** Hands back what the load gates took for a call. Idempotent. */
  release(request: ReleaseRequest, context: GateContext): Promise<void>;
  /** Runs one attempt inside every gate's `guardAttempt`. */
  guardAttempt<T>(
    request: GateRequest & { readonly attempt: number },
    attempt: () => Promise<T>,
    context: GateContext,
  ): Promise<T>;
  /** The approval override of a tool, when the policy sets one. */
  approvalOverride(
    tool: string,
  ): { readonly approvers?: readonly string[]; readonly expiresAfterMs?: number } | undefined;
}

export function createAdmission(policy: ToolPolicy, gates: readonly AdmissionGate[]): Admission {
  const approvalOverride = (tool: string) =>
    policy.approvals && Object.hasOwn(policy.approvals, tool) ? policy.approvals[tool] : undefined;
  return {
    approvalOverride,
    async admit(request, context, { loadGates = true } = {}) {
      if (!isToolAllowed(policy, request.tool, request.context.tenant)) {
        return { allowed: false, reason: 'NOT_ALLOWED', message: notAllowedMessage };
      }
      const refusal = loadGates ? await passLoadGates(gates, request, context) : { holdsSlot: false };
      if ('allowed' in refusal) return refusal;
      const override = approvalOverride(request.tool);
      return {
        allowed: true,
        ...(override?.approvers ? { approvers: [...override.approvers] } : {}),
        ...(override?.expiresAfterMs !== undefined
          ? { approvalExpiresAfterMs: override.expiresAfterMs }
          : {}),
        ...(refusal.holdsSlot ? { holdsSlot: true } : {}),
      };
    },
    async release(request, context) {
      for (const gate of gates) await gate.release(request, context);
    },
    guardAttempt<T>(
      request: GateRequest & { readonly attempt: number },
      attempt: () => Promise<T>,
      context: GateContext,
    ): Promise<T> {
      // The first gate's guard is the outermost: it sees what the inner ones refused.
      let guarded = attempt;
      for (const gate of [...gates].reverse()) {
        const inner = guarded;
        const guard = gate.guardAttempt?.bind(gate);
        if (guard) guarded = () => guard(request, inner, context);
      }
      return guarded();
    },
  };
}

/**
 * Every load gate in order: the first refusal, with what earlier gates took handed back so a
 * refusal leaves nothing held; or whether a gate now holds a slot for the call.
 */
async function passLoadGates(
  gates: readonly AdmissionGate[],
  request: GateRequest,
  context: GateContext,
): Promise<AdmitDecision | { readonly holdsSlot: boolean }> {
  let holdsSlot = false;
  for (const [index, gate] of gates.entries()) {
    const decision = await gate.admit(request, context);
    if (decision && !decision.allowed) {
      if (holdsSlot) for (const earlier of gates.slice(0, index)) await earlier.release(request, context);
      return decision;
    }
    if (decision?.holdsSlot) holdsSlot = true;
  }
  return { holdsSlot };
}

/**
 * The fields admission gates see, and nothing else: a gate never gets the arguments, and `release`
 * gets the same call ID, tool and context `admit` got.
 */
export function gateRequestOf(request: AdmitRequest, leaseMs: number): GateRequest {
  return {
    callId: request.callId,
    tool: request.tool,
    tier: request.tier,
    context: request.context,
    leaseMs,
  };
}
