/**
 * The activities a toolgate worker registers: admission (`admission.ts`), the argument check,
 * decision verification (`decision-verifier.ts`) and the executor (`executor.ts`), wired to one
 * worker's tools and policy.
 */
import type { KeyObject } from 'node:crypto';
import { Context } from '@temporalio/activity';
import { WorkflowNotFoundError } from '@temporalio/client';
import {
  type AdmitDecision,
  type ReleaseRequest,
  type RunToolRequest,
  type RunToolResult,
  ToolFailureType,
  type ToolgateActivities,
} from '../src/contracts/activity-types.ts';
import {
  type ArgumentCheck,
  approvalRequiredOf,
  checkArguments,
  previewOf,
} from '../src/contracts/check-arguments.ts';
import type { ToolCatalog, ToolContract } from '../src/contracts/define-tool.ts';
import {
  heartbeatIntervalMs as defaultHeartbeatIntervalMs,
  defaultPayloadLimits,
  type PayloadLimits,
} from '../src/contracts/limits.ts';
import {
  type Admission,
  type AdmissionGate,
  createAdmission,
  type GateContext,
  gateRequestOf,
  type ToolPolicy,
} from './admission.ts';
import { verifySignedDecision } from './decision-verifier.ts';
import { callLogFields, type ExecutorSettings, execute, type OperatorLogger } from './executor.ts';
import { failure, notAllowedMessage } from './failures.ts';
import type { CompensationImplementation, ToolImplementation } from './tool-implementation.ts';

export type { AdmissionGate, GateContext, GateRequest, ToolPolicy } from './admission.ts';
export { verifySignedDecision } from './decision-verifier.ts';
export type { OperatorLogger } from './executor.ts';

export interface CreateActivitiesOptions {
  readonly tools: readonly ToolImplementation[];
  /**
   * The contracts the arguments are checked against (gate protocol 3), when the workflows' catalog
   * has tools this worker has no implementation for. The implementations' own contracts are always
   * known. Give the same catalog the workflows module uses.
   */
  readonly catalog?: ToolCatalog;
  readonly compensations?: readonly CompensationImplementation[];
  readonly policy: ToolPolicy;
  /** Public keys of the approval signers; a decision must be signed by one of them. */
  readonly approvalPublicKeys: readonly KeyObject[];
  readonly limits?: PayloadLimits;
  /** How often the executor heartbeats while a tool runs. Cancellation arrives with heartbeats. */
  readonly heartbeatIntervalMs?: number;
  readonly decisionMaxAgeMs?: number;
  readonly admissionGates?: readonly AdmissionGate[];
  /** Full diagnostics for operators, keyed by call ID. Defaults to the activity logger. */
  readonly logger?: OperatorLogger;
}

/** A worker's activities, assembled once per worker. */
interface Worker {
  readonly admission: Admission;
  readonly contracts: ReadonlyMap<string, ToolContract>;
  readonly executor: ExecutorSettings;
  readonly logger: () => OperatorLogger;
  /** Where the load gates keep their state: the current activity's client and task queue. */
  readonly gateContext: () => GateContext;
}

/**
 * Builds the activities a toolgate worker registers: admission, decision verification and the
 * executor that runs a tool with its deadline, heartbeats and AbortSignal.
 */
export function createActivities(options: CreateActivitiesOptions): ToolgateActivities {
  const decisionMaxAgeMs = options.decisionMaxAgeMs ?? 15 * 60 * 1000;
  const logger = (): OperatorLogger => options.logger ?? Context.current().log;
  const worker: Worker = {
    admission: createAdmission(options.policy, options.admissionGates ?? []),
    contracts: contractsOf(options),
    logger,
    gateContext: () => {
      const context = Context.current();
      // Read only by a gate that keeps state in the cluster: the activity's client is there only
      // on a worker with a connection.
      return {
        get client() {
          return context.client;
        },
        taskQueue: context.info.taskQueue,
        logger: logger(),
      };
    },
    executor: {
      implementations: new Map(options.tools.map((tool) => [tool.contract.name, tool])),
      compensations: new Map(
        (options.compensations ?? []).map((compensation) => [compensation.name, compensation]),
      ),
      limits: options.limits ?? defaultPayloadLimits,
      heartbeatIntervalMs: options.heartbeatIntervalMs ?? defaultHeartbeatIntervalMs,
      logger,
    },
  };
  return {
    admitCall: (request) => admitCall(worker, request),
    async releaseCall(request) {
      releaseSoon(worker, request, worker.gateContext());
    },
    async verifyDecision(request) {
      return verifySignedDecision(request, options.approvalPublicKeys, decisionMaxAgeMs);
    },
    runTool: (request) =>
      admitAndRun(worker, request, (admitted) => execute(worker.executor, admitted, Context.current())),
    checkAndRunTool: (request) => admitAndRun(worker, request, (admitted) => checkAndRun(worker, admitted)),
    closedCalls: (request) => closedCalls(request.callIds),
  };
}

