import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import { setTimeout as pause } from 'node:timers/promises';
import {
  type Client,
  isGrpcCancelledError,
  isGrpcDeadlineError,
  type WorkflowClient,
  WorkflowExecutionAlreadyStartedError,
  WorkflowFailedError,
  WorkflowNotFoundError,
  type WorkflowService,
  WorkflowUpdateFailedError,
  WorkflowUpdateRPCTimeoutOrCancelledError,
} from '@temporalio/client';
import { ApplicationFailure, TerminatedFailure, TimeoutFailure } from '@temporalio/common';
import {
  decodeFromPayloadsAtIndex,
  decodeMapFromPayloads,
} from '@temporalio/common/lib/internal-non-workflow/index.js';
import { optionalTsToMs } from '@temporalio/common/lib/time.js';
import { decisionSignal, decisionUpdate, recordQuery } from '../../workflows/messages.ts';
import type { DecisionAnswer, DecisionClaims, SignedDecision } from '../contracts/approval.ts';
import {
  type CallContext,
  type CallRecord,
  isTerminalStatus,
  type ReplayInfo,
  releasedFailureType,
} from '../contracts/call-record.ts';
import { checkCatalogSchemas, type ToolCatalog } from '../contracts/define-tool.ts';
import { defaultPayloadLimits, type PayloadLimits } from '../contracts/limits.ts';
import {
  abnormalCallRecord,
  type CallRequest,
  describeGateProtocolProblem,
  type KeyDeriver,
  type PreparedCall,
  prepareCall,
  refusedCallRecord,
} from '../contracts/prepare-call.ts';
import { reasonCodes } from '../contracts/reason-codes.ts';
import { searchAttributeKeys } from '../contracts/search-attributes.ts';
import type { SideEffectTier } from '../contracts/tier.ts';
import { type ApprovalSigner, decisionClaims } from './approval-signer.ts';
import { checkContext } from './call-context.ts';
import { defaultTaskQueue } from './connection-settings.ts';
import { ClusterNotReadyError, NoWorkerAnsweredError, ToolgateUsageError } from './errors.ts';
import { nativeSha256Hex } from './native-sha256.ts';
import { withUndo } from './undo-info.ts';

export type { CallRequest };

/**
 * How `start()` resolved:
 * - `started`: a new run began (or, with a key, this request joined one it cannot tell apart);
 * - `attached`: a run with the same key and arguments was already running, and this joined it;
 * - `existing`: the key's call had closed; its stored record is returned and nothing runs again
 *   (for a succeeded reversible call, with an operator's undo of it merged in as `undo`);
 * - `refused`: no run was started (KEY_MISMATCH, a malformed key, oversized input).
 */
export type StartDisposition = 'started' | 'attached' | 'existing' | 'refused';

export interface StartedCall {
  readonly callId: string;
  readonly runId?: string;
  readonly disposition: StartDisposition;
  /** Present when the outcome is already known (`existing`, `refused`). */
  readonly record?: CallRecord;
  /** Whether the server started the run eagerly on a local worker. */
  readonly eagerlyStarted?: boolean;
  /** The tool's tier when the catalog the call was prepared with has the tool. */
  readonly tier?: SideEffectTier;
  /**
   * For a refusal caused by the caller's own code (a key function that threw): that error, with
   * the key function's as its cause, for the caller's diagnostics. The record says what the model
   * may read.
   */
  readonly error?: Error;
}

/** What `start` answers for a call its preparation refused: nothing was started. */
export function refusedStart(refusal: Extract<PreparedCall, { ok: false }>): StartedCall {
  return {
    callId: '',
    disposition: 'refused',
    record: refusal.record,
    ...(refusal.error ? { error: refusal.error } : {}),
  };
}

/** Options of `ToolgateClient.start`. */
export interface StartOptions {
  readonly replay?: ReplayInfo;
  /** For operator replays only: run under this existing call's ID (a keyless call has no other). */
  readonly callId?: string;
  /**
   * The contracts to prepare this call with, for their key functions and tiers; default the
   * client's. The worker's catalog still decides what runs.
   */
  readonly catalog?: ToolCatalog;
  /** Derives a key for a keyless request whose contract has no key function of its own. */
  readonly keyFor?: KeyDeriver;
}

export interface DecisionOptions {
  readonly approver: string;
  readonly roles?: readonly string[];
  readonly comment?: string;
  /**
   * Decide only this run of the call: the one whose arguments the approver read. A key freed by a
   * rejection or an expiry can start a new run under the same call ID, with other arguments; a
   * decision made on what the old run showed is then refused here, and nothing is signed or sent.
   * Without it, the decision goes to whichever run is current when it is signed.
   */
  readonly runId?: string;
}

/** Whether a decision counted. A refused one is recorded on the call, which keeps waiting. */
export interface DecisionOutcome {
  readonly accepted: boolean;
  /**
   * `dropped` means the call dropped this decision unread (its queue of decisions to check was
   * flooded): it did not count, and can be sent again. `closed`: the call closed before it was read.
   */
  readonly state: 'accepted' | 'refused' | 'dropped' | 'closed';
  readonly reason?: string;
  readonly record?: CallRecord;
}

