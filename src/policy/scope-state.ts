/**
 * The admission state of one scope (a tool, or a tenant), as plain data kept by that scope's
 * admission entity workflow (workflows/admission-entity.ts, docs/design.md "Admission"). Every
 * worker asks the same entity, so a limit holds across workers and restarts. Pure functions over
 * the state and a clock the caller passes (the workflow's), so they replay.
 */
import type { QuotaLimit } from './quotas.ts';

/** When a circuit breaker opens, and for how long. */
export interface BreakerSettings {
  /** Consecutive failures that open the breaker. Default 5. */
  readonly failureThreshold?: number;
  /** How long it stays open before one probe is let through. Default 30 000 ms. */
  readonly cooldownMs?: number;
}

export interface BreakerState {
  open: boolean;
  /** Consecutive failures since the last success. */
  failures: number;
  openedAtMs: number;
  /** The call holding the one probe of a half-open breaker. */
  probe?: string | undefined;
  /** Times it opened: for operators and tests. */
  opened: number;
}

export interface ScopeState {
  /** Calls holding a concurrency slot: call ID → when the entity may reclaim it (ms since epoch). */
  holders: Record<string, number>;
  /** Admissions within the rate window, oldest first: [when (ms since epoch), call ID]. */
  admitted: Array<[number, string]>;
  breaker: BreakerState;
}

export interface AcquireRequest {
  readonly callId: string;
  /** How the scope is named to the model: a tool's name, or "tenant". */
  readonly label: string;
  readonly limit?: QuotaLimit;
  /** The breaker of the tool's downstream, for a tool scope that has one. */
  readonly breaker?: BreakerSettings;
  /**
   * A permit for one attempt at the downstream: takes the probe of a half-open breaker. Without it
   * the breaker is only consulted (an admission long before the attempt, say after an approval).
   */
  readonly attempt?: boolean;
  /**
   * How long the call may hold its slot. Past it, the entity reclaims the slot: the holder ended
   * without handing it back (terminated, or lost with its worker beyond its deadlines).
   */
  readonly leaseMs: number;
  /** The retry-after hint when a concurrency limit refuses. Default 1 s. */
  readonly concurrencyRetryAfterSeconds?: number;
}

export type AcquireAnswer =
  | { readonly granted: true; readonly holdsSlot: boolean; readonly probe?: boolean }
  | {
      readonly granted: false;
      readonly cause: 'concurrency' | 'rate' | 'breaker';
      readonly retryAfterSeconds: number;
      readonly message: string;
    };

export type AttemptOutcome = 'success' | 'failure' | 'neutral';

export function emptyScopeState(): ScopeState {
  return { holders: {}, admitted: [], breaker: { open: false, failures: 0, openedAtMs: 0, opened: 0 } };
}

/**
 * Admits a call, or says why not and when to retry. All or nothing: a refused call takes nothing.
 * A call that holds a slot already (its first answer was lost, and the activity retried) is granted
 * again without a second slot.
 */
export function acquire(state: ScopeState, request: AcquireRequest, nowMs: number): AcquireAnswer {
  reclaimExpired(state, nowMs);
  const holds = Object.hasOwn(state.holders, request.callId);
  const breaker = breakerPermit(state.breaker, request, nowMs);
  if (breaker) return breaker;
  if (!holds) {
    const refusal = concurrencyRefusal(state, request) ?? rateRefusal(state, request, nowMs);
    if (refusal) return refusal;
  }
  const probe = takeProbe(state.breaker, request, nowMs);
  if (holds) return { granted: true, holdsSlot: true, ...(probe ? { probe } : {}) };
  const limit = request.limit;
  if (limit?.maxPerWindow !== undefined) state.admitted.push([nowMs, request.callId]);
  const holdsSlot = limit?.maxConcurrent !== undefined;
  if (holdsSlot) state.holders[request.callId] = nowMs + request.leaseMs;
  return { granted: true, holdsSlot, ...(probe ? { probe } : {}) };
}

/**
 * Hands back a call's slot, and its probe if it never reported. Unknown calls are ignored. With
 * `refund`, its rate admission goes back too: the admission was rolled back because another scope
 * refused the call, so the call never ran.
 */
export function release(state: ScopeState, callId: string, refund = false): void {
  delete state.holders[callId];
  if (state.breaker.probe === callId) state.breaker.probe = undefined;
  if (refund) state.admitted = state.admitted.filter(([, admittedId]) => admittedId !== callId);
}

/** Drops the slots of calls that are known to have closed without handing them back. */
export function reclaim(state: ScopeState, closedCallIds: readonly string[]): number {
  let reclaimed = 0;
  for (const callId of closedCallIds) {
    if (!Object.hasOwn(state.holders, callId)) continue;
    release(state, callId);
    reclaimed++;
  }
  return reclaimed;
}

