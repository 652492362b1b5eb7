import type { StartedCall, ToolgateClient } from '../client/toolgate-client.ts';
import type { CallContext, CallRecord } from '../contracts/call-record.ts';
import { isTerminalStatus } from '../contracts/call-record.ts';
import type { ToolCatalog } from '../contracts/define-tool.ts';
import { NoWorkerAnsweredError, ToolgateUsageError } from '../contracts/errors.ts';
import { deriveCallKey } from '../contracts/prepare-call.ts';
import {
  modelErrorText,
  modelResultForInfrastructureError,
  modelResultForNoWorker,
  modelResultForPending,
  modelResultForRecord,
  modelResultForSetupError,
} from './model-messages.ts';

/** One tool call as a model proposed it, whatever the API. */
export interface ModelToolCall {
  /** The API's call ID (tool_use.id, tool_call.id, call_id). Used to match the answer, never as a key. */
  readonly id: string;
  readonly name: string;
  readonly input: unknown;
  /** Set when the arguments could not even be parsed (OpenAI sends them as a JSON string). */
  readonly inputError?: string;
}

/**
 * Derives an idempotency key for a call from its tool, its arguments and the trusted context. Return
 * undefined for no key. It never sees the API's call ID on purpose: a model re-sends the same action
 * with a new ID, so an ID-based key would not deduplicate anything.
 */
export type KeyFunction = (tool: string, input: unknown, context: CallContext) => string | undefined;

/**
 * What to do with a call that waits for a human:
 * - `wait`: hold the turn until the call is decided and closed (simple, but the turn may take days);
 * - `return-pending`: answer the model at once with a pending result carrying the call ID, and let
 *   the application report the decision later (see {@link awaitPendingCall}).
 */
export const ApprovalMode = { wait: 'wait', returnPending: 'return-pending' } as const;
export type ApprovalMode = (typeof ApprovalMode)[keyof typeof ApprovalMode];

/**
 * The part of ToolgateClient the adapters use, so tests and wrappers can stand in for it.
 * `hasLiveWorker` is only asked with `noWorkerAfterMs`; a caller without it is judged by whether a
 * worker answers its `get`.
 */
export type ToolgateCaller = Pick<ToolgateClient, 'start' | 'result' | 'get'> &
  Partial<Pick<ToolgateClient, 'hasLiveWorker'>>;

export interface RunToolCallsOptions {
  readonly client: ToolgateCaller;
  /** Who is asking: from the application's session, never from the model. */
  readonly context: CallContext;
  /** The contracts, for their key functions and tiers. Strongly recommended. */
  readonly catalog?: ToolCatalog;
  /** Used when the contract has no key function of its own. */
  readonly keyFor?: KeyFunction;
  /** How many calls of one turn run at once. Default 4. */
  readonly maxConcurrency?: number;
  /** Default `return-pending`. */
  readonly approvalMode?: ApprovalMode;
  /** How often a call that may wait for approval is checked, in return-pending mode. Default 250 ms. */
  readonly pendingPollIntervalMs?: number;
  /**
   * Stop waiting for a call once no worker has polled its task queue for this long, and answer it
   * as pending (see {@link ToolCallState}): the call was started, stays open and runs when a worker
   * starts. Default: wait as long as the call takes, worker outages included (a durable wait that
   * holds the turn while no worker runs). Not finite (Infinity) means the same as left out.
   */
  readonly noWorkerAfterMs?: number;
  /**
   * Full diagnostics for operators when toolgate itself could not run a call, when a call is
   * answered pending because no worker picked it up within `noWorkerAfterMs`, and when a key
   * function threw (the call is refused INVALID_INPUT).
   */
  readonly onError?: (error: unknown, call: ModelToolCall) => void;
}

/** How one call ended for this turn. */
export type ToolCallState =
  /** The call closed; `record` is its final record. */
  | 'closed'
  /**
   * The call is open and its result is still to come; `callId` and `runId` are what to wait on
   * ({@link awaitPendingCall}). Either it waits for approval (`record` says `awaiting_approval`), or
   * no worker picked it up within `noWorkerAfterMs` (no `record`): it runs when a worker starts.
   */
  | 'pending'
  /** The call never started: unparsable arguments, a malformed key, or toolgate was unreachable. */
  | 'not_started';