export interface ToolgateClientOptions {
  readonly client: Client;
  readonly taskQueue?: string;
  /** The contracts, used to derive business keys. Optional: without it only explicit keys are used. */
  readonly catalog?: ToolCatalog;
  /** Needed for approve() and reject(). */
  readonly signer?: ApprovalSigner;
  readonly limits?: PayloadLimits;
  /** Ask the server to hand the first workflow task straight to a local worker. */
  readonly eagerStart?: boolean;
  readonly workflowType?: string;
  /**
   * The gate protocol new calls start with. Default: the newest, 3 (validation recorded in
   * history). Pin 2 while workers from before protocol 3 still serve the task queue, then drop the
   * pin once every worker is upgraded (docs/operators.md, "Upgrading to gate protocol 3").
   */
  readonly gateProtocol?: 2 | 3;
}

/**
 * The page a start reads of its key's history. The server counts a page in event batches (an
 * event, or the events one workflow task wrote): a toolgate call's history is about ten.
 */
const historyPeekBatches = 100;

/** One read of a call's history: see `ToolgateClient.#readCall`. */
interface CallHistory {
  /** The run the history began as (its start event's original run ID). */
  readonly runId: string;
  readonly fingerprint: unknown;
  readonly startNonce: unknown;
  /** Present only when that run completed. */
  readonly record?: CallRecord;
  /** Whether the page held the whole history; when not, a close event may lie past it. */
  readonly whole: boolean;
}

/**
 * One start's view of the server's answers. Only an answer to a request that carries this start's
 * own nonce in its memo counts, so an interceptor that runs one caller's request in another's
 * async context cannot hand a start someone else's answer.
 */
interface StartAnswer {
  /** The memo value `startNonce` of this start's request, as the default converter encodes it. */
  readonly nonceJson: string;
  /** The run that a request of this start created, if the server said it created one. */
  createdRunId?: string;
  /**
   * A replay's request ID, sent in place of a random one on starts of this workflow ID. The server
   * answers a start whose request ID is the current run's with that run instead of a new one, so
   * two replays of the same run that race start one run between them, even when the first has
   * already closed by the time the second asks.
   */
  readonly replay?: { readonly workflowId: string; readonly requestId: string };
}

function isAnswerTo(
  answer: StartAnswer,
  request: Parameters<WorkflowService['startWorkflowExecution']>[0],
): boolean {
  const data = request.memo?.fields?.['startNonce']?.data;
  return data != null && Buffer.from(data).toString('utf8') === answer.nonceJson;
}

const startAnswers = new AsyncLocalStorage<StartAnswer>();

/**
 * The request ID of every replay of one run. The run ID is unique to the workflow ID, and the
 * server compares request IDs per workflow ID, so the run ID alone names the replay.
 */
function replayRequestId(replacesRunId: string): string {
  return `toolgate-replay-of-${replacesRunId}`;
}

/**
 * The caller's own workflow client, seen through an object that keeps the `started` flag of the
 * server's answer to a start, which `WorkflowClient.start` drops (TypeScript SDK 1.24). With it, a
 * keyed start that created its run knows the run is its own and needs no `describe()` to find out.
 * Everything else is the caller's client, reached through the prototype: its interceptors, data
 * converter and identity. Where the flag is not seen (a server without it, an SDK that reaches the
 * service another way, a codec that encrypts the memo so the nonce cannot be matched) a start
 * reports nothing, and the caller asks the slower way.
 */
function answeringStarts(workflow: WorkflowClient): WorkflowClient {
  let wrapped: { readonly base: WorkflowService; readonly service: WorkflowService } | undefined;
  return Object.create(workflow, {
    workflowService: {
      get(): WorkflowService {
        const base = workflow.workflowService;
        if (wrapped?.base !== base) {
          const service = new Proxy(base, {
            get(target, property, receiver) {
              const value = Reflect.get(target, property, receiver);
              if (property !== 'startWorkflowExecution' || typeof value !== 'function') return value;
              return async (sent: Parameters<WorkflowService['startWorkflowExecution']>[0]) => {
                const answer = startAnswers.getStore();
                const request =
                  answer?.replay && sent.workflowId === answer.replay.workflowId
                    ? { ...sent, requestId: answer.replay.requestId }
                    : sent;
                const response = await value.call(target, request);
                if (answer && response.started === true && response.runId && isAnswerTo(answer, request)) {
                  answer.createdRunId = response.runId;
                }
                return response;
              };
            },
          });
          wrapped = { base, service };
        }
        return wrapped.service;
      },
    },
  }) as WorkflowClient;
}

/** gRPC's INVALID_ARGUMENT status code. */
const grpcInvalidArgument = 3;