/**
 * Which of these calls have closed. A call whose workflow cannot be found has closed too (its
 * history was deleted), so it holds nothing.
 */
async function closedCalls(callIds: readonly string[]): Promise<{ closed: string[] }> {
  const client = Context.current().client;
  const states = await Promise.all(
    callIds.map((callId) =>
      client.workflow
        .getHandle(callId)
        .describe()
        .then(
          (description) => description.status.name !== 'RUNNING',
          (error: unknown) => {
            if (error instanceof WorkflowNotFoundError) return true;
            throw error;
          },
        ),
    ),
  );
  return { closed: callIds.filter((_, index) => states[index]) };
}

/**
 * The longest a call may hold a concurrency slot: its approval wait (approval tier), then every
 * attempt of its tool with the backoff between them, and a minute's grace. A tool this worker does
 * not know gets an hour.
 */
function leaseFor(worker: Worker, request: { readonly tool: string; readonly tier: string }): number {
  const contract = worker.contracts.get(request.tool);
  if (!contract) return 60 * 60 * 1000;
  const approvalMs =
    request.tier === 'approval'
      ? (worker.admission.approvalOverride(request.tool)?.expiresAfterMs ??
        contract.approval?.expiresAfterMs ??
        0)
      : 0;
  // Zero attempts is Temporal's "no limit"; a lease still needs an end.
  const attempts = Math.min(contract.retry.maximumAttempts || 100, 100);
  const perAttemptMs = contract.timeoutMs + contract.retry.maximumIntervalMs;
  return approvalMs + attempts * perAttemptMs + 60_000;
}

/**
 * The contracts the arguments are checked against: the catalog's and the implementations' own,
 * which must be the same objects where both name a tool.
 */
function contractsOf(options: CreateActivitiesOptions): Map<string, ToolContract> {
  const contracts = new Map<string, ToolContract>(Object.entries(options.catalog ?? {}));
  for (const tool of options.tools) {
    const listed = contracts.get(tool.contract.name);
    if (listed && listed !== tool.contract) {
      throw new TypeError(
        `Tool ${tool.contract.name}: the catalog and the implementation name different contracts. Build both from the same defineTool(...) value.`,
      );
    }
    contracts.set(tool.contract.name, tool.contract);
  }
  return contracts;
}

/** The admission local activity: the allowlist and load gates, and from protocol 3 the arguments. */
async function admitCall(
  worker: Worker,
  request: Parameters<ToolgateActivities['admitCall']>[0],
): Promise<AdmitDecision> {
  const gateRequest = gateRequestOf(request, leaseFor(worker, request));
  const context = worker.gateContext();
  const decision = await worker.admission.admit(gateRequest, context, { loadGates: !request.allowlistOnly });
  if (!decision.allowed) countRefusal(worker, request.tool, decision);
  if (!request.check || !decision.allowed) return decision;
  const checked = check(worker, request.tool, request.input, request.callId);
  if (!checked) {
    worker.logger().warn('no contract for the tool on this worker: the workflow validates the arguments', {
      callId: request.callId,
      tool: request.tool,
    });
    return decision;
  }
  if (!checked.verdict.ok) {
    // Invalid arguments hold nothing: a slot the gates took is handed back now.
    if (decision.holdsSlot) await releaseQuietly(worker, gateRequest, context);
    return { allowed: false, reason: 'INVALID_INPUT', message: checked.verdict.message };
  }
  const preview = previewOf(checked.contract, checked.verdict.data);
  const approvalRequired = approvalRequiredOf(checked.contract, checked.verdict.data);
  return {
    ...decision,
    validated: true,
    ...(preview !== undefined ? { preview } : {}),
    ...(approvalRequired !== undefined ? { approvalRequired } : {}),
    ...((checked.contract.approval?.quorum ?? 1) > 1
      ? { approvalQuorum: checked.contract.approval!.quorum }
      : {}),
  };
}

/**
 * The validation gate, decided outside the workflow (protocol 3): the verdict is recorded in
 * history with the activity's result. `undefined` when this worker knows no contract for the tool.
 */
function check(
  worker: Worker,
  tool: string,
  input: unknown,
  callId: string,
): { contract: ToolContract; verdict: ArgumentCheck } | undefined {
  const contract = worker.contracts.get(tool);
  if (!contract) return undefined;
  const verdict = checkArguments(contract, input);
  if (!verdict.ok && verdict.schemaError) {
    worker.logger().error('the tool schema threw while validating arguments', {
      callId,
      tool,
      error: verdict.schemaError,
    });
  }
  return { contract, verdict };
}

