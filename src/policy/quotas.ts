/**
 * Quotas for admission: how many calls may run at once and how many may start per time window, per
 * tool and per tenant. Pure bookkeeping with an injected clock; the worker wraps it in an
 * AdmissionGate (`activities/safety/admission-gates.ts`). A refusal is immediate: calls past the
 * quota are refused with a retry-after hint, never queued.
 */

/** Limits for one scope (one tool, or one tenant). Leave a field out for "no limit". */
export interface QuotaLimit {
  /** Calls admitted and not yet closed, at most. Approval calls count while they wait. */
  readonly maxConcurrent?: number;
  /** Calls admitted per window, at most (a token bucket refilled evenly over the window). */
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

export interface QuotaRequest {
  readonly callId: string;
  readonly tool: string;
  readonly tenant: string;
}

export type QuotaVerdict =
  | { readonly allowed: true; readonly holdsSlot: boolean }
  | { readonly allowed: false; readonly retryAfterSeconds: number; readonly message: string };

interface Bucket {
  tokens: number;
  updatedAtMs: number;
}

/**
 * The quota state of one worker process. Admission is all-or-nothing across scopes: a call refused
 * by its tenant's limit takes nothing from its tool's limit.
 */
export class QuotaLedger {
  readonly #policy: QuotaPolicy;
  readonly #now: () => number;
  readonly #buckets = new Map<string, Bucket>();
  readonly #running = new Map<string, Set<string>>();
  /** callId → the scopes it holds a concurrency slot in, so release and re-admission are exact. */
  readonly #held = new Map<string, string[]>();

  constructor(policy: QuotaPolicy, now: () => number = Date.now) {
    this.#policy = policy;
    this.#now = now;
  }

  admit(request: QuotaRequest): QuotaVerdict {
    // A retried admission (the first answer was lost) must not take a second slot.
    if (this.#held.has(request.callId)) return { allowed: true, holdsSlot: true };
    const scopes = this.#scopes(request);
    const nowMs = this.#now();
    for (const scope of scopes) {
      const running = this.#running.get(scope.key)?.size ?? 0;
      if (scope.limit.maxConcurrent !== undefined && running >= scope.limit.maxConcurrent) {
        const retryAfterSeconds = this.#policy.concurrencyRetryAfterSeconds ?? 1;
        return {
          allowed: false,
          retryAfterSeconds,
          message: `Too many ${scope.label} calls are running at once (limit ${scope.limit.maxConcurrent}). Wait ${retryAfterSeconds} s, then try again.`,
        };
      }
      if (scope.limit.maxPerWindow !== undefined) {
        const bucket = this.#refill(scope.key, scope.limit, nowMs);
        if (bucket.tokens < 1) {
          const windowMs = scope.limit.windowMs ?? 1000;
          const msPerToken = windowMs / scope.limit.maxPerWindow;
          const retryAfterSeconds = Math.max(1, Math.ceil(((1 - bucket.tokens) * msPerToken) / 1000));
          return {
            allowed: false,
            retryAfterSeconds,
            message: `Too many ${scope.label} calls (limit ${scope.limit.maxPerWindow} per ${windowMs} ms). Wait ${retryAfterSeconds} s, then try again.`,
          };
        }
      }
    }
    const heldScopes: string[] = [];
    for (const scope of scopes) {
      if (scope.limit.maxPerWindow !== undefined) this.#refill(scope.key, scope.limit, nowMs).tokens -= 1;
      if (scope.limit.maxConcurrent !== undefined) {
        const running = this.#running.get(scope.key) ?? new Set<string>();
        this.#running.set(scope.key, running);
        running.add(request.callId);
        heldScopes.push(scope.key);
      }
    }
    if (heldScopes.length > 0) this.#held.set(request.callId, heldScopes);
    return { allowed: true, holdsSlot: heldScopes.length > 0 };
  }

  /** Hands back a call's concurrency slots. Unknown call IDs are ignored (another worker admitted it). */
  release(callId: string): void {
    for (const key of this.#held.get(callId) ?? []) this.#running.get(key)?.delete(callId);
    this.#held.delete(callId);
  }

  /** Calls currently holding a slot in a scope, e.g. `tool:http_fetch` or `tenant:acme`. */
  running(scopeKey: string): number {
    return this.#running.get(scopeKey)?.size ?? 0;
  }

  #scopes(request: QuotaRequest): Array<{ key: string; label: string; limit: QuotaLimit }> {
    const pick = (table: Readonly<Record<string, QuotaLimit>> | undefined, name: string) =>
      table && Object.hasOwn(table, name) ? table[name] : undefined;
    const scopes: Array<{ key: string; label: string; limit: QuotaLimit }> = [];
    const toolLimit = pick(this.#policy.perTool, request.tool) ?? this.#policy.defaultPerTool;
    if (toolLimit) scopes.push({ key: `tool:${request.tool}`, label: request.tool, limit: toolLimit });
    const tenantLimit = pick(this.#policy.perTenant, request.tenant) ?? this.#policy.defaultPerTenant;
    if (tenantLimit) scopes.push({ key: `tenant:${request.tenant}`, label: 'tenant', limit: tenantLimit });
    return scopes;
  }

  #refill(key: string, limit: QuotaLimit, nowMs: number): Bucket {
    const capacity = limit.maxPerWindow ?? 0;
    const windowMs = limit.windowMs ?? 1000;
    let bucket = this.#buckets.get(key);
    if (!bucket) {
      bucket = { tokens: capacity, updatedAtMs: nowMs };
      this.#buckets.set(key, bucket);
    }
    const elapsed = Math.max(0, nowMs - bucket.updatedAtMs);
    bucket.tokens = Math.min(capacity, bucket.tokens + (elapsed * capacity) / windowMs);
    bucket.updatedAtMs = nowMs;
    return bucket;
  }
}