/** A start refused for a reason an operator can fix gets a message that says how; others pass as they are. */
function explainStartFailure(error: unknown, temporal: Client): unknown {
  for (let current = error; current instanceof Error; current = current.cause) {
    const { code, details } = current as Error & { code?: unknown; details?: unknown };
    const text = typeof details === 'string' ? details : current.message;
    const missing =
      /no mapping defined for search attribute (\w+)|search attribute (\w+) is not defined/i.exec(text);
    if (code === grpcInvalidArgument && missing) {
      const namespace = temporal.options.namespace;
      return new ClusterNotReadyError(
        `The namespace ${JSON.stringify(namespace)} does not have toolgate's search attribute ${missing[1] ?? missing[2]}, ` +
          `so no call can start there. Register toolgate's search attributes once: ` +
          `TEMPORAL_ADDRESS=<address> TEMPORAL_NAMESPACE=${namespace} deploy/temporal/register-search-attributes.sh ` +
          `(the embedded dev server of toolgate dev registers them itself).`,
        { cause: error },
      );
    }
  }
  return error;
}

/**
 * The caller's API. Each method takes the trusted context of the application (tenant, principal),
 * never anything the model wrote.
 */
export class ToolgateClient {
  readonly temporal: Client;
  readonly taskQueue: string;
  readonly #options: ToolgateClientOptions;
  readonly #limits: PayloadLimits;
  readonly #workflowType: string;
  readonly #starter: WorkflowClient;

  constructor(options: ToolgateClientOptions) {
    const protocolProblem = describeGateProtocolProblem(options.gateProtocol);
    if (protocolProblem) throw new ToolgateUsageError(protocolProblem);
    this.temporal = options.client;
    this.#starter = answeringStarts(options.client.workflow);
    this.taskQueue = options.taskQueue ?? defaultTaskQueue;
    this.#options = options;
    this.#limits = options.limits ?? defaultPayloadLimits;
    this.#workflowType = options.workflowType ?? 'toolCall';
    // A lazy schema with a mistake throws here, when the application starts, not at its first call.
    if (options.catalog) checkCatalogSchemas(options.catalog);
  }

