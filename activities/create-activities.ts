import { type KeyObject, verify } from 'node:crypto';
import { ApplicationFailure, CancelledFailure, Context } from '@temporalio/activity';
import type {
  AdmitDecision,
  AdmitRequest,
  ReleaseRequest,
  RunToolRequest,
  RunToolResult,
  ToolFailureDetails,
  ToolgateActivities,
  VerifyDecisionRequest,
} from '../src/contracts/activity-types.ts';
import { ToolFailureType } from '../src/contracts/activity-types.ts';
import { type DecisionVerdict, signedDecisionSchema } from '../src/contracts/approval.ts';
import { canonicalJson } from '../src/contracts/canonical-json.ts';
import { checkArguments, previewOf } from '../src/contracts/check-arguments.ts';
import type { ToolCatalog, ToolContract } from '../src/contracts/define-tool.ts';
import { defaultPayloadLimits, type PayloadLimits, utf8Length } from '../src/contracts/limits.ts';
import { type AllowlistPolicy, isToolAllowed } from '../src/policy/allowlist.ts';
import { authorizeDecision } from '../src/policy/approvers.ts';
import {
  type CompensationImplementation,
  ToolDenied,
  ToolError,
  type ToolImplementation,
} from './tool-implementation.ts';

/** A gate that can refuse a call for load reasons (quotas, breakers). See `src/policy`. */
export interface AdmissionGate {
  admit(request: AdmitRequest): AdmitDecision | undefined;
  release(request: ReleaseRequest): void;
}

export interface ToolPolicy extends AllowlistPolicy {
  /** Per-tool approval overrides: who may approve and how long a call waits. */
  readonly approvals?: Readonly<
    Record<string, { readonly approvers?: readonly string[]; readonly expiresAfterMs?: number }>
  >;
}

export interface OperatorLogger {
  info(message: string, attributes?: Record<string, unknown>): void;
  warn(message: string, attributes?: Record<string, unknown>): void;
  error(message: string, attributes?: Record<string, unknown>): void;
}

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

/** How a tool's promise settled. */
type ToolOutcome =
  | { readonly ok: true; readonly value: unknown }
  | { readonly ok: false; readonly error: unknown };

/** Microtask turns the executor waits for a tool that answers at once (see `execute`). */
const earlyTurns = 3;

/**
 * Builds the activities a toolgate worker registers: admission, decision verification and the
 * executor that runs a tool with its deadline, heartbeats and AbortSignal.
 */