/** Slots whose lease has run out go back. */
export function reclaimExpired(state: ScopeState, nowMs: number): void {
  for (const [callId, untilMs] of Object.entries(state.holders)) {
    if (untilMs <= nowMs) release(state, callId);
  }
}

/**
 * What an attempt at the downstream did: a success closes the breaker, a failure counts towards
 * opening it (a failed probe opens it again at once), a neutral outcome (the call never reached the
 * downstream, or failed for its own arguments) only frees the probe.
 */
export function recordOutcome(
  state: ScopeState,
  report: { readonly callId: string; readonly outcome: AttemptOutcome; readonly breaker?: BreakerSettings },
  nowMs: number,
): void {
  const breaker = state.breaker;
  const wasProbe = breaker.probe === report.callId;
  if (wasProbe) breaker.probe = undefined;
  if (report.outcome === 'success') {
    breaker.failures = 0;
    breaker.open = false;
    return;
  }
  if (report.outcome === 'neutral') return;
  breaker.failures++;
  if (wasProbe || breaker.failures >= threshold(report.breaker)) {
    // A failure while open (an attempt that was in flight when it opened) restarts the cooldown,
    // since the downstream is still failing, but it is not a new opening.
    if (!breaker.open || wasProbe) breaker.opened++;
    breaker.open = true;
    breaker.openedAtMs = nowMs;
  }
}

/** The calls holding a slot: whose liveness the entity may check before it refuses. */
export function holderIds(state: ScopeState): string[] {
  return Object.keys(state.holders);
}

function threshold(settings: BreakerSettings | undefined): number {
  return settings?.failureThreshold ?? 5;
}

function cooldownOf(settings: BreakerSettings | undefined): number {
  return settings?.cooldownMs ?? 30_000;
}

/** The refusal of an open breaker (or of a half-open one whose probe is out), or undefined. */
function breakerPermit(
  breaker: BreakerState,
  request: AcquireRequest,
  nowMs: number,
): AcquireAnswer | undefined {
  if (!request.breaker || !breaker.open) return undefined;
  const remainingMs = breaker.openedAtMs + cooldownOf(request.breaker) - nowMs;
  const halfOpen = remainingMs <= 0;
  // Half-open: one probe at a time; an admission that is not an attempt may pass to wait for it.
  if (halfOpen && (!request.attempt || breaker.probe === undefined || breaker.probe === request.callId)) {
    return undefined;
  }
  const retryAfterSeconds = Math.max(1, Math.ceil(Math.max(remainingMs, 1000) / 1000));
  return {
    granted: false,
    cause: 'breaker',
    retryAfterSeconds,
    message: `The service behind ${request.label} is failing, so calls are paused. Wait ${retryAfterSeconds} s, then try again.`,
  };
}

/** Takes the probe of a half-open breaker for an attempt. */
function takeProbe(breaker: BreakerState, request: AcquireRequest, nowMs: number): boolean {
  if (!request.breaker || !request.attempt || !breaker.open) return false;
  if (breaker.openedAtMs + cooldownOf(request.breaker) > nowMs) return false;
  breaker.probe = request.callId;
  return true;
}

function concurrencyRefusal(state: ScopeState, request: AcquireRequest): AcquireAnswer | undefined {
  const max = request.limit?.maxConcurrent;
  if (max === undefined || Object.keys(state.holders).length < max) return undefined;
  const retryAfterSeconds = request.concurrencyRetryAfterSeconds ?? 1;
  return {
    granted: false,
    cause: 'concurrency',
    retryAfterSeconds,
    message: `Too many ${request.label} calls are running at once (limit ${max}). Wait ${retryAfterSeconds} s, then try again.`,
  };
}

/**
 * A sliding window over the admission times: at most `maxPerWindow` admissions in any window, so
 * no burst can double the rate at a window's edge as a token bucket would.
 */
function rateRefusal(state: ScopeState, request: AcquireRequest, nowMs: number): AcquireAnswer | undefined {
  const max = request.limit?.maxPerWindow;
  if (max === undefined) return undefined;
  const windowMs = request.limit?.windowMs ?? 1000;
  // A window includes both its ends: an admission exactly windowMs ago still counts.
  const recent = state.admitted.filter(([atMs]) => atMs >= nowMs - windowMs);
  state.admitted = recent;
  if (recent.length < max) return undefined;
  const freesAtMs = recent[recent.length - max]![0] + windowMs + 1;
  const retryAfterSeconds = Math.max(1, Math.ceil((freesAtMs - nowMs) / 1000));
  return {
    granted: false,
    cause: 'rate',
    retryAfterSeconds,
    message: `Too many ${request.label} calls (limit ${max} per ${windowMs} ms). Wait ${retryAfterSeconds} s, then try again.`,
  };
}