  /**
   * Starts a call, or joins the running or closed call with the same key. Returns its ID. The
   * request is prepared once (`prepareCall`): name, key, limits, fingerprint, tier.
   */
  async start(request: CallRequest, context: CallContext, options: StartOptions = {}): Promise<StartedCall> {
    checkContext(context);
    const catalog = options.catalog ?? this.#options.catalog;
    const prepared = prepareCall(request, context, {
      ...(catalog ? { catalog } : {}),
      ...(options.keyFor ? { keyFor: options.keyFor } : {}),
      limits: this.#limits,
      unique: randomUUID(),
      sha256Hex: nativeSha256Hex,
      ...(options.replay ? { replay: options.replay } : {}),
      ...(this.#options.gateProtocol !== undefined ? { protocol: this.#options.gateProtocol } : {}),
    });
    if (!prepared.ok) return refusedStart(prepared);
    const tier = prepared.tier ? { tier: prepared.tier } : {};
    const mismatch = (id: string): StartedCall => ({
      callId: '',
      disposition: 'refused',
      record: refusedCallRecord({
        request,
        context,
        key: prepared.key,
        fingerprint: prepared.fingerprint,
        reason: 'KEY_MISMATCH',
        message: keyMismatchMessage(id),
        tier: prepared.tier,
      }),
    });
    // A replay of a keyless call reuses that call's own ID; it has no other.
    const id = options.replay && options.callId ? options.callId : prepared.callId;
    const started = await this.#startWorkflow(id, prepared, options.replay);
    if ('alreadyStarted' in started) {
      const existing = await this.#joinExisting(id, prepared.fingerprint, started.peek);
      return existing ? { ...existing, ...tier } : mismatch(id);
    }
    const { handle, answer, startNonce, peek } = started;
    // Without a key the run is new. With one, the server may say it created this run from this
    // request, whose arguments are these. A replay is never taken on the server's word: its answer
    // to a request ID it has seen says `started` too, so only the run's own memo tells whose it is.
    const runId = handle.firstExecutionRunId;
    const fresh = { callId: id, runId, eagerlyStarted: handle.eagerlyStarted, ...tier };
    if (!options.replay && (prepared.key === undefined || answer.createdRunId === runId)) {
      return { ...fresh, disposition: 'started' };
    }
    // With a key the server may have attached us to a running call, and a replay to another replay
    // of the same run: its memo says whose it is. The history read during the start answers that
    // when it saw the run the start returned; else describe it.
    const seen = await peek;
    const memo =
      seen && !seen.record && seen.runId === runId
        ? { fingerprint: seen.fingerprint, startNonce: seen.startNonce }
        : (await this.temporal.workflow.getHandle(id, runId).describe()).memo;
    if (memo?.['fingerprint'] !== prepared.fingerprint) return mismatch(id);
    return { ...fresh, disposition: memo?.['startNonce'] === startNonce ? 'started' : 'attached' };
  }

  /**
   * Asks the server to start the call's workflow. A keyed call may exist already: its history is
   * read while the start is in flight, so a duplicate of a closed call costs one round trip instead
   * of two, and one that joins a running call needs no describe. For a new key the read finds
   * nothing: one cheap extra RPC, in parallel.
   */
  async #startWorkflow(
    id: string,
    prepared: Extract<PreparedCall, { ok: true }>,
    replay: ReplayInfo | undefined,
  ): Promise<
    | {
        handle: Awaited<ReturnType<Client['workflow']['start']>>;
        answer: StartAnswer;
        startNonce: string;
        peek?: Promise<CallHistory | undefined>;
      }
    | { alreadyStarted: true; peek?: Promise<CallHistory | undefined> }
  > {
    const startNonce = randomUUID();
    const peek = prepared.key !== undefined && !replay ? this.#readCall(id) : undefined;
    const answer: StartAnswer = {
      nonceJson: JSON.stringify(startNonce),
      ...(replay ? { replay: { workflowId: id, requestId: replayRequestId(replay.replacesRunId) } } : {}),
    };
    try {
      const handle = await startAnswers.run(answer, () =>
        this.#starter.start(this.#workflowType, {
          workflowId: id,
          taskQueue: this.taskQueue,
          args: [prepared.workflowRequest],
          // Only a Completed run keeps its key; a Failed one (denied, or a retry-safe failure) frees it.
          workflowIdReusePolicy: replay?.force ? 'ALLOW_DUPLICATE' : 'ALLOW_DUPLICATE_FAILED_ONLY',
          workflowIdConflictPolicy: 'USE_EXISTING',
          memo: { fingerprint: prepared.fingerprint, startNonce },
          typedSearchAttributes: prepared.searchAttributes,
          ...(this.#options.eagerStart ? { requestEagerStart: true } : {}),
        }),
      );
      return { handle, answer, startNonce, ...(peek ? { peek } : {}) };
    } catch (error) {
      if (!(error instanceof WorkflowExecutionAlreadyStartedError))
        throw explainStartFailure(error, this.temporal);
      return { alreadyStarted: true, ...(peek ? { peek } : {}) };
    }
  }

  /**
   * The answer for a start the server refused because the key's latest run completed: the stored
   * record when the arguments are the same, or undefined for other arguments (KEY_MISMATCH).
   */
  async #joinExisting(
    id: string,
    fingerprint: string,
    peek: Promise<CallHistory | undefined> | undefined,
  ): Promise<StartedCall | undefined> {
    // The refused start means the key's latest run completed, so a completed history is that run's.
    const seen = await peek;
    // Read again only where that can help: the call may have closed since a read that found
    // nothing or held its whole history. Past one page the close event is out of a page's reach.
    const closed = seen?.record || (seen && !seen.whole) ? seen : await this.#readCall(id);
    if (closed?.record) {
      if (closed.fingerprint !== fingerprint) return undefined;
      const record = await this.#withUndoIfReversible(closed.record);
      return { callId: id, runId: record.runId, disposition: 'existing', record };
    }
    const description = await this.temporal.workflow.getHandle(id).describe();
    if (description.memo?.['fingerprint'] !== fingerprint) return undefined;
    const record = await this.#withUndoIfReversible(await this.result(id));
    return { callId: id, runId: description.runId, disposition: 'existing', record };
  }

  /**
   * A closed call's stored record says what its run did, and an operator may have undone that
   * since: a succeeded reversible call's record gets its undo merged in, as
   * `ToolgateOperations.get` shows it. Other records are returned as they are, with no extra RPC.
   */
  async #withUndoIfReversible(record: CallRecord): Promise<CallRecord> {
    if (record.status !== 'succeeded' || record.tier !== 'reversible') return record;
    return withUndo(this.temporal, record);
  }

  /**
   * What one read of a call's history tells: the memo set at its start (fingerprint, start nonce)
   * and the run it began as, plus the record when that run completed. Undefined when there is no
   * such history (an unused key, one deleted after the retention) or it is not a toolgate call's,
   * or the read failed: every caller then asks the slower way, so an error here loses nothing.
   */
  async #readCall(callId: string): Promise<CallHistory | undefined> {
    try {
      // One page only. A toolgate call's history is a dozen events; one that signals (forged
      // decisions, say) have made long is not read whole on every start with its key: without the
      // close event on this page, the caller asks the slower way, which reads only that event.
      const { history, nextPageToken } = await this.temporal.workflowService.getWorkflowExecutionHistory({
        namespace: this.temporal.options.namespace,
        execution: { workflowId: callId },
        maximumPageSize: historyPeekBatches,
      });
      const events = history?.events;
      const started = events?.[0]?.workflowExecutionStartedEventAttributes;
      if (!started?.originalExecutionRunId) return undefined;
      const converter = this.temporal.options.loadedDataConverter;
      const memo = await decodeMapFromPayloads(converter, started.memo?.fields);
      const seen = {
        runId: started.originalExecutionRunId,
        fingerprint: memo?.['fingerprint'],
        startNonce: memo?.['startNonce'],
        whole: !nextPageToken?.length,
      };
      const completed = events?.at(-1)?.workflowExecutionCompletedEventAttributes;
      if (!completed) return seen;
      if (completed.newExecutionRunId) return undefined;
      const record = await decodeFromPayloadsAtIndex<CallRecord>(converter, 0, completed.result?.payloads);
      if (!record || typeof record !== 'object' || record.callId !== callId) return undefined;
      return { ...seen, record };
    } catch {
      return undefined;
    }
  }

  /** Starts a call and waits for its record. */
  async call(request: CallRequest, context: CallContext): Promise<CallRecord> {
    const started = await this.start(request, context);
    return started.record ?? (await this.result(started.callId, started.runId));
  }

  /**
   * Waits for a call to close and returns its record. By default it waits for as long as the call
   * takes, worker restarts included. With `noWorkerAfterMs` it gives up, with NoWorkerAnsweredError,
   * once no worker has polled the call's task queue for that long: the call stays open and goes on
   * when a worker comes (the CLI uses this, so that a command never hangs in silence).
   */
  async result(callId: string, runId?: string, options: ResultOptions = {}): Promise<CallRecord> {
    const handle = this.temporal.workflow.getHandle(callId, runId);
    const { noWorkerAfterMs } = options;
    if (noWorkerAfterMs === undefined) {
      try {
        return (await handle.result()) as CallRecord;
      } catch (error) {
        return recordFromFailure(error, callId);
      }
    }
    const stop = new AbortController();
    const waiting = this.temporal.connection
      .withAbortSignal(stop.signal, () => handle.result())
      .then(
        (value) => value as CallRecord,
        (error: unknown) => {
          if (stop.signal.aborted) throw error;
          return recordFromFailure(error, callId);
        },
      );
    try {
      return await Promise.race([
        waiting,
        this.#failWhenNoWorker(callId, runId, noWorkerAfterMs, stop.signal),
      ]);
    } finally {
      stop.abort();
      waiting.catch(() => undefined);
    }
  }

  /**
   * Rejects with NoWorkerAnsweredError once no worker has polled the call's task queue for
   * `afterMs`; otherwise never settles (until `signal` aborts). A live worker long-polls without a
   * break of more than about 70 s, and the server lists a poller for some minutes after its last
   * poll, so a poller counts as live when it was seen within the last 75 s.
   */
  async #failWhenNoWorker(
    callId: string,
    runId: string | undefined,
    afterMs: number,
    signal: AbortSignal,
  ): Promise<never> {
    const description = await this.temporal.workflow.getHandle(callId, runId).describe();
    const taskQueue = description.taskQueue;
    let noneSince: number | undefined;
    for (;;) {
      const live = await this.#workerPollsQueue(taskQueue);
      const now = Date.now();
      if (live) noneSince = undefined;
      else noneSince ??= now;
      if (noneSince !== undefined && now - noneSince >= afterMs) {
        throw new NoWorkerAnsweredError(
          `No worker has polled task queue ${JSON.stringify(taskQueue)} for ${Math.round((now - noneSince) / 1000)} s, ` +
            `so nothing can run ${callId}. The call stays open and goes on when a worker starts: start one ` +
            `(toolgate worker, or npm start), then read the call with: toolgate get ${callId}`,
        );
      }
      // timers/promises removes its abort listener when the pause ends; one added by hand every
      // pause stayed on the signal, and a long wait (a human's approval) leaked one per pause.
      await pause(Math.min(noWorkerPollMs, afterMs), undefined, { signal }).catch(() => undefined);
      if (signal.aborted) return new Promise<never>(() => undefined);
    }
  }

  /**
   * Whether a worker polls the call's task queue: one was seen there within the last 75 s, as the
   * wait with `noWorkerAfterMs` of {@link result} counts it. For callers that wait their own way
   * (the agent adapters' poll for a pending approval) and want the same bound.
   */
  async hasLiveWorker(callId: string, runId?: string): Promise<boolean> {
    const description = await this.temporal.workflow.getHandle(callId, runId).describe();
    return this.#workerPollsQueue(description.taskQueue);
  }

  async #workerPollsQueue(taskQueue: string): Promise<boolean> {
    const response = await this.temporal.workflowService.describeTaskQueue({
      namespace: this.temporal.options.namespace,
      taskQueue: { name: taskQueue },
      taskQueueType: taskQueueTypeWorkflow,
    });
    const now = Date.now();
    return (response.pollers ?? []).some(
      (poller) => now - (optionalTsToMs(poller.lastAccessTime) ?? 0) < livePollerWindowMs,
    );
  }

  /**
   * The call's record: live from the workflow while it is open, the stored result once it is closed.
   * Returns undefined for an unknown ID. With `runId`, the record of that run of the call, even when
   * a later call has since reused its key (and so its ID).
   */
  async get(
    callId: string,
    options: { queryTimeoutMs?: number; runId?: string } = {},
  ): Promise<CallRecord | undefined> {
    const handle = this.temporal.workflow.getHandle(callId, options.runId);
    let status: string;
    try {
      status = (await handle.describe()).status.name;
    } catch (error) {
      if (error instanceof WorkflowNotFoundError) return undefined;
      throw error;
    }
    if (status !== 'RUNNING') return this.result(callId, options.runId);
    const timeoutMs = options.queryTimeoutMs ?? defaultQueryTimeoutMs;
    const deadline = Date.now() + timeoutMs;
    try {
      // A deadline on the RPC itself: a query nobody answers is cancelled, not left in flight.
      return await this.temporal.connection.withDeadline(deadline, () => handle.query(recordQuery));
    } catch (error) {
      const failure = queryFailureKind(error, deadline, Date.now());
      const why =
        failure === 'deadline'
          ? `within ${timeoutMs} ms`
          : failure === 'no-poller'
            ? 'and the server has seen none poll its task queue recently'
            : undefined;
      if (why === undefined) throw error;
      throw new NoWorkerAnsweredError(
        `No worker answered the record query for ${callId} ${why}; is a toolgate worker running on its task queue?`,
        { cause: error },
      );
    }
  }

  /**
   * The dedup window: how long a closed call's key stays taken. It equals the namespace's retention
   * (24 h on the dev server); after that the closed run is deleted and the key is free again.
   */
  async dedupWindowSeconds(): Promise<number | undefined> {
    const response = await this.temporal.workflowService.describeNamespace({
      namespace: this.temporal.options.namespace,
    });
    const retention = response.config?.workflowExecutionRetentionTtl;
    return retention?.seconds == null ? undefined : Number(retention.seconds);
  }

  /**
   * Asks the server to cancel a call and returns as soon as it has accepted the request, without
   * waiting for the tool to stop (docs/design.md "Liveness and cancellation"). An open call then
   * has the cancel in its history and stops at its next step; a call that had already closed is
   * left as it was (the server accepts that cancel and changes nothing). Either way its record says
   * how it ended: `result(callId)`, or `cancelAndWait` to do both. An unknown ID throws
   * `WorkflowNotFoundError`.
   */
  async cancel(callId: string): Promise<CancelReceipt> {
    await this.temporal.workflow.getHandle(callId).cancel();
    return { callId };
  }

  /**
   * Cancels a call and waits until it has really stopped. Returns its final record: `cancelled`, or
   * `denied` with `CANCELLED` if it was waiting for a human, when the cancel stopped it; any other
   * status when the call closed on its own first (its tool finished before it saw the cancel, or
   * the call had already closed).
   */
  async cancelAndWait(callId: string, options: ResultOptions = {}): Promise<CallRecord> {
    await this.cancel(callId);
    return this.result(callId, undefined, options);
  }

  /** Approves a waiting call as a human approver. Says whether the decision counted. */
  approve(callId: string, options: DecisionOptions): Promise<DecisionOutcome> {
    return this.#decide(callId, 'approve', options);
  }

  /** Rejects a waiting call as a human approver. Says whether the decision counted. */
  reject(callId: string, options: DecisionOptions): Promise<DecisionOutcome> {
    return this.#decide(callId, 'reject', options);
  }

  /**
   * Sends an already signed decision (or anything else: the workflow refuses what it cannot verify)
   * as a Workflow Update, and answers with the worker's verdict: `accepted`, or `refused` with the
   * reason (`dropped` when a flood of signals filled the call's queue, `closed` when the call
   * closed first). A worker that answers nothing within `waitMs` (default 60 s) makes it throw
   * `NoWorkerAnsweredError`; the decision may still be checked when one comes.
   */
  async sendDecision(
    callId: string,
    payload: SignedDecision | unknown,
    waitMs = defaultDecisionWaitMs,
  ): Promise<DecisionOutcome> {
    return (await this.#closedOutcome(callId)) ?? this.#updateDecision(callId, payload, waitMs);
  }

  /** The answer for a call that has closed, or undefined while it runs (`status` when known). */
  async #closedOutcome(callId: string, status?: string): Promise<DecisionOutcome | undefined> {
    const current = status ?? (await this.temporal.workflow.getHandle(callId).describe()).status.name;
    if (current === 'RUNNING') return undefined;
    const record = await this.result(callId);
    return {
      accepted: false,
      state: 'closed',
      reason: `the call is already closed (${record.status})`,
      record,
    };
  }

  /** Sends the decision as the `toolgateDecision` Update to a running call and reads the answer. */
  async #updateDecision(callId: string, payload: unknown, waitMs: number): Promise<DecisionOutcome> {
    const handle = this.temporal.workflow.getHandle(callId);
    let answer: DecisionAnswer;
    try {
      answer = await this.temporal.withDeadline(Date.now() + waitMs, () =>
        handle.executeUpdate(decisionUpdate, { args: [payload] }),
      );
    } catch (error) {
      if (error instanceof WorkflowUpdateFailedError) {
        const message = error.cause?.message ?? error.message;
        // A worker whose code predates decisions by Update (during a rolling deploy): the signal.
        if (/No registered handler for update/.test(message))
          return this.#signalDecision(callId, payload, waitMs);
        // The validator's refusal: not a decision at all; nothing was written.
        return { accepted: false, state: 'refused', reason: message };
      }
      const after = await this.#closedOutcome(callId).catch(() => undefined);
      if (after) return after;
      if (error instanceof WorkflowUpdateRPCTimeoutOrCancelledError) {
        throw new NoWorkerAnsweredError(
          `No worker checked the decision on ${callId} within ${Math.round(waitMs / 1000)} s: is a worker polling its task queue? ` +
            'The decision may still be checked when one does; look with get() before sending it again.',
          { cause: error },
        );
      }
      throw error;
    }
    if (answer.accepted)
      return { accepted: true, state: 'accepted', ...(answer.reason ? { reason: answer.reason } : {}) };
    return {
      accepted: false,
      state: answer.dropped ? 'dropped' : answer.closed ? 'closed' : 'refused',
      reason: answer.reason ?? 'the decision was refused',
    };
  }

  /**
   * The signal path, for workers that predate the Update: sends the decision and reads the record
   * until it shows the verdict, for up to `waitMs`.
   */
  async #signalDecision(callId: string, payload: unknown, waitMs: number): Promise<DecisionOutcome> {
    await this.temporal.workflow.getHandle(callId).signal(decisionSignal, payload);
    const nonce = (payload as { claims?: { nonce?: unknown } } | null)?.claims?.nonce;
    const ownNonce = typeof nonce === 'string' ? nonce : undefined;
    const deadline = Date.now() + waitMs;
    // Polled with a growing pause: many decisions sent at once must not flood the workers with
    // queries while they are busy applying them.
    let pauseMs = 50;
    let lastSeen: CallRecord | undefined;
    while (Date.now() < deadline) {
      const queryTimeoutMs = Math.max(1, Math.min(deadline - Date.now(), defaultQueryTimeoutMs));
      const record = await this.get(callId, { queryTimeoutMs }).catch(() => undefined);
      if (record) {
        lastSeen = record;
        const verdict = decisionVerdict(record, ownNonce);
        if (verdict) return verdict;
      }
      await pause(Math.min(pauseMs, Math.max(0, deadline - Date.now())));
      pauseMs = Math.min(pauseMs * 2, 400);
    }
    return undecidedInTime(callId, lastSeen, ownNonce);
  }

  async #decide(
    callId: string,
    decision: 'approve' | 'reject',
    options: DecisionOptions,
  ): Promise<DecisionOutcome> {
    const signer = this.#options.signer;
    if (!signer)
      throw new ToolgateUsageError(
        'approve() and reject() need an approval signer: pass `signer` to the client.',
      );
    const handle = this.temporal.workflow.getHandle(callId);
    const description = await handle.describe();
    const fingerprint = description.memo?.['fingerprint'];
    if (typeof fingerprint !== 'string') throw new ToolgateUsageError(`${callId} is not a toolgate call.`);
    // Only the approval tier waits for a decision. A signal to any other call would sit unread
    // until it closed, and the caller would be told that no worker answered.
    const tier = description.typedSearchAttributes.get(searchAttributeKeys.toolTier);
    if (description.status.name === 'RUNNING' && tier !== undefined && tier !== 'approval') {
      return {
        accepted: false,
        state: 'refused',
        reason: `the call's tool is ${tier}-tier, which never waits for a human decision: there is nothing to ${decision}`,
      };
    }
    if (options.runId !== undefined && options.runId !== description.runId) {
      return {
        accepted: false,
        state: 'refused',
        reason:
          `the call was restarted since you read it: its current run is ${description.runId}, not ${options.runId}, ` +
          'and it may ask for other arguments. Read it again and decide on what it asks now',
      };
    }
    // The claims name this run and its fingerprint: if another run starts before the signal lands,
    // that run refuses the decision, since it was not made on its arguments.
    const claims: DecisionClaims = decisionClaims({
      callId,
      runId: description.runId,
      decision,
      approver: options.approver,
      approverKind: 'human',
      roles: [...(options.roles ?? [])],
      fingerprint,
      ...(options.comment !== undefined ? { comment: options.comment } : {}),
    });
    // The description above says whether the call still runs: no second look before sending.
    return (
      (await this.#closedOutcome(callId, description.status.name)) ??
      this.#updateDecision(callId, signer.sign(claims), defaultDecisionWaitMs)
    );
  }
}

