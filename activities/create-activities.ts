/**
 * The activities a toolgate worker registers: admission (`admission.ts`), the argument check,
 * decision verification (`decision-verifier.ts`) and the executor (`executor.ts`), wired to one
 * worker's tools and policy.
 */
import type { KeyObject } from 'node:crypto';
import { Context } from '@temporalio/activity';
import {
  type AdmitDecision,
  type RunToolRequest,
  type RunToolResult,
  ToolFailureType,
  type ToolgateActivities,
} from '../src/contracts/activity-types.ts';
import { type ArgumentCheck, checkArguments, previewOf } from '../src/contracts/check-arguments.ts';
import type { ToolCatalog, ToolContract } from '../src/contracts/define-tool.ts';
import { defaultPayloadLimits, type PayloadLimits } from '../src/contracts/limits.ts';
import {
  type Admission,
  type AdmissionGate,
  admitRequestOf,
  createAdmission,
  type ToolPolicy,
} from './admission.ts';
import { verifySignedDecision } from './decision-verifier.ts';
import { type ExecutorSettings, execute, type OperatorLogger } from './executor.ts';
import { failure, notAllowedMessage } from './failures.ts';
import type { CompensationImplementation, ToolImplementation } from './tool-implementation.ts';

export type { AdmissionGate, ToolPolicy } from './admission.ts';
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
    executor: {
      implementations: new Map(options.tools.map((tool) => [tool.contract.name, tool])),
      compensations: new Map(
        (options.compensations ?? []).map((compensation) => [compensation.name, compensation]),
      ),
      limits: options.limits ?? defaultPayloadLimits,
      heartbeatIntervalMs: options.heartbeatIntervalMs ?? 200,
      logger,
    },
  };
  return {
    admitCall: async (request) => admitCall(worker, request),
    async releaseCall(request) {
      worker.admission.release(request);
    },
    async verifyDecision(request) {
      return verifySignedDecision(request, options.approvalPublicKeys, decisionMaxAgeMs);
    },
    runTool: (request) =>
      admitAndRun(worker, request, (admitted) => execute(worker.executor, admitted, Context.current())),
    checkAndRunTool: (request) => admitAndRun(worker, request, (admitted) => checkAndRun(worker, admitted)),
  };
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
function admitCall(worker: Worker, request: Parameters<ToolgateActivities['admitCall']>[0]): AdmitDecision {
  const gateRequest = admitRequestOf(request);
  const decision = worker.admission.admit(gateRequest, { loadGates: !request.allowlistOnly });
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
    if (decision.holdsSlot) worker.admission.release(gateRequest);
    return { allowed: false, reason: 'INVALID_INPUT', message: checked.verdict.message };
  }
  const preview = previewOf(checked.contract, checked.verdict.data);
  return { ...decision, validated: true, ...(preview !== undefined ? { preview } : {}) };
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
    );
  }
  const message = request.validatedAtAdmission
    ? `${verdict.message} The tool's schema changed after this call was admitted; ${attempt > 1 ? 'this attempt did not run the tool' : 'nothing ran'}.`
    : verdict.message;
  throw failure(
    ToolFailureType.denied,
    message,
    { effect: 'none', reason: 'INVALID_INPUT', attempt, admission: true },
    true,
  );
}

/**
 * Admits the call first when the request asks (the lean readonly path), then runs `body`, handing
 * back a concurrency slot taken here once the attempt ends.
 */
async function admitAndRun(
  worker: Worker,
  request: RunToolRequest,
  body: (request: RunToolRequest) => Promise<RunToolResult>,
): Promise<RunToolResult> {
  if (!request.admit) return await body(request);
  const attempt = Context.current().info.attempt;
  const admitRequest = admitRequestOf(request);
  // The first attempt runs the whole admission and holds the concurrency slot. A retry checks the
  // allowlist again (deny by default must hold even if the first attempt died before its check
  // ran), but not the load gates: admission belongs to the call, as when the workflow admits it once.
  const decision = worker.admission.admit(admitRequest, { loadGates: attempt === 1 });
  if (!decision.allowed) {
    throw failure(
      ToolFailureType.denied,
      decision.message ?? notAllowedMessage,
      {
        effect: 'none',
        reason: decision.reason ?? 'NOT_ALLOWED',
        attempt,
        admission: true,
        ...(decision.retryAfterSeconds !== undefined
          ? { retryAfterSeconds: decision.retryAfterSeconds }
          : {}),
      },
      true,
    );
  }
  try {
    return await body(request);
  } finally {
    if (decision.holdsSlot) worker.admission.release(admitRequest);
  }
}
