/**
 * Quotas for admission: how many calls may run at once and how many may start per time window, per
 * tool and per tenant. Kept by the admission entity of each scope (`scope-state.ts`), through the
 * load gate of `activities/safety/admission-gates.ts`. A refusal is immediate: calls past the quota
 * are refused with a retry-after hint, never queued.
 */

/** Limits for one scope (one tool, or one tenant). Leave a field out for "no limit". */
export interface QuotaLimit {
  /** Calls admitted and not yet closed, at most. Approval calls count while they wait. */
  readonly maxConcurrent?: number;
  /** Calls admitted in any window of `windowMs`, at most (a sliding window, so no edge doubles it). */
  readonly maxPerWindow?: number;
  /** The window for `maxPerWindow`, in milliseconds. Default 1000. */
  readonly windowMs?: number;
}

export interface QuotaPolicy {
  /** Limits for a named tool. */
  readonly perTool?: Readonly<Record<string, QuotaLimit>>;
  /** Limits for a named tenant. */
  readonly perTenant?: Readonly<Record<string, QuotaLimit>>;
  /** Limits for every tool without its own entry. */
  readonly defaultPerTool?: QuotaLimit;
  /** Limits for every tenant without its own entry. */
  readonly defaultPerTenant?: QuotaLimit;
  /** The retry-after hint when a concurrency limit refuses; a slot frees at an unknown time. Default 1. */
  readonly concurrencyRetryAfterSeconds?: number;
}
