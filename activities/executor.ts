/**
 * The executor: runs one attempt of a tool with its deadline, heartbeats and AbortSignal
 * (docs/design.md, "Deadlines and cancellation"), and turns what the tool did into a result or a
 * failure the workflow can classify.
 */
import { CancelledFailure, type Context } from '@temporalio/activity';
import { type RunToolRequest, type RunToolResult, ToolFailureType } from '../src/contracts/activity-types.ts';
import type { PayloadLimits } from '../src/contracts/limits.ts';
import { utf8Length } from '../src/contracts/limits.ts';
import { failure } from './failures.ts';
import {
  type CompensationImplementation,
  ToolDenied,
  ToolError,
  type ToolExecution,
  type ToolImplementation,
} from './tool-implementation.ts';

/** Logs for operators, keyed by call ID; only what a ToolError chose to say reaches a model. */
export interface OperatorLogger {
  info(message: string, attributes?: Record<string, unknown>): void;
  warn(message: string, attributes?: Record<string, unknown>): void;
  error(message: string, attributes?: Record<string, unknown>): void;
}

export interface ExecutorSettings {
  readonly implementations: ReadonlyMap<string, ToolImplementation>;
  readonly compensations: ReadonlyMap<string, CompensationImplementation>;
  readonly limits: PayloadLimits;
  /** How often the executor heartbeats while a tool runs. Cancellation arrives with heartbeats. */
  readonly heartbeatIntervalMs: number;
  readonly logger: () => OperatorLogger;
}

/** How a tool's promise settled. */
type ToolOutcome =
  | { readonly ok: true; readonly value: unknown }
  | { readonly ok: false; readonly error: unknown };

/** Microtask turns the executor waits for a tool that answers at once (see `execute`). */
const earlyTurns = 3;

/** A tool's run of one attempt: what it is given, and how to abort it. */
interface PreparedRun {
  readonly start: () => Promise<unknown>;
  readonly abort: (reason: unknown) => void;
}