export interface ToolCallOutcome {
  readonly id: string;
  readonly name: string;
  readonly state: ToolCallState;
  readonly callId?: string;
  /**
   * The run of the call this outcome is about. A call's ID outlives a run: once a call is rejected
   * or expires its key is free, and a later call with the same key runs under the same ID. Waiting
   * on a pending call must follow this run, not whatever holds the ID by then.
   */
  readonly runId?: string;
  readonly record?: CallRecord;
  /** Whether the model should see this as an error (Anthropic `is_error`). */
  readonly isError: boolean;
  /** Model-safe text for the tool result. */
  readonly text: string;
}

const defaultConcurrency = 4;

/**
 * The `maxConcurrency` option as a number of lanes: the default when unset, a whole number of at
 * least 1 otherwise. NaN, Infinity or a value below 1 is a mistake in the caller's set-up, so it
 * throws before any call starts (NaN would give no lanes at all, and the turn's calls would never run).
 */
export function concurrencyLimit(value: number | undefined, fallback = defaultConcurrency): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 1) {
    throw new RangeError(
      `maxConcurrency must be a finite number of at least 1 (got ${String(value)}); leave it unset for the default of ${fallback}.`,
    );
  }
  return Math.floor(value);
}

/**
 * Runs one turn's tool calls through toolgate with bounded fan-out and returns one outcome per call,
 * in the order the model made them. It never rejects: a call that fails, or that toolgate could not
 * run, becomes an error outcome and the others keep their results.
 *
 * Calls that share an API call ID within the turn are not run: their answers could not be told
 * apart, so one result (perhaps of a payment) would reach the model as the other's. Each gets an
 * INVALID_INPUT outcome saying so, and the turn's other calls run as usual.
 */
export async function runToolCalls(
  calls: readonly ModelToolCall[],
  options: RunToolCallsOptions,
): Promise<ToolCallOutcome[]> {
  const limit = concurrencyLimit(options.maxConcurrency);
  const uses = new Map<string, number>();
  for (const call of calls) uses.set(call.id, (uses.get(call.id) ?? 0) + 1);
  return mapWithConcurrency(calls, limit, async (call) =>
    (uses.get(call.id) ?? 0) > 1
      ? ambiguousIdOutcome(call, uses.get(call.id)!)
      : runOneToolCall(call, options),
  );
}

function ambiguousIdOutcome(call: ModelToolCall, uses: number): ToolCallOutcome {
  const named = call.id === '' ? 'an empty call ID' : `the call ID ${JSON.stringify(call.id)}`;
  return {
    id: call.id,
    name: call.name,
    state: 'not_started',
    isError: true,
    // Not modelErrorText: its next step for INVALID_INPUT is about arguments, and these may be fine.
    text:
      `Error INVALID_INPUT: ${uses} tool calls in this turn had ${named}, so their results could not ` +
      'be told apart and none of them was run. Make each of these tool calls again, each with its own ID.',
  };
}

/** Runs a single call; never rejects. */
export async function runOneToolCall(
  call: ModelToolCall,
  options: RunToolCallsOptions,
): Promise<ToolCallOutcome> {
  const malformed = malformedCallOutcome(call);
  if (malformed) return malformed;
  let started: StartedCall | undefined;
  try {
    // The client prepares the call once (key, limits, fingerprint, tier) with these contracts.
    started = await options.client.start({ tool: call.name, input: call.input }, options.context, {
      ...(options.catalog ? { catalog: options.catalog } : {}),
      ...(options.keyFor ? { keyFor: options.keyFor } : {}),
    });
    if (started.error) options.onError?.(started.error, call);
    if (started.record) return closedOutcome(call, started.record, started.disposition === 'refused');
    return await followStartedCall(call, started, options);
  } catch (error) {
    options.onError?.(error, call);
    return failedCallOutcome(call, error, started);
  }
}

/** The outcome of a call the model sent in a form that cannot be started, or undefined. */
function malformedCallOutcome(call: ModelToolCall): ToolCallOutcome | undefined {
  const base = { id: call.id, name: call.name, state: 'not_started', isError: true } as const;
  if (call.inputError !== undefined) {
    return { ...base, text: modelErrorText('INVALID_INPUT', call.inputError) };
  }
  if (typeof call.name !== 'string') {
    // Not the service's fault: the client would throw a TypeError, which would reach the model as
    // a retryable infrastructure error, and the same call would fail the same way for ever.
    return {
      ...base,
      text: modelErrorText(
        'NOT_ALLOWED',
        `The tool name was ${call.name === null ? 'null' : typeof call.name}, not a string. Call one of the listed tools by its name.`,
      ),
    };
  }
  return undefined;
}

