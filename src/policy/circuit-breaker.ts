/**
 * A circuit breaker for one downstream, as a pure state machine with an injected clock. After
 * `failureThreshold` consecutive failures it opens: every request is refused without touching the
 * downstream until `cooldownMs` has passed; then one probe is let through (half-open). A probe that
 * succeeds closes it; one that fails opens it again.
 */
export interface CircuitBreakerOptions {
  /** Consecutive failures that open the breaker. Default 5. */
  readonly failureThreshold?: number;
  /** How long the breaker stays open before one probe is allowed. Default 30 000 ms. */
  readonly cooldownMs?: number;
  readonly now?: () => number;
}

export const CircuitState = {
  closed: 'closed',
  open: 'open',
  halfOpen: 'half-open',
} as const;
export type CircuitState = (typeof CircuitState)[keyof typeof CircuitState];

export type CircuitPermit =
  | { readonly allowed: true }
  | { readonly allowed: false; readonly retryAfterSeconds: number };

export class CircuitBreaker {
  readonly failureThreshold: number;
  readonly cooldownMs: number;
  readonly #now: () => number;
  #state: CircuitState = CircuitState.closed;
  #consecutiveFailures = 0;
  #openedAtMs = 0;
  #probeInFlight = false;
  /** Counters for tests and metrics. */
  readonly stats = { allowed: 0, refused: 0, opened: 0, failures: 0, successes: 0 };

  constructor(options: CircuitBreakerOptions = {}) {
    this.failureThreshold = options.failureThreshold ?? 5;
    this.cooldownMs = options.cooldownMs ?? 30_000;
    this.#now = options.now ?? Date.now;
  }

  get state(): CircuitState {
    if (this.#state === CircuitState.open && this.#now() - this.#openedAtMs >= this.cooldownMs) {
      return CircuitState.halfOpen;
    }
    return this.#state;
  }

  /** Asks to send one request downstream. Refusals carry a retry-after hint. */
  request(): CircuitPermit {
    const state = this.state;
    if (state === CircuitState.closed) {
      this.stats.allowed++;
      return { allowed: true };
    }
    if (state === CircuitState.halfOpen && !this.#probeInFlight) {
      this.#probeInFlight = true;
      this.stats.allowed++;
      return { allowed: true };
    }
    this.stats.refused++;
    return { allowed: false, retryAfterSeconds: this.retryAfterSeconds() };
  }

  /** Whether a request would be allowed now, without taking the half-open probe. */
  peek(): CircuitPermit {
    const state = this.state;
    if (state === CircuitState.closed || (state === CircuitState.halfOpen && !this.#probeInFlight)) {
      return { allowed: true };
    }
    return { allowed: false, retryAfterSeconds: this.retryAfterSeconds() };
  }

  recordSuccess(): void {
    this.stats.successes++;
    this.#consecutiveFailures = 0;
    this.#probeInFlight = false;
    this.#state = CircuitState.closed;
  }

  /** A permitted request that never reached the downstream: frees the probe, counts nothing. */
  recordNeutral(): void {
    this.#probeInFlight = false;
  }

  recordFailure(): void {
    this.stats.failures++;
    this.#consecutiveFailures++;
    const wasProbe = this.#probeInFlight;
    this.#probeInFlight = false;
    if (wasProbe || this.#consecutiveFailures >= this.failureThreshold) {
      if (this.#state !== CircuitState.open || wasProbe) this.stats.opened++;
      this.#state = CircuitState.open;
      this.#openedAtMs = this.#now();
    }
  }

  retryAfterSeconds(): number {
    const remainingMs = this.cooldownMs - (this.#now() - this.#openedAtMs);
    return Math.max(1, Math.ceil(remainingMs / 1000));
  }
}
