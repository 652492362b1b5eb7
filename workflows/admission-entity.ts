/**
 * The admission entity of one scope (docs/design.md, "Admission"): one long-lived workflow per
 * tool or tenant with a limit, which every worker asks before a call takes a slot. Its state is the
 * only state that admits or refuses, so a limit holds with any number of workers and across
 * restarts. Workers reach it with update-with-start (`acquire`, answered at once), and hand slots
 * back with a signal (`release`) or report an attempt's outcome to the breaker (`outcome`).
 */
import {
  allHandlersFinished,
  condition,
  continueAsNew,
  defineQuery,
  defineSignal,
  defineUpdate,
  proxyLocalActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { ToolgateActivities } from '../src/contracts/activity-types.ts';
import {
  type AcquireAnswer,
  type AcquireRequest,
  type AttemptOutcome,
  acquire,
  type BreakerSettings,
  emptyScopeState,
  holderIds,
  reclaim,
  recordOutcome,
  release,
  type ScopeState,
} from '../src/policy/scope-state.ts';

export const acquireUpdate = defineUpdate<AcquireAnswer, [AcquireRequest]>('toolgateAdmissionAcquire');
export const releaseSignal =
  defineSignal<[{ readonly callId: string; readonly refund?: boolean }]>('toolgateAdmissionRelease');
export const outcomeSignal =
  defineSignal<
    [{ readonly callId: string; readonly outcome: AttemptOutcome; readonly breaker?: BreakerSettings }]
  >('toolgateAdmissionOutcome');
export const scopeStateQuery = defineQuery<ScopeState>('toolgateAdmissionState');

/**
 * Past this many events the entity continues as new, carrying its state: a replay after a cache
 * eviction then reads at most this much (about 400 admissions).
 */
const maximumHistoryLength = 2_000;

/** How often, at most, a refusal for concurrency first asks whether the holders are still open. */
const livenessCheckIntervalMs = 1_000;

export interface AdmissionEntityInput {
  /** The state a previous run carried over continue-as-new. */
  readonly state?: ScopeState;
  /** Past this many events the entity continues as new (default 2,000; lower in tests). */
  readonly maximumHistoryLength?: number;
}

/** Registered under `admissionEntity.workflowType`: this function's name. */
export async function toolgateAdmission(input: AdmissionEntityInput = {}): Promise<void> {
  const state = input.state ?? emptyScopeState();
  const liveness = proxyLocalActivities<Pick<ToolgateActivities, 'closedCalls'>>({
    startToCloseTimeout: '10 seconds',
    retry: { maximumAttempts: 2, initialInterval: '100 milliseconds' },
  });
  const maximumHistory = input.maximumHistoryLength ?? maximumHistoryLength;
  let checkedAtMs = 0;
  setHandler(
    acquireUpdate,
    async (request) => {
      const answer = acquire(state, request, Date.now());
      if (answer.granted || answer.cause !== 'concurrency') return answer;
      if (Date.now() - checkedAtMs < livenessCheckIntervalMs) return answer;
      // A holder terminated by an operator never hands its slot back, and its lease may be days
      // (an approval wait): before refusing, ask whether the holders are still open.
      checkedAtMs = Date.now();
      const { closed } = await liveness.closedCalls({ callIds: holderIds(state) });
      if (reclaim(state, closed) === 0) return answer;
      return acquire(state, request, Date.now());
    },
    { validator: checkAcquireRequest },
  );
  setHandler(releaseSignal, ({ callId, refund }) => release(state, callId, refund === true));
  setHandler(outcomeSignal, (report) => recordOutcome(state, report, Date.now()));
  setHandler(scopeStateQuery, () => state);
  await condition(
    () => workflowInfo().continueAsNewSuggested || workflowInfo().historyLength >= maximumHistory,
  );
  await condition(allHandlersFinished);
  await continueAsNew<typeof toolgateAdmission>({ ...input, state });
}

/** Refuses a malformed request before it is written to history. */
function checkAcquireRequest(request: AcquireRequest): void {
  if (typeof request?.callId !== 'string' || request.callId === '') throw new TypeError('callId is required');
  if (typeof request.leaseMs !== 'number' || !(request.leaseMs > 0)) {
    throw new TypeError('leaseMs must be a positive number');
  }
}

export { admissionWorkflowId } from '../src/contracts/admission-entity.ts';
