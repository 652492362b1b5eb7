import type { AdmissionGate } from '../../activities/admission.ts';
import type { QuotaPolicy } from '../../src/policy/quotas.ts';
import { acquire, emptyScopeState, release, type ScopeState } from '../../src/policy/scope-state.ts';

/**
 * A quota gate whose scope states live in this test's memory instead of in admission entities: for
 * unit tests of the activity side (admission, release, retries) without a cluster. The same pure
 * functions the entities run decide; only where the state lives differs.
 */
export function createMemoryQuotaGate(policy: QuotaPolicy): AdmissionGate & {
  running(scope: string): number;
  take(scope: string, callId: string): void;
} {
  const scopes = new Map<string, ScopeState>();
  const stateOf = (scope: string) => {
    const state = scopes.get(scope) ?? emptyScopeState();
    scopes.set(scope, state);
    return state;
  };
  const limitsOf = (tool: string) =>
    policy.perTool && Object.hasOwn(policy.perTool, tool) ? policy.perTool[tool] : policy.defaultPerTool;
  return {
    admit(request) {
      const limit = limitsOf(request.tool);
      if (!limit) return undefined;
      const answer = acquire(
        stateOf(`tool:${request.tool}`),
        { callId: request.callId, label: request.tool, limit, leaseMs: request.leaseMs },
        Date.now(),
      );
      if (!answer.granted) {
        return {
          allowed: false,
          reason: 'RATE_LIMITED',
          message: answer.message,
          retryAfterSeconds: answer.retryAfterSeconds,
        };
      }
      return answer.holdsSlot ? { allowed: true, holdsSlot: true } : undefined;
    },
    release(request) {
      release(stateOf(`tool:${request.tool}`), request.callId);
    },
    running: (scope) => Object.keys(stateOf(scope).holders).length,
    take(scope, callId) {
      stateOf(scope).holders[callId] = Date.now() + 60_000;
    },
  };
}
