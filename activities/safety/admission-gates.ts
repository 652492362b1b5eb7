/**
 * Load gates whose state lives in the cluster (docs/design.md, "Admission"): concurrency and rate
 * quotas per tool and per tenant, and a circuit breaker per tool, each kept by the admission entity
 * workflow of its scope (workflows/admission-entity.ts). Every worker asks the same entity, so a
 * limit holds across workers and restarts, and a slot goes back whoever ends the call. A tool or
 * tenant without a limit costs nothing: no entity is asked.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import {
  WithStartWorkflowOperation,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
} from '@temporalio/client';
import { ApplicationFailure, CancelledFailure, type Workflow } from '@temporalio/common';
import type { AdmitDecision } from '../../src/contracts/activity-types.ts';
import { ToolFailureType } from '../../src/contracts/activity-types.ts';
import { admissionEntity, admissionWorkflowId } from '../../src/contracts/admission-entity.ts';
import type { QuotaLimit, QuotaPolicy } from '../../src/policy/quotas.ts';
import type {
  AcquireAnswer,
  AcquireRequest,
  AttemptOutcome,
  BreakerSettings,
} from '../../src/policy/scope-state.ts';
import type { AdmissionGate, GateContext, GateRequest } from '../admission.ts';

export interface LoadGateOptions {
  /** Concurrency and rate limits per tool and per tenant. */
  readonly quotas?: QuotaPolicy;
  /** A circuit breaker per tool, by tool name: checked at admission and before every attempt. */
  readonly breakers?: Readonly<Record<string, BreakerSettings>>;
}

/** One scope a call is admitted in, with what it asks of that scope. */
interface Scope {
  readonly scope: string;
  readonly label: string;
  readonly limit?: QuotaLimit;
  readonly breaker?: BreakerSettings;
}

/**
 * Quotas and breakers as one admission gate. Calls past a limit, or to a tool whose breaker is
 * open, are refused at once with RATE_LIMITED and a retry-after hint; nothing is queued. The scopes
 * of one call are asked in parallel, so a tool limit and a tenant limit cost one round trip.
 */
export function createLoadGate(options: LoadGateOptions): AdmissionGate {
  const scopesOf = (request: GateRequest) => scopesFor(options, request.tool, request.context.tenant);
  return {
    async admit(request, context) {
      const scopes = scopesOf(request);
      if (scopes.length === 0) return undefined;
      return admitInScopes(context, scopes, request, options.quotas);
    },
    async release(request, context) {
      const holding = scopesOf({ ...request, tier: 'readonly', leaseMs: 0 }).filter(
        (scope) => scope.limit?.maxConcurrent !== undefined,
      );
      await Promise.all(holding.map((scope) => signalRelease(context, scope.scope, request.callId)));
    },
    async guardAttempt(request, attempt, context) {
      const breaker = breakerOf(options, request.tool);
      if (!breaker) return attempt();
      const scope = `tool:${request.tool}`;
      const answer = await acquireIn(context, scope, {
        callId: request.callId,
        label: request.tool,
        breaker,
        attempt: true,
        leaseMs: request.leaseMs,
      });
      if (!answer.granted) throw attemptRefused(answer, request.attempt);
      // The outcome is sent without waiting for the answer: it leaves before the attempt's result
      // does, so the next permit is asked after it, and the attempt pays no second round trip.
      try {
        const result = await attempt();
        void reportOutcome(context, scope, request.callId, 'success', breaker);
        return result;
      } catch (error) {
        void reportOutcome(context, scope, request.callId, outcomeOf(error), breaker);
        throw error;
      }
    },
  };
}

/** Concurrency and rate limits per tool and per tenant, kept in the cluster. */
export function createQuotaGate(policy: QuotaPolicy): AdmissionGate {
  return createLoadGate({ quotas: policy });
}

/**
 * A circuit breaker per tool, kept in the cluster: after enough consecutive failed attempts it
 * opens for every worker at once, refuses calls and attempts until its cooldown has passed, then
 * lets one probe through. An attempt counts as failed when it timed out or failed in a way worth
 * retrying; a denial or a failure that says retrying cannot help counts for nothing.
 */
export function createBreakerGate(breakers: Readonly<Record<string, BreakerSettings>>): AdmissionGate {
  return createLoadGate({ breakers });
}

function scopesFor(options: LoadGateOptions, tool: string, tenant: string): Scope[] {
  const quotas = options.quotas ?? {};
  const pick = (table: Readonly<Record<string, QuotaLimit>> | undefined, name: string) =>
    table && Object.hasOwn(table, name) ? table[name] : undefined;
  const toolLimit = pick(quotas.perTool, tool) ?? quotas.defaultPerTool;
  const breaker = breakerOf(options, tool);
  const tenantLimit = pick(quotas.perTenant, tenant) ?? quotas.defaultPerTenant;
  const scopes: Scope[] = [];
  if (toolLimit || breaker) {
    scopes.push({
      scope: `tool:${tool}`,
      label: tool,
      ...(toolLimit ? { limit: toolLimit } : {}),
      ...(breaker ? { breaker } : {}),
    });
  }
  if (tenantLimit) scopes.push({ scope: `tenant:${tenant}`, label: 'tenant', limit: tenantLimit });
  return scopes;
}

function breakerOf(options: LoadGateOptions, tool: string): BreakerSettings | undefined {
  return options.breakers && Object.hasOwn(options.breakers, tool) ? options.breakers[tool] : undefined;
}

/**
 * Asks every scope at once. All or nothing: when one refuses, what the others granted is handed
 * back, their rate admissions included, so a refused call takes nothing anywhere.
 */
