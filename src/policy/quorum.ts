/**
 * Counting approvals toward a quorum (docs/design.md "Approval"), as pure code: the workflow calls it
 * with each decision the verifier accepted, and a property test drives it with the verifier's own
 * authorisation over random sequences. Each person counts once, their name compared as an identity.
 */
import { sameIdentity } from './identity.ts';

export interface CountedApproval {
  readonly approver: string;
  readonly at: string;
  readonly nonce: string;
}

export type QuorumStep =
  /** Counted; more approvals are needed. */
  | { readonly kind: 'counted'; readonly counted: number }
  /** Counted, and the quorum is complete: the call may run. */
  | { readonly kind: 'complete'; readonly counted: number }
  /** Not counted: this person's approval already counts. */
  | { readonly kind: 'repeat'; readonly reason: string };

/** Adds one verified approval to `counted` (in place) unless its approver is counted already. */
export function countApproval(
  counted: CountedApproval[],
  approval: CountedApproval,
  quorum: number,
): QuorumStep {
  if (counted.some((entry) => sameIdentity(entry.approver, approval.approver))) {
    return {
      kind: 'repeat',
      reason: `${approval.approver}'s approval already counts toward the quorum; another approver must decide`,
    };
  }
  counted.push(approval);
  return counted.length >= quorum
    ? { kind: 'complete', counted: counted.length }
    : { kind: 'counted', counted: counted.length };
}