export function createActivities(options: CreateActivitiesOptions): ToolgateActivities {
  const limits = options.limits ?? defaultPayloadLimits;
  const heartbeatIntervalMs = options.heartbeatIntervalMs ?? 200;
  const decisionMaxAgeMs = options.decisionMaxAgeMs ?? 15 * 60 * 1000;
  const implementations = new Map(options.tools.map((tool) => [tool.contract.name, tool]));
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
  const compensations = new Map(
    (options.compensations ?? []).map((compensation) => [compensation.name, compensation]),
  );
  const gates = options.admissionGates ?? [];
  const logger = (): OperatorLogger => options.logger ?? Context.current().log;

  /**
   * The allowlist, then every admission gate in order (`loadGates: false` checks the allowlist
   * only). Synchronous: nothing here waits.
   */
  function admit(request: AdmitRequest, { loadGates = true } = {}): AdmitDecision {
    if (!isToolAllowed(options.policy, request.tool, request.context.tenant)) {
      return {
        allowed: false,
        reason: 'NOT_ALLOWED',
        message: notAllowedMessage,
      };
    }
    let holdsSlot = false;
    for (const gate of loadGates ? gates : []) {
      const decision = gate.admit(request);
      if (decision && !decision.allowed) {
        // Hand back what earlier gates took, so a refusal leaves nothing held.
        if (holdsSlot) for (const earlier of gates.slice(0, gates.indexOf(gate))) earlier.release(request);
        return decision;
      }
      if (decision?.holdsSlot) holdsSlot = true;
    }
    const override =
      options.policy.approvals && Object.hasOwn(options.policy.approvals, request.tool)
        ? options.policy.approvals[request.tool]
        : undefined;
    return {
      allowed: true,
      ...(override?.approvers ? { approvers: [...override.approvers] } : {}),
      ...(override?.expiresAfterMs !== undefined ? { approvalExpiresAfterMs: override.expiresAfterMs } : {}),
      ...(holdsSlot ? { holdsSlot } : {}),
    };
  }

  /**
   * The validation gate, decided outside the workflow (protocol 3): the verdict is recorded in
   * history with the activity's result. `undefined` when this worker knows no contract for the tool.
   */
  function check(tool: string, input: unknown, callId: string) {
    const contract = contracts.get(tool);
    if (!contract) return undefined;
    const verdict = checkArguments(contract, input);
    if (!verdict.ok && verdict.schemaError) {
      logger().error('the tool schema threw while validating arguments', {
        callId,
        tool,
        error: verdict.schemaError,
      });
    }
    return { contract, verdict };
  }

  return {
    async admitCall(request) {
      const gateRequest = admitRequestOf(request);
      const decision = admit(gateRequest);
      if (!request.check || !decision.allowed) return decision;
      const checked = check(request.tool, request.input, request.callId);
      if (!checked) {
        logger().warn('no contract for the tool on this worker: the workflow validates the arguments', {
          callId: request.callId,
          tool: request.tool,
        });
        return decision;
      }
      if (!checked.verdict.ok) {
        // Invalid arguments hold nothing: a slot the gates took is handed back now.
        if (decision.holdsSlot) for (const gate of gates) gate.release(gateRequest);
        return { allowed: false, reason: 'INVALID_INPUT', message: checked.verdict.message };
      }
      const preview = previewOf(checked.contract, checked.verdict.data);
      return { ...decision, validated: true, ...(preview !== undefined ? { preview } : {}) };
    },

    async releaseCall(request) {
      for (const gate of gates) gate.release(request);
    },

    async verifyDecision(request) {
      return verifySignedDecision(request, options.approvalPublicKeys, decisionMaxAgeMs);
    },

    async runTool(request) {
      return await admitAndRun(request, (admitted) => execute(admitted, Context.current()));
    },

    async checkAndRunTool(request) {
      return await admitAndRun(request, (admitted) => {
        const attempt = Context.current().info.attempt;
        const checked = check(request.tool, request.input, request.callId);
        // Without a contract there is no implementation either: execute reports that.
        if (!checked) return execute(admitted, Context.current());
        const { verdict } = checked;
        if (!verdict.ok) {
          if (attempt > 1 && request.tier !== 'readonly') {
            // The schema changed between two attempts of a retried call: an earlier attempt ran the
            // tool and may have acted, so this is not a denial of a call that did nothing.
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
        return execute({ ...admitted, input: verdict.data }, Context.current());
      });
    },
  };

  /**
   * Admits the call first when the request asks (the lean readonly path), then runs `body`, handing
   * back a concurrency slot taken here once the attempt ends.
   */
  async function admitAndRun(
    request: RunToolRequest,
    body: (request: RunToolRequest) => Promise<RunToolResult>,
  ): Promise<RunToolResult> {
    if (!request.admit) return await body(request);
    const attempt = Context.current().info.attempt;
    const admitRequest = admitRequestOf(request);
    // The first attempt runs the whole admission and holds the concurrency slot. A retry checks
    // the allowlist again (deny by default must hold even if the first attempt died before its
    // check ran), but not the load gates: admission belongs to the call, as when the workflow
    // admits it once.
    const decision = admit(admitRequest, { loadGates: attempt === 1 });
    if (!decision.allowed) {
      const message = decision.message ?? notAllowedMessage;
      throw failure(
        ToolFailureType.denied,
        message,
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
      if (decision.holdsSlot) for (const gate of gates) gate.release(admitRequest);
    }
  }

  async function execute(request: RunToolRequest, context: Context): Promise<RunToolResult> {
    const attempt = context.info.attempt;
    const compensation = request.compensationOf;
    const implementation = compensation ? undefined : implementations.get(request.tool);
    const compensator = compensation ? compensations.get(request.tool) : undefined;
    if (!implementation && !compensator) {
      logger().error('no implementation registered for tool', {
        callId: request.callId,
        tool: request.tool,
      });
      throw failure(
        ToolFailureType.missingImplementation,
        'This tool is not available on the executor right now.',
        {
          effect: 'none',
          attempt,
        },
      );
    }
    // The tool's abort signal is made when the tool first reads it. A tool that never reads it
    // cannot observe an abort, and one that reads it late gets a signal already aborted when the
    // call was cancelled or its deadline passed before that.
    let controller: AbortController | undefined;
    let abortReason: { readonly reason: unknown } | undefined;
    const abort = (reason: unknown) => {
      abortReason ??= { reason };
      controller?.abort(reason);
    };
    const signal = (): AbortSignal => {
      if (!controller) {
        controller = new AbortController();
        if (abortReason) controller.abort(abortReason.reason);
      }
      return controller.signal;
    };
    // The same on every attempt (docs/design.md, "Idempotency": a retried call's downstream sees a stable key): the
    // call's key, or its call ID when it has none.
    const key = request.key ?? request.callId;
    const execution = {
      input: request.input,
      get signal() {
        return signal();
      },
      // A compensation is a different action: a downstream that dedups on the key must not
      // mistake the undo for a repeat of the original.
      key: compensator ? `${key}:undo` : key,
      callId: request.callId,
      context: request.context,
      attempt,
    };
    // A cancellation or shutdown already delivered: the tool does not start, so nothing acted.
    if (context.cancellationSignal.aborted) throw interrupted(context, request, attempt, 'before');
    let running: Promise<unknown>;
    try {
      running = compensator
        ? compensator.execute({ ...execution, output: compensation!.output })
        : implementation!.execute(execution);
    } catch (thrown) {
      // A tool that throws before returning its promise is classified like one that rejects: its
      // error must not reach history (or the model) as a raw message and type.
      running = Promise.reject(thrown);
    }

    let early: ToolOutcome | undefined;
    const settled = running.then(
      (value): ToolOutcome => (early = { ok: true, value }),
      (error: unknown): ToolOutcome => (early = { ok: false, error }),
    );
    // A tool that answers at once has settled within three microtask turns: an async function
    // that returns a value takes one, one that returns another async function's settled promise
    // three. Such a tool needs no heartbeat, deadline or cancellation listener (no timer can
    // fire before it settles), so none is armed for it. Any other tool gets all three.
    for (let turn = 0; turn < earlyTurns && early === undefined; turn++) await undefined;
    const outcome = early ?? (await watch(settled, request, context, abort, attempt));
    // The tool has settled, so it has really stopped: only now report a cancellation. A tool that
    // finished anyway reports its success below: its effect is known, not unknown.
    if (context.cancellationSignal.aborted && !outcome.ok)
      throw interrupted(context, request, attempt, 'while');
    if (!outcome.ok) throw classifyToolError(outcome.error, request, attempt);
    const output = outcome.value ?? null;
    // The tool has acted by now: a result we cannot carry does not make its effect unknown.
    const settledEffect = request.tier === 'readonly' ? 'none' : 'applied';
    let encoded: string;
    try {
      encoded = JSON.stringify(output) ?? 'null';
    } catch {
      throw failure(
        ToolFailureType.outputTooLarge,
        'The tool returned a result that cannot be encoded as JSON.',
        {
          attempt,
          effect: settledEffect,
        },
      );
    }
    const size = utf8Length(encoded);
    if (size > limits.maxOutputBytes) {
      throw failure(
        ToolFailureType.outputTooLarge,
        `The result is ${size} bytes; the limit is ${limits.maxOutputBytes}. Ask for less data (filter, paginate or summarise).`,
        { attempt, effect: settledEffect },
      );
    }
    return { output, attempt } satisfies RunToolResult;
  }

  /**
   * Waits for a tool that did not answer at once: heartbeats while it runs, aborts its signal when
   * the call is cancelled, and stops waiting at the executor's deadline.
   */
  async function watch(
    settled: Promise<ToolOutcome>,
    request: RunToolRequest,
    context: Context,
    abort: (reason: unknown) => void,
    attempt: number,
  ): Promise<ToolOutcome> {
    const heartbeat = setInterval(() => context.heartbeat({ attempt }), heartbeatIntervalMs);
    let deadlineTimer: NodeJS.Timeout | undefined;
    const deadline = new Promise<'deadline'>((resolve) => {
      deadlineTimer = setTimeout(() => resolve('deadline'), request.timeoutMs);
    });
    const onCancel = () => abort(context.cancellationSignal.reason);
    context.cancellationSignal.addEventListener('abort', onCancel, { once: true });
    // An abort event fires once: one that came before the listener would otherwise be missed.
    if (context.cancellationSignal.aborted) onCancel();
    try {
      const outcome = await Promise.race([settled, deadline]);
      if (outcome !== 'deadline') return outcome;
      abort(new Error('deadline'));
      logger().warn('tool deadline passed', {
        callId: request.callId,
        tool: request.tool,
        timeoutMs: request.timeoutMs,
        attempt,
      });
      // The deadline is the executor's: a tool that ignores its signal does not get more time.
      throw failure(ToolFailureType.timeout, `The tool did not finish within ${request.timeoutMs} ms.`, {
        attempt,
      });
    } finally {
      clearInterval(heartbeat);
      clearTimeout(deadlineTimer);
      context.cancellationSignal.removeEventListener('abort', onCancel);
    }
  }

  /**
   * The error for a tool stopped by the activity's cancellation signal, before it started or while
   * it ran. A cancellation the caller asked for ends the call; anything else (the worker shutting
   * down, the activity paused or reset) is a failed attempt that the tier's retry policy may repeat.
   */
  function interrupted(context: Context, request: RunToolRequest, attempt: number, when: 'before' | 'while') {
    if (context.cancellationDetails?.cancelRequested ?? true) {
      return context.cancellationSignal.reason instanceof CancelledFailure
        ? context.cancellationSignal.reason
        : new CancelledFailure('cancelled');
    }
    logger().warn(
      when === 'before' ? 'tool interrupted before it started' : 'tool interrupted by the executor',
      {
        callId: request.callId,
        tool: request.tool,
        attempt,
      },
    );
    return when === 'before'
      ? failure(ToolFailureType.failed, 'The executor was interrupted before the tool ran.', {
          attempt,
          effect: 'none',
        })
      : failure(ToolFailureType.failed, 'The executor was interrupted while the tool ran.', { attempt });
  }

  function classifyToolError(error: unknown, request: RunToolRequest, attempt: number): Error {
    if (error instanceof ToolDenied) {
      logger().warn('tool denied at execution time', {
        callId: request.callId,
        tool: request.tool,
        reason: error.reason,
        message: error.message,
      });
      if (attempt > 1 && request.tier !== 'readonly') {
        // A refusal now says nothing about the attempts before it, which ran the tool and may have
        // acted: this is not a denial of a call that did nothing (docs/design.md, "States and effects").
        return failure(
          ToolFailureType.failed,
          `${error.message} An earlier attempt of this call ran the tool and may have acted; check the current state before repeating it.`,
          { effect: 'unknown', attempt },
          true,
        );
      }
      return failure(ToolFailureType.denied, error.message, {
        effect: 'none',
        reason: error.reason,
        attempt,
      });
    }
    // Operators get everything; the model gets only what a ToolError chose to say.
    logger().error('tool failed', {
      callId: request.callId,
      tool: request.tool,
      attempt,
      error: error instanceof Error ? (error.stack ?? error.message) : String(error),
    });
    if (error instanceof ToolError) {
      return failure(
        ToolFailureType.failed,
        error.message,
        {
          ...(error.effect ? { effect: error.effect } : {}),
          attempt,
        },
        !error.retryable,
      );
    }
    return failure(ToolFailureType.failed, 'The tool reported an internal error.', { attempt });
  }
}

const notAllowedMessage =
  'This tool is not enabled for you. Use only the tools listed in your tool definitions.';

function failure(
  type: string,
  message: string,
  details: Omit<ToolFailureDetails, 'message'>,
  nonRetryable = false,
) {
  return ApplicationFailure.create({ type, message, details: [{ message, ...details }], nonRetryable });
}

/**
 * Verifies a decision's Ed25519 signature against the configured signers, then authorises it.
 * Anything unexpected is a refusal with a reason, never an exception: the call keeps waiting.
 */
export function verifySignedDecision(
  request: VerifyDecisionRequest,
  publicKeys: readonly KeyObject[],
  maxAgeMs: number,
  nowMs = Date.now(),
): DecisionVerdict {
  const parsed = signedDecisionSchema.safeParse(request.payload);
  if (!parsed.success) {
    return {
      accepted: false,
      reason: 'the decision is not a signed decision',
      claimedApprover: 'unknown',
      decision: 'unknown',
    };
  }
  const { claims, signature } = parsed.data;
  const refuse = (reason: string): DecisionVerdict => ({
    accepted: false,
    reason,
    claimedApprover: claims.approver,
    decision: claims.decision,
    nonce: claims.nonce,
  });
  const message = Buffer.from(canonicalJson(claims));
  const signatureBytes = Buffer.from(signature, 'base64');
  const signedByTrustedKey = publicKeys.some((key) => {
    try {
      return verify(null, message, key, signatureBytes);
    } catch {
      return false;
    }
  });
  if (!signedByTrustedKey) return refuse('the signature is missing or not from a trusted approval signer');
  const problem = authorizeDecision({
    claims,
    callId: request.callId,
    runId: request.runId,
    fingerprint: request.fingerprint,
    requester: request.requester,
    approvers: request.approvers,
    nowMs,
    maxAgeMs,
  });
  return problem ? refuse(problem) : { accepted: true, claims };
}

/**
 * The four fields admission gates see, and nothing else: a gate never gets the arguments, and
 * `release` gets the same object `admit` got.
 */
function admitRequestOf(request: AdmitRequest): AdmitRequest {
  return { callId: request.callId, tool: request.tool, tier: request.tier, context: request.context };
}