async function admitInScopes(
  context: GateContext,
  scopes: readonly Scope[],
  request: GateRequest,
  quotas: QuotaPolicy | undefined,
): Promise<AdmitDecision | undefined> {
  const answers = await Promise.all(
    scopes.map((scope) =>
      acquireIn(context, scope.scope, {
        callId: request.callId,
        label: scope.label,
        ...(scope.limit ? { limit: scope.limit } : {}),
        ...(scope.breaker ? { breaker: scope.breaker } : {}),
        leaseMs: request.leaseMs,
        ...(quotas?.concurrencyRetryAfterSeconds !== undefined
          ? { concurrencyRetryAfterSeconds: quotas.concurrencyRetryAfterSeconds }
          : {}),
      }),
    ),
  );
  const refusal = answers.find((answer) => !answer.granted);
  if (!refusal || refusal.granted) {
    return answers.some((answer) => answer.granted && answer.holdsSlot)
      ? { allowed: true, holdsSlot: true }
      : undefined;
  }
  await Promise.all(
    scopes.map((scope, index) =>
      answers[index]!.granted ? signalRelease(context, scope.scope, request.callId, true) : undefined,
    ),
  );
  return {
    allowed: false,
    reason: 'RATE_LIMITED',
    message: refusal.message,
    retryAfterSeconds: refusal.retryAfterSeconds,
  };
}

/** How many times an acquire is sent before its failure is the attempt's. */
const acquireTries = 5;
/** Tries while the server says too many updates are in flight: about 10 s of spread-out waits. */
const busyAcquireTries = 30;

/**
 * One update-with-start: the scope's entity is started if it is not running yet. An update that
 * arrives while the entity continues as new is aborted by the server; it is sent again, and the
 * new run answers it (an acquire is idempotent per call).
 */
export async function acquireIn(
  context: GateContext,
  scope: string,
  request: AcquireRequest,
): Promise<AcquireAnswer> {
  for (let tries = 1; ; tries++) {
    try {
      return await context.client.workflow.executeUpdateWithStart<Workflow, AcquireAnswer, [AcquireRequest]>(
        admissionEntity.acquireUpdate,
        {
          args: [request],
          startWorkflowOperation: new WithStartWorkflowOperation(admissionEntity.workflowType, {
            workflowId: admissionWorkflowId(context.taskQueue, scope),
            taskQueue: context.taskQueue,
            workflowIdConflictPolicy: 'USE_EXISTING',
            args: [],
          }),
        },
      );
    } catch (error) {
      // The entity refused the request itself (its validator): sending it again cannot help.
      if (error instanceof WorkflowUpdateFailedError) throw error;
      // The server's limit of updates in flight on one workflow is backpressure, not a failure:
      // wait a little, spread out, and ask again, for longer than after any other error.
      const busy = isUpdateBackpressure(error);
      if (tries >= (busy ? busyAcquireTries : acquireTries)) throw error;
      await sleep(busy ? 20 + Math.random() * 80 * Math.min(tries, 10) : 25 * 2 ** tries);
    }
  }
}

/**
 * The server's refusal of an update because too many are in flight on the workflow. The client
 * raises it as a plain Error, without a gRPC status: its message is all there is to go by.
 */
function isUpdateBackpressure(error: unknown): boolean {
  return error instanceof Error && /in-flight updates/i.test(error.message);
}

/** Hands a slot back. An entity that does not exist holds nothing. */
export async function signalRelease(context: GateContext, scope: string, callId: string, refund = false) {
  try {
    await context.client.workflow
      .getHandle(admissionWorkflowId(context.taskQueue, scope))
      .signal(admissionEntity.releaseSignal, { callId, ...(refund ? { refund } : {}) });
  } catch (error) {
    if (!(error instanceof WorkflowNotFoundError)) throw error;
  }
}

/**
 * Reports an attempt's outcome to the breaker. A report that cannot be sent must not change what
 * the attempt did: it is logged, and the breaker learns from the next attempt.
 */
async function reportOutcome(
  context: GateContext,
  scope: string,
  callId: string,
  outcome: AttemptOutcome,
  breaker: BreakerSettings,
): Promise<void> {
  try {
    await context.client.workflow
      .getHandle(admissionWorkflowId(context.taskQueue, scope))
      .signal(admissionEntity.outcomeSignal, { callId, outcome, breaker });
  } catch (error) {
    context.logger.warn('could not report the attempt to the circuit breaker', {
      callId,
      error: String(error),
    });
  }
}

/**
 * What an attempt's failure says about the downstream: a timeout or a failure worth retrying is
 * the downstream failing; a denial, a failure the tool said retrying cannot help, or a
 * cancellation says nothing about it.
 */
export function outcomeOf(error: unknown): AttemptOutcome {
  if (error instanceof CancelledFailure) return 'neutral';
  if (!(error instanceof ApplicationFailure)) return 'failure';
  if (error.type === ToolFailureType.timeout) return 'failure';
  if (error.type === ToolFailureType.failed) return error.nonRetryable ? 'neutral' : 'failure';
  return 'neutral';
}

/** The failure of an attempt the breaker refused: nothing reached the downstream. */
function attemptRefused(answer: Extract<AcquireAnswer, { granted: false }>, attempt: number): Error {
  return ApplicationFailure.create({
    type: ToolFailureType.denied,
    message: answer.message,
    details: [
      {
        message: answer.message,
        effect: 'none',
        reason: 'RATE_LIMITED',
        attempt,
        admission: true,
        retryAfterSeconds: answer.retryAfterSeconds,
      },
    ],
    nonRetryable: true,
  });
}
