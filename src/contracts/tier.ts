/**
 * The side-effect tier of a tool. It is fixed by the tool's contract: a caller or a model can never
 * set or raise it. The tier drives retries, whether an idempotency key is required, compensation
 * and approval.
 */
export const SideEffectTier = {
  /** Changes nothing outside. Retried with backoff; may take the local-activity fast path. */
  readonly: 'readonly',
  /** Can be undone by a compensating action. Retried; the downstream sees one stable key. */
  reversible: 'reversible',
  /** Cannot be undone. Needs a key, runs at most once; an ambiguous outcome is reported as such. */
  irreversible: 'irreversible',
  /** Irreversible and high impact: runs only after an authorised human approves. */
  approval: 'approval',
} as const;
export type SideEffectTier = (typeof SideEffectTier)[keyof typeof SideEffectTier];

export const sideEffectTiers: readonly SideEffectTier[] = Object.values(SideEffectTier);

/** Tiers whose calls must carry an idempotency key, because a duplicate would act twice. */
export function tierRequiresKey(tier: SideEffectTier): boolean {
  return tier === SideEffectTier.irreversible || tier === SideEffectTier.approval;
}

/** Tiers whose failures may be retried, by Temporal or by a caller re-sending the same key. */
export function tierIsRetrySafe(tier: SideEffectTier): boolean {
  return tier === SideEffectTier.readonly || tier === SideEffectTier.reversible;
}

/** The number of attempts each tier allows by default. */
export function defaultMaximumAttempts(tier: SideEffectTier): number {
  return tierIsRetrySafe(tier) ? 3 : 1;
}
