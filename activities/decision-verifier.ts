import { type KeyObject, verify } from 'node:crypto';
import type { VerifyDecisionRequest } from '../src/contracts/activity-types.ts';
import { type DecisionVerdict, signedDecisionSchema } from '../src/contracts/approval.ts';
import { canonicalJson } from '../src/contracts/canonical-json.ts';
import { authorizeDecision } from '../src/policy/approvers.ts';

/**
 * Verifies a decision's Ed25519 signature against the configured signers, then authorises it.
 * Anything unexpected is a refusal with a reason, never an exception: the call keeps waiting.
 */
export function verifySignedDecision(
  request: VerifyDecisionRequest,
  publicKeys: readonly KeyObject[],
  maxAgeMs: number,
  nowMs = Date.now(),
): DecisionVerdict {
  const parsed = signedDecisionSchema.safeParse(request.payload);
  if (!parsed.success) {
    return {
      accepted: false,
      reason: 'the decision is not a signed decision',
      claimedApprover: 'unknown',
      decision: 'unknown',
    };
  }
  const { claims, signature } = parsed.data;
  const refuse = (reason: string): DecisionVerdict => ({
    accepted: false,
    reason,
    claimedApprover: claims.approver,
    decision: claims.decision,
    nonce: claims.nonce,
  });
  const message = Buffer.from(canonicalJson(claims));
  const signatureBytes = Buffer.from(signature, 'base64');
  const signedByTrustedKey = publicKeys.some((key) => {
    try {
      return verify(null, message, key, signatureBytes);
    } catch {
      return false;
    }
  });
  if (!signedByTrustedKey) return refuse('the signature is missing or not from a trusted approval signer');
  const problem = authorizeDecision({
    claims,
    callId: request.callId,
    runId: request.runId,
    fingerprint: request.fingerprint,
    requester: request.requester,
    approvers: request.approvers,
    nowMs,
    maxAgeMs,
  });
  return problem ? refuse(problem) : { accepted: true, claims };
}
