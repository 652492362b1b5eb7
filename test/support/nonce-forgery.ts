/**
 * The forged-nonce case: someone who saw the nonce of alice's decision sends it first, unsigned, then
 * alice's own signed decision arrives. Returns the claims both carried.
 */
import { type ApprovalSigner, decisionClaims } from '../../src/client/approval-signer.ts';
import type { ToolgateClient } from '../../src/client/toolgate-client.ts';

/** alice's approval of this run of a call, on these arguments, unsigned. */
export function aliceApproves(
  started: { readonly callId: string; readonly runId?: string | undefined },
  fingerprint: string,
) {
  return decisionClaims({
    callId: started.callId,
    runId: started.runId ?? '',
    decision: 'approve',
    approver: 'alice',
    approverKind: 'human',
    roles: [],
    fingerprint,
  });
}

export async function sendForgedThenSigned(
  client: ToolgateClient,
  started: { readonly callId: string; readonly runId?: string | undefined },
  fingerprint: string,
  signer: ApprovalSigner,
) {
  const claims = aliceApproves(started, fingerprint);
  await client.sendDecision(started.callId, { claims, signature: 'AAAA' });
  await client.sendDecision(started.callId, signer.sign(claims));
  return claims;
}