/** How long approve(), reject() and sendDecision() wait for a worker to check a decision. */
const defaultDecisionWaitMs = 60_000;

function keyMismatchMessage(callId: string): string {
  return `${reasonCodes.KEY_MISMATCH.meaning} ${reasonCodes.KEY_MISMATCH.nextStep} (existing call: ${callId})`;
}

/**
 * Why a record query failed, when the reason is that no worker answered: its deadline passed, or the
 * server refused it for want of a poller. A deadline can also come back as CANCELLED: when the
 * server's copy of the deadline fires first, it resets the stream, and gRPC reports that as a
 * cancelled call (seen about once in 40 queries to a stopped worker). A CANCELLED before the
 * deadline is somebody else's cancel, and is not reported as a missing worker.
 */
export function queryFailureKind(
  error: unknown,
  deadlineMs: number,
  nowMs: number,
): 'deadline' | 'no-poller' | undefined {
  if (isGrpcDeadlineError(error)) return 'deadline';
  if (isGrpcCancelledError(error) && nowMs >= deadlineMs - deadlineSlackMs) return 'deadline';
  if (sawNoPoller(error)) return 'no-poller';
  return undefined;
}

/** Clock granularity allowed between gRPC's deadline and ours when a CANCELLED arrives. */
const deadlineSlackMs = 25;