/**
 * Waits for a started call as the approval mode says: to its end, or, for a call that may wait
 * for a human, until it is decided or waits (then it is reported pending).
 */
async function followStartedCall(
  call: ModelToolCall,
  started: StartedCall,
  options: RunToolCallsOptions,
): Promise<ToolCallOutcome> {
  const noWorkerAfterMs = boundOf(options.noWorkerAfterMs);
  // Without contracts any call may be one that waits for a human.
  const mayWaitForApproval = options.catalog ? started.tier === 'approval' : true;
  if ((options.approvalMode ?? ApprovalMode.returnPending) === ApprovalMode.wait || !mayWaitForApproval) {
    const record = await options.client.result(
      started.callId,
      started.runId,
      ...(noWorkerAfterMs === undefined ? [] : [{ noWorkerAfterMs }]),
    );
    return closedOutcome(call, record);
  }
  const record = await pollUntilDecidedOrWaiting(options, started.callId, started.runId, noWorkerAfterMs);
  if (record.status !== 'awaiting_approval') return closedOutcome(call, record);
  return {
    ...pendingOutcome(call, started),
    record,
    ...modelResultForPending(started.callId),
  };
}

function pendingOutcome(call: Pick<ModelToolCall, 'id' | 'name'>, started: StartedCall) {
  return {
    id: call.id,
    name: call.name,
    state: 'pending' as const,
    callId: started.callId,
    ...(started.runId ? { runId: started.runId } : {}),
  };
}

/** What the model is told when starting or following a call threw. */
function failedCallOutcome(
  call: ModelToolCall,
  error: unknown,
  started: StartedCall | undefined,
): ToolCallOutcome {
  if (started && started.callId !== '' && isNoWorkerError(error)) {
    // The call was started and is durable: it runs when a worker comes. Reporting a failure
    // here would invite the model to make it again, and perhaps do the action twice.
    return { ...pendingOutcome(call, started), ...modelResultForNoWorker(started.callId) };
  }
  const base = { id: call.id, name: call.name, state: 'not_started' } as const;
  if (error instanceof ToolgateUsageError) return { ...base, ...modelResultForSetupError() };
  return { ...base, ...modelResultForInfrastructureError() };
}

/**
 * Waits for a call reported as pending to close, and returns what the model should be told. Use it
 * from wherever the application resumes the conversation (a background job, the next user turn).
 */
export async function awaitPendingCall(
  client: Pick<ToolgateClient, 'result'>,
  outcome: Pick<ToolCallOutcome, 'id' | 'name' | 'callId' | 'runId'> & {
    readonly record?: Pick<CallRecord, 'runId'>;
  },
): Promise<ToolCallOutcome> {
  if (!outcome.callId) throw new TypeError('Only a pending outcome with a call ID can be awaited.');
  // Without the run, the answer could be that of a later call that reused the key after this one
  // was rejected: a "succeeded" for a transfer a human turned down.
  const runId = outcome.runId ?? outcome.record?.runId;
  if (!runId) {
    throw new TypeError(
      `The pending outcome for ${outcome.callId} has no run ID. Keep the outcome's runId (or its record) ` +
        'with the call ID, so that the answer is about this call and not a later one under the same key.',
    );
  }
  const record = await client.result(outcome.callId, runId);
  return closedOutcome({ id: outcome.id, name: outcome.name }, record);
}

/**
 * The key for a call: the contract's own key function when it has one (a business key the tool's
 * author chose), otherwise the caller's. Invalid input gets no contract key; the validation gate
 * will explain what is wrong.
 */
export function deriveKey(
  tool: string,
  input: unknown,
  context: CallContext,
  options: { readonly catalog?: ToolCatalog; readonly keyFor?: KeyFunction },
): string | undefined {
  return deriveCallKey({ tool, input }, context, options);
}

/**
 * Maps items with at most `limit` running at once and keeps the input order in the result. `work`
 * should not reject; if it does, the rejection propagates after every started item settles.
 */
export async function mapWithConcurrency<Item, Result>(
  items: readonly Item[],
  limit: number,
  work: (item: Item, index: number) => Promise<Result>,
): Promise<Result[]> {
  const results = new Array<Result>(items.length);
  let next = 0;
  const lanes = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await work(items[index] as Item, index);
    }
  });
  await Promise.all(lanes);
  return results;
}