/** The execution of protocol 3: the arguments checked against this worker's contract, then the tool. */
function checkAndRun(worker: Worker, request: RunToolRequest): Promise<RunToolResult> {
  const attempt = Context.current().info.attempt;
  const checked = check(worker, request.tool, request.input, request.callId);
  // Without a contract there is no implementation either: execute reports that.
  if (!checked) return execute(worker.executor, request, Context.current());
  const { verdict } = checked;
  if (verdict.ok) return execute(worker.executor, { ...request, input: verdict.data }, Context.current());
  if (attempt > 1 && request.tier !== 'readonly') {
    // The schema changed between two attempts of a retried call: an earlier attempt ran the tool
    // and may have acted, so this is not a denial of a call that did nothing.
    throw failure(
      ToolFailureType.failed,
      `${verdict.message} The tool's schema changed while this call was being retried, and an earlier attempt ran; check the current state before repeating it.`,
      { effect: 'unknown', attempt },
      true,
      // In doubt: an operator should hear of it, so not marked benign.
      false,
    );
  }
  const message = request.validatedAtAdmission
    ? `${verdict.message} The tool's schema changed after this call was admitted; ${attempt > 1 ? 'this attempt did not run the tool' : 'nothing ran'}.`
    : verdict.message;
  worker.logger().warn('tool denied at execution time', {
    ...callLogFields(request),
    reason: 'INVALID_INPUT',
    attempt,
  });
  throw failure(
    ToolFailureType.denied,
    message,
    { effect: 'none', reason: 'INVALID_INPUT', attempt, admission: true },
    true,
  );
}

/**
 * Admits the call first when the request asks (the lean readonly path), then runs `body` inside the
 * gates' attempt guards (a breaker's permit), handing back a concurrency slot taken here once the
 * attempt ends.
 */
async function admitAndRun(
  worker: Worker,
  request: RunToolRequest,
  body: (request: RunToolRequest) => Promise<RunToolResult>,
): Promise<RunToolResult> {
  const attempt = Context.current().info.attempt;
  const context = worker.gateContext();
  const gateRequest = { ...gateRequestOf(request, leaseFor(worker, request)), attempt };
  const guarded = () => worker.admission.guardAttempt(gateRequest, () => body(request), context);
  if (!request.admit) return await guarded();
  // The first attempt runs the whole admission and holds the concurrency slot. A retry checks the
  // allowlist again (deny by default must hold even if the first attempt died before its check
  // ran), but not the load gates: admission belongs to the call, as when the workflow admits it once.
  const decision = await worker.admission
    .admit(gateRequest, context, { loadGates: attempt === 1 })
    .catch((error: unknown) => {
      // A retry would skip the load gates, and run a call nobody admitted: this attempt ends
      // the call instead. Nothing ran.
      context.logger.error('admission could not be decided', {
        callId: request.callId,
        error: String(error),
      });
      throw failure(
        ToolFailureType.failed,
        'The call could not be admitted right now; nothing ran. Try again later.',
        { effect: 'none', attempt },
        true,
        false,
      );
    });
  if (!decision.allowed) {
    countRefusal(worker, request.tool, decision);
    throw admissionRefused(decision, attempt);
  }
  try {
    return await guarded();
  } finally {
    // A retry hands back the slot the first attempt took: that attempt's worker may be gone.
    if (decision.holdsSlot || attempt > 1) releaseSoon(worker, gateRequest, context);
  }
}

/**
 * Sends the release of a closing call's slot without waiting for the answer, so that a quota costs
 * a call one round trip (the acquire), not two. The signal leaves before the call's result does,
 * so the next call finds the slot free; if it never arrives (the worker died first), the entity's
 * check of its holders reclaims the slot of the closed call (docs/design.md, "Admission").
 */
function releaseSoon(worker: Worker, request: ReleaseRequest, context: GateContext): void {
  void releaseQuietly(worker, request, context);
}

/**
 * Hands a slot back without letting a failure to do so change the attempt's outcome: the slot's
 * lease, or the entity's check of its holders, reclaims it.
 */
async function releaseQuietly(worker: Worker, request: ReleaseRequest, context: GateContext): Promise<void> {
  try {
    await worker.admission.release(request, context);
  } catch (error) {
    context.logger.warn('could not hand back the concurrency slot', {
      callId: request.callId,
      error: String(error),
    });
  }
}

/**
 * Counts a refusal in `toolgate_admission_refusals_total` (docs/operators.md "Metrics"), by tool and
 * reason. A tool the worker has no contract for counts as `unknown`: the name comes from the
 * caller, and a label must not take every value a caller can invent.
 */
function countRefusal(worker: Worker, tool: string, decision: AdmitDecision): void {
  Context.current()
    .metricMeter.createCounter(
      'toolgate_admission_refusals_total',
      undefined,
      'Calls the admission gates refused.',
    )
    .add(1, {
      tool: worker.contracts.has(tool) ? tool : 'unknown',
      reason: decision.reason ?? 'NOT_ALLOWED',
    });
}

/** The failure of an attempt that admission refused: nothing ran, and retrying will not help. */
function admissionRefused(decision: AdmitDecision, attempt: number) {
  return failure(
    ToolFailureType.denied,
    decision.message ?? notAllowedMessage,
    {
      effect: 'none',
      reason: decision.reason ?? 'NOT_ALLOWED',
      attempt,
      admission: true,
      ...(decision.retryAfterSeconds !== undefined ? { retryAfterSeconds: decision.retryAfterSeconds } : {}),
    },
    true,
  );
}