/**
 * Whether the server refused a query because no worker has polled the call's task queue lately.
 * When less than a second of the query's deadline is left and no worker has started a poll within
 * `matching.queryPollerUnavailableWindow` (20 s by default), matching answers FAILED_PRECONDITION
 * "no poller seen for task queue recently" instead of waiting; with a short deadline, at once.
 */
function sawNoPoller(error: unknown): boolean {
  for (let current = error; current instanceof Error; current = current.cause) {
    const { code, details } = current as Error & { code?: unknown; details?: unknown };
    if (code === grpcFailedPrecondition && typeof details === 'string' && /no poller seen/i.test(details)) {
      return true;
    }
  }
  return false;
}

/** What `cancel()` answers once the server has accepted the cancel. */
export interface CancelReceipt {
  readonly callId: string;
}

/** Options for waiting on a call's result. */
export interface ResultOptions {
  /** Give up once no worker has polled the call's task queue for this long. Default: never give up. */
  readonly noWorkerAfterMs?: number;
}

/** How recently a poller must have been seen to count as a live worker. */
const livePollerWindowMs = 75_000;

/** TASK_QUEUE_TYPE_WORKFLOW: the workflow side of a task queue, which every toolgate worker polls. */
const taskQueueTypeWorkflow = 1;

/** How often a wait with `noWorkerAfterMs` looks for a worker. */
const noWorkerPollMs = 2_000;

