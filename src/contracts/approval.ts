import { z } from 'zod';

/**
 * What an approver asserts. The claims are signed by an approval signer (the inbox, the CLI) and
 * the worker verifies the signature, so whoever can merely send a signal cannot pose as an approver.
 */
export const decisionClaimsSchema = z.strictObject({
  callId: z.string().min(1).max(512),
  /** The run being decided. A released key starts a new run, which needs a new decision. */
  runId: z.string().min(1).max(128),
  decision: z.enum(['approve', 'reject']),
  approver: z.string().min(1).max(128),
  approverKind: z.enum(['human', 'agent', 'service']),
  roles: z.array(z.string().max(64)).max(32),
  /** The call fingerprint being approved: an approval binds to these exact arguments. */
  fingerprint: z.string().regex(/^[0-9a-f]{64}$/),
  comment: z.string().max(2000).optional(),
  issuedAt: z.iso.datetime(),
  nonce: z.string().min(8).max(128),
});
export type DecisionClaims = z.infer<typeof decisionClaimsSchema>;

export const signedDecisionSchema = z.strictObject({
  claims: decisionClaimsSchema,
  /** Base64 Ed25519 signature over the canonical JSON of the claims. */
  signature: z.string().min(1).max(1024),
});
export type SignedDecision = z.infer<typeof signedDecisionSchema>;

/** The worker's verdict on one decision. It is recorded in history, so replay sees the same one. */
export type DecisionVerdict =
  | { readonly accepted: true; readonly claims: DecisionClaims }
  | {
      readonly accepted: false;
      readonly reason: string;
      readonly claimedApprover: string;
      readonly decision: string;
      readonly nonce?: string;
    };

/**
 * The answer to a decision sent by Workflow Update (`toolgateDecision`): whether it counted, or why
 * not. `dropped` marks one the call did not read at all, its queue of decisions to check being full.
 */
export interface DecisionAnswer {
  readonly accepted: boolean;
  readonly reason?: string;
  readonly dropped?: boolean;
  /** The call closed (expired, cancelled, denied at an earlier gate) before the decision was read. */
  readonly closed?: boolean;
}
