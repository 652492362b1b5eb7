import type { DecisionClaims } from '../contracts/approval.ts';
import { approverRefusal } from './identity.ts';

export interface AuthorizeDecisionOptions {
  readonly claims: DecisionClaims;
  readonly callId: string;
  readonly runId: string;
  readonly fingerprint: string;
  readonly requester: string;
  /** Names, or `role:<name>` entries matched against the approver's signed roles. */
  readonly approvers: readonly string[];
  readonly nowMs: number;
  /** How old a signed decision may be. Older ones are stale and refused. */
  readonly maxAgeMs: number;
}

/** Pure authorisation of a decision whose signature is already verified. Returns a refusal reason. */
export function authorizeDecision(options: AuthorizeDecisionOptions): string | undefined {
  const { claims } = options;
  if (claims.callId !== options.callId) return 'the decision is for a different call';
  if (claims.runId !== options.runId)
    return 'the decision is for an earlier run of this call; sign a new one';
  if (claims.fingerprint !== options.fingerprint) {
    return 'the decision approves different arguments (argument hash mismatch)';
  }
  if (claims.approverKind !== 'human')
    return `a ${claims.approverKind} principal may not approve; only humans may`;
  const issuedAtMs = Date.parse(claims.issuedAt);
  if (issuedAtMs > options.nowMs + 60_000) return 'the decision is dated in the future';
  if (options.nowMs - issuedAtMs > options.maxAgeMs) return 'the decision is stale; sign a new one';
  return approverRefusal({
    approver: claims.approver,
    roles: claims.roles,
    requester: options.requester,
    approvers: options.approvers,
  });
}
