import type { AdmitDecision, AdmitRequest, ReleaseRequest } from '../../src/contracts/activity-types.ts';
import type { CircuitBreaker } from '../../src/policy/circuit-breaker.ts';
import { QuotaLedger, type QuotaPolicy } from '../../src/policy/quotas.ts';
import type { AdmissionGate } from '../create-activities.ts';

/** An admission gate over a {@link QuotaLedger}, plus the ledger for inspection. */
export interface QuotaGate extends AdmissionGate {
  readonly ledger: QuotaLedger;
}

/**
 * Per-tool and per-tenant concurrency and rate limits as an admission gate. Calls past a limit are
 * refused at once with RATE_LIMITED and a retry-after hint; nothing is queued. The state lives in
 * this worker process: with several workers, each enforces its own share.
 */
export function createQuotaGate(policy: QuotaPolicy, options: { now?: () => number } = {}): QuotaGate {
  const ledger = new QuotaLedger(policy, options.now);
  return {
    ledger,
    admit(request: AdmitRequest): AdmitDecision | undefined {
      const verdict = ledger.admit({
        callId: request.callId,
        tool: request.tool,
        tenant: request.context.tenant,
      });
      if (!verdict.allowed) {
        return {
          allowed: false,
          reason: 'RATE_LIMITED',
          message: verdict.message,
          retryAfterSeconds: verdict.retryAfterSeconds,
        };
      }
      return verdict.holdsSlot ? { allowed: true, holdsSlot: true } : undefined;
    },
    release(request: ReleaseRequest): void {
      ledger.release(request.callId);
    },
  };
}

/**
 * Refuses calls to a tool while the circuit breaker of its downstream is open, so a failing service
 * gets no new calls at all, not even a first attempt. The tool itself records successes and
 * failures into the same breaker (see the http_fetch example tool).
 */
export function createBreakerGate(breakers: Readonly<Record<string, CircuitBreaker>>): AdmissionGate {
  return {
    admit(request: AdmitRequest): AdmitDecision | undefined {
      const breaker = Object.hasOwn(breakers, request.tool) ? breakers[request.tool] : undefined;
      if (!breaker) return undefined;
      const permit = breaker.peek();
      if (permit.allowed) return undefined;
      return {
        allowed: false,
        reason: 'RATE_LIMITED',
        message: `The service behind ${request.tool} is failing, so calls are paused. Wait ${permit.retryAfterSeconds} s, then try again.`,
        retryAfterSeconds: permit.retryAfterSeconds,
      };
    },
    release(): void {},
  };
}