function closedOutcome(
  call: Pick<ModelToolCall, 'id' | 'name'>,
  record: CallRecord,
  refused = false,
): ToolCallOutcome {
  return {
    id: call.id,
    name: call.name,
    state: refused ? 'not_started' : 'closed',
    ...(record.callId ? { callId: record.callId } : {}),
    ...(record.runId ? { runId: record.runId } : {}),
    record,
    ...modelResultForRecord(record),
  };
}

/**
 * Polls a call until it waits for approval or has closed. With `noWorkerAfterMs`, it gives up with a
 * NoWorkerAnsweredError once no worker has polled the call's task queue for that long, as
 * `ToolgateClient.result` does: the worker is asked with `hasLiveWorker` when the client has it,
 * otherwise a `get` no worker answered counts as none.
 */
async function pollUntilDecidedOrWaiting(
  options: RunToolCallsOptions,
  callId: string,
  runId: string | undefined,
  noWorkerAfterMs: number | undefined,
): Promise<CallRecord> {
  const intervalMs = options.pendingPollIntervalMs ?? 250;
  const { client } = options;
  /**
   * One look at the call: its record, unless no worker answered the query (only tolerated with a
   * bound), and whether a worker is live per this look: as `hasLiveWorker` says when asked (only
   * with a bound), otherwise whether the `get` was answered.
   */
  const look = async (): Promise<{ record?: CallRecord; live: boolean }> => {
    const said =
      noWorkerAfterMs !== undefined && client.hasLiveWorker
        ? await client.hasLiveWorker(callId, runId)
        : undefined;
    try {
      const record = await client.get(callId, {
        ...(runId ? { runId } : {}),
        // With no worker the record query cannot be answered: ask only long enough to read a
        // call that has closed meanwhile (a closed call needs no worker), not the default 10 s.
        ...(said === false ? { queryTimeoutMs: noWorkerQueryTimeoutMs } : {}),
      });
      return { record, live: said ?? true };
    } catch (error) {
      if (noWorkerAfterMs === undefined || !isNoWorkerError(error)) throw error;
      return { live: said ?? false };
    }
  };
  let noneSince: number | undefined;
  for (;;) {
    const lookedAt = Date.now();
    const { record, live } = await look();
    if (record && (record.status === 'awaiting_approval' || isTerminalStatus(record.status))) return record;
    if (noWorkerAfterMs !== undefined) {
      if (live) {
        noneSince = undefined;
      } else {
        noneSince ??= lookedAt;
        const waitedMs = Date.now() - noneSince;
        if (waitedMs >= noWorkerAfterMs) throw new NoWorkerBoundError(callId, waitedMs);
      }
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/** How long a poll with a bound asks a call no worker polls for its record. */
const noWorkerQueryTimeoutMs = 1_000;

/** The bound a caller asked for; undefined (no bound) unless a finite, non-negative number. */
function boundOf(noWorkerAfterMs: number | undefined): number | undefined {
  return noWorkerAfterMs !== undefined && Number.isFinite(noWorkerAfterMs) && noWorkerAfterMs >= 0
    ? noWorkerAfterMs
    : undefined;
}

/**
 * Whether the error says no worker ran or answered for a call: the client's NoWorkerAnsweredError or
 * the adapters' own give-up, which is one. Only the error itself is checked, not its causes.
 */
export function isNoWorkerError(error: unknown): boolean {
  return error instanceof NoWorkerAnsweredError;
}

/** The poll's own give-up: a NoWorkerAnsweredError, so both are handled alike. */
class NoWorkerBoundError extends NoWorkerAnsweredError {
  override readonly name = 'NoWorkerBoundError';
  constructor(callId: string, waitedMs: number) {
    super(
      `No worker has polled the task queue of ${callId} for ${Math.round(waitedMs / 1000)} s, so nothing can run it. ` +
        'The call stays open and goes on when a worker starts; the tool call was answered as pending.',
    );
  }
}

/**
 * Pairs each call with its outcome for the answer message: the outcome at the call's own position
 * when it carries the call's ID (as `runToolCalls` returns them, which also holds for IDs a turn
 * repeats), otherwise the outcome with that ID, so outcomes gathered in another order still match.
 */
export function outcomesInCallOrder<Outcome extends { readonly id: string }>(
  calls: readonly { readonly id: string }[],
  outcomes: readonly Outcome[],
): Array<Outcome | undefined> {
  const byId = new Map<string, Outcome>();
  for (const outcome of outcomes) if (!byId.has(outcome.id)) byId.set(outcome.id, outcome);
  return calls.map((call, index) => {
    const atPosition = outcomes[index];
    return atPosition?.id === call.id ? atPosition : byId.get(call.id);
  });
}