/** Runs one attempt of the tool (or of its compensation) and returns its result. */
export async function execute(
  settings: ExecutorSettings,
  request: RunToolRequest,
  context: Context,
): Promise<RunToolResult> {
  const attempt = context.info.attempt;
  const run = prepareRun(settings, request, attempt);
  // A cancellation or shutdown already delivered: the tool does not start, so nothing acted.
  if (context.cancellationSignal.aborted) throw interrupted(settings, context, request, attempt, 'before');
  let running: Promise<unknown>;
  const startedAt = performance.now();
  try {
    running = run.start();
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
  // A tool that answers at once has settled within three microtask turns: an async function that
  // returns a value takes one, one that returns another async function's settled promise three.
  // Such a tool needs no heartbeat, deadline or cancellation listener (no timer can fire before it
  // settles), so none is armed for it. Any other tool gets all three.
  for (let turn = 0; turn < earlyTurns && early === undefined; turn++) await undefined;
  const outcome = early ?? (await watch(settings, settled, request, context, run.abort, attempt));
  // How long tools take that returned or threw (one past its deadline is counted as a timeout by
  // the workflow instead). Labels: the tool, its tier, and whether it returned.
  context.metricMeter
    .createHistogram(
      'toolgate_tool_duration_seconds',
      'float',
      's',
      'Time tools ran, until they returned or threw.',
    )
    .record((performance.now() - startedAt) / 1000, {
      tool: request.tool,
      tier: request.tier,
      returned: String(outcome.ok),
    });
  // The tool has settled, so it has really stopped: only now report a cancellation. A tool that
  // finished anyway reports its success below: its effect is known, not unknown.
  if (context.cancellationSignal.aborted && !outcome.ok) {
    throw interrupted(settings, context, request, attempt, 'while');
  }
  if (!outcome.ok) throw classifyToolError(settings, outcome.error, request, attempt);
  return { output: checkedOutput(settings, outcome.value ?? null, request, attempt), attempt };
}

/**
 * Finds the implementation (or compensation) and builds what it is given. The tool's abort signal
 * is made when the tool first reads it: a tool that never reads it cannot observe an abort, and one
 * that reads it late gets a signal already aborted when the call was cancelled or its deadline
 * passed before that.
 */
function prepareRun(settings: ExecutorSettings, request: RunToolRequest, attempt: number): PreparedRun {
  const compensation = request.compensationOf;
  const implementation = compensation ? undefined : settings.implementations.get(request.tool);
  const compensator = compensation ? settings.compensations.get(request.tool) : undefined;
  if (!implementation && !compensator) {
    settings.logger().error('no implementation registered for tool', {
      ...callLogFields(request),
    });
    throw failure(
      ToolFailureType.missingImplementation,
      'This tool is not available on the executor right now.',
      { effect: 'none', attempt },
      false,
      false,
    );
  }
  let controller: AbortController | undefined;
  let abortReason: { readonly reason: unknown } | undefined;
  const signal = (): AbortSignal => {
    if (!controller) {
      controller = new AbortController();
      if (abortReason) controller.abort(abortReason.reason);
    }
    return controller.signal;
  };
  // The same on every attempt (docs/design.md, "Idempotency": a retried call's downstream sees a
  // stable key): the call's key, or its call ID when it has none.
  const key = request.key ?? request.callId;
  const execution: ToolExecution<unknown> = {
    input: request.input,
    get signal() {
      return signal();
    },
    // A compensation is a different action: a downstream that dedups on the key must not mistake
    // the undo for a repeat of the original.
    key: compensator ? `${key}:undo` : key,
    callId: request.callId,
    context: request.context,
    attempt,
  };
  return {
    start: () =>
      compensator
        ? compensator.execute({ ...execution, output: compensation!.output })
        : implementation!.execute(execution),
    abort: (reason) => {
      abortReason ??= { reason };
      controller?.abort(reason);
    },
  };
}

/** The tool's result, checked to fit: JSON, and within the output limit. */
function checkedOutput(
  settings: ExecutorSettings,
  output: unknown,
  request: RunToolRequest,
  attempt: number,
): unknown {
  // The tool has acted by now: a result we cannot carry does not make its effect unknown.
  const effect = request.tier === 'readonly' ? 'none' : 'applied';
  let encoded: string;
  try {
    encoded = JSON.stringify(output) ?? 'null';
  } catch {
    throw failure(
      ToolFailureType.outputTooLarge,
      'The tool returned a result that cannot be encoded as JSON.',
      { attempt, effect },
      false,
      // A tool bug, not an outcome: the SDK's warning stays.
      false,
    );
  }
  const size = utf8Length(encoded);
  if (size > settings.limits.maxOutputBytes) {
    settings.logger().warn('tool result over the output limit', {
      ...callLogFields(request),
      attempt,
      bytes: size,
      limit: settings.limits.maxOutputBytes,
    });
    throw failure(
      ToolFailureType.outputTooLarge,
      `The result is ${size} bytes; the limit is ${settings.limits.maxOutputBytes}. Ask for less data (filter, paginate or summarise).`,
      { attempt, effect },
    );
  }
  return output;
}

/**
 * Waits for a tool that did not answer at once: heartbeats while it runs, aborts its signal when the
 * call is cancelled, and stops waiting at the executor's deadline.
 */
async function watch(
  settings: ExecutorSettings,
  settled: Promise<ToolOutcome>,
  request: RunToolRequest,
  context: Context,
  abort: (reason: unknown) => void,
  attempt: number,
): Promise<ToolOutcome> {
  const heartbeat = setInterval(() => context.heartbeat({ attempt }), settings.heartbeatIntervalMs);
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
    settings.logger().warn('tool deadline passed', {
      ...callLogFields(request),
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
 * The error for a tool stopped by the activity's cancellation signal, before it started or while it
 * ran. A cancellation the caller asked for ends the call; anything else (the worker shutting down,
 * the activity paused or reset) is a failed attempt that the tier's retry policy may repeat.
 */
function interrupted(
  settings: ExecutorSettings,
  context: Context,
  request: RunToolRequest,
  attempt: number,
  when: 'before' | 'while',
) {
  if (context.cancellationDetails?.cancelRequested ?? true) {
    return context.cancellationSignal.reason instanceof CancelledFailure
      ? context.cancellationSignal.reason
      : new CancelledFailure('cancelled');
  }
  settings
    .logger()
    .warn(when === 'before' ? 'tool interrupted before it started' : 'tool interrupted by the executor', {
      ...callLogFields(request),
      attempt,
    });
  return when === 'before'
    ? failure(ToolFailureType.failed, 'The executor was interrupted before the tool ran.', {
        attempt,
        effect: 'none',
      })
    : failure(ToolFailureType.failed, 'The executor was interrupted while the tool ran.', { attempt });
}

/** A tool's own error as the workflow sees it: a denial, a failure it vouches for, or an internal one. */
function classifyToolError(
  settings: ExecutorSettings,
  error: unknown,
  request: RunToolRequest,
  attempt: number,
): Error {
  if (error instanceof ToolDenied) {
    settings.logger().warn('tool denied at execution time', {
      ...callLogFields(request),
      reason: error.reason,
      detail: error.message,
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
    return failure(ToolFailureType.denied, error.message, { effect: 'none', reason: error.reason, attempt });
  }
  const where = { ...callLogFields(request), attempt };
  if (error instanceof ToolError) {
    // An outcome the tool chose to report: one warn line, its message (what the model sees too).
    settings.logger().warn('tool failed', {
      ...where,
      ...(error.effect ? { effect: error.effect } : {}),
      retryable: error.retryable,
      error: { type: 'ToolError', message: error.message },
    });
    return failure(
      ToolFailureType.failed,
      error.message,
      {
        ...(error.effect ? { effect: error.effect } : {}),
        ...(error.retryable ? {} : { retryable: false }),
        attempt,
      },
      !error.retryable,
    );
  }
  // A tool that threw anything else has a bug: operators get the stack; the model gets nothing of it.
  settings.logger().error('tool threw an unexpected error', {
    ...where,
    error:
      error instanceof Error
        ? { type: error.name, message: error.message, stack: error.stack }
        : String(error),
  });
  return failure(ToolFailureType.failed, 'The tool reported an internal error.', { attempt }, false, false);
}

/** What every log line about a call carries: its ID, tool and tenant (docs/operators.md "Worker logs"). */
export function callLogFields(request: Pick<RunToolRequest, 'callId' | 'tool' | 'context'>) {
  return { callId: request.callId, tool: request.tool, tenant: request.context.tenant };
}