/** How long get() waits for a worker to answer the record query, unless told otherwise. */
const defaultQueryTimeoutMs = 10_000;

/** gRPC's FAILED_PRECONDITION status code. */
const grpcFailedPrecondition = 9;

/** A released call closes as Failed with its record attached; anything else is reported honestly. */
function recordFromFailure(error: unknown, callId: string): CallRecord {
  if (error instanceof WorkflowFailedError) {
    const cause = error.cause;
    if (cause instanceof ApplicationFailure && cause.type === releasedFailureType && cause.details?.[0]) {
      return cause.details[0] as CallRecord;
    }
    const terminated = cause instanceof TerminatedFailure;
    return abnormalCallRecord(
      callId,
      cause instanceof TimeoutFailure ? 'timeout' : 'failed',
      terminated
        ? 'The call was terminated by an operator; the action may or may not have happened.'
        : 'The call ended abnormally; the action may or may not have happened.',
    );
  }
  throw error;
}

export { checkContext } from './call-context.ts';
export { ClusterNotReadyError, NoWorkerAnsweredError, ToolgateUsageError } from './errors.ts';

/**
 * What a record says about a decision sent with `nonce` (undefined when the payload had none), or
 * undefined while it says nothing yet.
 */
function decisionVerdict(record: CallRecord, nonce: string | undefined): DecisionOutcome | undefined {
  if (nonce !== undefined && record.approval?.decisionNonce === nonce) {
    return { accepted: true, state: 'accepted', record };
  }
  const refused =
    nonce === undefined ? undefined : record.refusedDecisions.find((entry) => entry.nonce === nonce);
  if (refused) return { accepted: false, state: 'refused', reason: refused.reason, record };
  // Closed without taking it (expired, cancelled meanwhile): waiting longer cannot help.
  if (isTerminalStatus(record.status)) {
    return {
      accepted: false,
      state: 'closed',
      reason: `the call closed (${record.status}) before the decision was applied`,
      record,
    };
  }
  // A payload without a nonce cannot be matched: the latest refusal is taken as its answer.
  const last = record.refusedDecisions.at(-1);
  if (nonce === undefined && last && record.status === 'awaiting_approval') {
    return { accepted: false, state: 'refused', reason: last.reason, record };
  }
  return undefined;
}

/**
 * The answer when a decision was neither taken nor refused in time. The call names the last
 * decisions it dropped unread because its queue was full; the nonce is only claimed there, so this
 * is judged at the end of the wait, after the record had every chance to show the decision.
 */
function undecidedInTime(
  callId: string,
  lastSeen: CallRecord | undefined,
  nonce: string | undefined,
): DecisionOutcome {
  const droppedUnread = lastSeen?.decisionsDroppedUnread ?? 0;
  const flood =
    `the call's queue of decisions to check was full (${droppedUnread} dropped unread so far): someone is ` +
    "flooding it with signals; find out who can signal workflows in the call's namespace";
  if (
    nonce !== undefined &&
    lastSeen?.status === 'awaiting_approval' &&
    lastSeen.droppedUnreadNonces?.includes(nonce)
  ) {
    return {
      accepted: false,
      state: 'dropped',
      reason: `this decision was dropped unread and did not count. ${flood}. Send it again once the flood stops (a decision never counts twice)`,
      record: lastSeen,
    };
  }
  throw new NoWorkerAnsweredError(
    `No worker checked the decision on ${callId} in time${droppedUnread > 0 ? `, and ${flood}` : ''}. ` +
      'It may still be checked when one does; look with get() before sending it again.',
  );
}
