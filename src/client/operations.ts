import { randomUUID } from 'node:crypto';
import {
  ServiceError,
  WorkflowExecutionAlreadyStartedError,
  WorkflowNotFoundError,
} from '@temporalio/client';
import type { CallRecord, ReplayInfo, UndoInfo } from '../contracts/call-record.ts';
import { lookupTool, type ToolCatalog } from '../contracts/define-tool.ts';
import { NotACallError, UnknownRunError } from '../contracts/errors.ts';
import { searchAttributeKeys } from '../contracts/search-attributes.ts';
import { tierIsRetrySafe } from '../contracts/tier.ts';
import { type ToolUndoRequest, type ToolUndoResult, undoIdSuffix } from '../contracts/undo.ts';
import { buildListQuery, type ListFilters } from './list-query.ts';
import type { StartedCall, ToolgateClient } from './toolgate-client.ts';
import { undoInfoFromFailure, undoInfoFromResult, withUndo } from './undo-info.ts';

/** One call as visibility sees it: the search attributes of one run. */
export interface CallSummary {
  readonly callId: string;
  readonly runId: string;
  readonly tool: string;
  readonly tier?: string;
  readonly status: string;
  readonly effect?: string;
  readonly reason?: string;
  readonly tenant?: string;
  readonly principal?: string;
  readonly startedAt: string;
  readonly closedAt?: string;
  /** Temporal's own view: RUNNING, COMPLETED, FAILED (a released key), … */
  readonly workflowStatus: string;
}

export interface ReplayOptions {
  /** Who asks for the replay; recorded on the new run. */
  readonly operator: string;
  /** Needed to re-run a call whose effect may already have happened (irreversible, approval). */
  readonly force?: boolean;
  /** Why; required with `force`. */
  readonly reason?: string;
}

/** The outcome of one replay: a new run, or a refusal that says why and what to do instead. */
export type ReplayOutcome =
  | {
      readonly replayed: true;
      readonly callId: string;
      readonly replacesRunId: string;
      readonly started: StartedCall;
    }
  | { readonly replayed: false; readonly callId: string; readonly refusal: string };

export interface BulkReplayProgress {
  readonly total: number;
  readonly done: number;
  readonly succeeded: number;
  readonly failed: number;
  readonly refused: number;
  /** The item that just finished. */
  readonly item: BulkReplayItem;
}

export interface BulkReplayItem {
  readonly callId: string;
  readonly tool: string;
  /** `succeeded`/`failed`/`timeout`/… for a replayed call, `refused` or `planned` (dry run) otherwise. */
  readonly outcome: string;
  readonly runId?: string;
  readonly replacesRunId?: string;
  readonly message?: string;
}

export interface BulkReplayOptions extends ReplayOptions {
  /** How many replays run at the same time. Default 4. */
  readonly concurrency?: number;
  /** List what would be replayed, and replay nothing. */
  readonly dryRun?: boolean;
  /** Wait for each replayed call to close (default true), so the summary has outcomes. */
  readonly wait?: boolean;
  readonly onProgress?: (progress: BulkReplayProgress) => void;
}

export interface BulkReplaySummary {
  readonly total: number;
  readonly succeeded: number;
  readonly failed: number;
  readonly refused: number;
  readonly dryRun: boolean;
  readonly items: readonly BulkReplayItem[];
}

export interface UndoOptions {
  readonly operator: string;
}

/** The outcome of an undo. `alreadyDone` means an earlier undo ran the compensation; it did not run again. */
export type UndoOutcome =
  | {
      readonly undone: true;
      readonly callId: string;
      readonly alreadyDone: boolean;
      readonly result: ToolUndoResult;
      readonly undo: UndoInfo;
    }
  | { readonly undone: false; readonly callId: string; readonly refusal: string; readonly undo?: UndoInfo };

export interface ToolgateOperationsOptions {
  readonly client: ToolgateClient;
  /** The contracts, for tiers and compensations. */
  readonly catalog: ToolCatalog;
  /** The workflow types; match the worker's. */
  readonly callWorkflowType?: string;
  readonly undoWorkflowType?: string;
}

/** gRPC's INVALID_ARGUMENT status code: what the server answers for a run ID that is not a UUID. */
const grpcInvalidArgument = 3;

function isInvalidArgument(error: unknown): boolean {
  return (
    error instanceof ServiceError &&
    (error.cause as { code?: unknown } | undefined)?.code === grpcInvalidArgument
  );
}

/** What `describe()` says of a workflow. */
type WorkflowDescription = Awaited<
  ReturnType<ReturnType<ToolgateClient['temporal']['workflow']['getHandle']>['describe']>
>;

/** The outcome of the replay checks: the record a replay would re-run, or why it will not. */
type ReplayCheck =
  | { readonly eligible: true; readonly record: CallRecord }
  | { readonly eligible: false; readonly refusal: string };

/**
 * The operator's API on top of {@link ToolgateClient}: list calls by search attributes, replay
 * failed calls one by one or in bulk, and undo succeeded reversible calls.
 */
export class ToolgateOperations {
  readonly client: ToolgateClient;
  readonly #catalog: ToolCatalog;
  readonly #callWorkflowType: string;
  readonly #undoWorkflowType: string;

  constructor(options: ToolgateOperationsOptions) {
    this.client = options.client;
    this.#catalog = options.catalog;
    this.#callWorkflowType = options.callWorkflowType ?? 'toolCall';
    this.#undoWorkflowType = options.undoWorkflowType ?? 'toolUndo';
  }

  /**
   * Lists calls (one entry per run) in the order Temporal's visibility store gives them: open runs
   * first, the most recently started first, then closed runs, the most recently closed first.
   * Visibility lags writes by a moment.
   */
  async list(filters: ListFilters = {}): Promise<CallSummary[]> {
    const limit = filters.limit ?? 100;
    const query = buildListQuery(filters, this.#callWorkflowType);
    const calls: CallSummary[] = [];
    if (limit <= 0) return calls;
    for await (const execution of this.client.temporal.workflow.list({
      query,
      pageSize: Math.min(limit, 1000),
    })) {
      const attributes = execution.typedSearchAttributes;
      const read = (key: (typeof searchAttributeKeys)[keyof typeof searchAttributeKeys]) =>
        attributes.get(key) ?? undefined;
      const tier = read(searchAttributeKeys.toolTier);
      const effect = read(searchAttributeKeys.callEffect);
      const reason = read(searchAttributeKeys.reasonCode);
      const tenant = read(searchAttributeKeys.tenant);
      const principal = read(searchAttributeKeys.principal);
      calls.push({
        callId: execution.workflowId,
        runId: execution.runId,
        tool: read(searchAttributeKeys.toolName) ?? 'unknown',
        ...(tier ? { tier } : {}),
        status: read(searchAttributeKeys.callStatus) ?? 'unknown',
        ...(effect ? { effect } : {}),
        ...(reason ? { reason } : {}),
        ...(tenant ? { tenant } : {}),
        ...(principal ? { principal } : {}),
        startedAt: execution.startTime.toISOString(),
        ...(execution.closeTime ? { closedAt: execution.closeTime.toISOString() } : {}),
        workflowStatus: execution.status.name,
      });
      if (calls.length >= limit) break;
    }
    return calls;
  }

  /**
   * The call's latest record with its undo merged in, or undefined for an unknown ID. A specific
   * run (an earlier one a replay replaced) can be read with `runId`.
   */
  async get(callId: string, options: { runId?: string } = {}): Promise<CallRecord | undefined> {
    const { runId } = options;
    let description: WorkflowDescription;
    try {
      description = await this.client.temporal.workflow.getHandle(callId, runId).describe();
    } catch (error) {
      // The server answers "not found" for a run ID it does not know under this workflow ID, and
      // "invalid argument" for one that is not a run ID at all.
      const runNotFound =
        runId !== undefined && (error instanceof WorkflowNotFoundError || isInvalidArgument(error));
      if (!runNotFound) {
        if (error instanceof WorkflowNotFoundError) return undefined;
        throw error;
      }
      if (!(await this.#exists(callId))) return undefined;
      throw new UnknownRunError(
        `The call ${callId} has no run ${runId}: that run ID is unknown for this call. \`toolgate get ${callId}\` shows its latest run, whose replay names the run it replaced.`,
        callId,
        runId,
      );
    }
    const notACall = this.#notACall(callId, description.type);
    if (notACall) throw new NotACallError(notACall.message, callId, notACall.owner);
    // Reads an open run by query and a closed one by its result: waiting for the result of an
    // open run would wait for as long as it stays open.
    const record = await this.client.get(callId, runId !== undefined ? { runId } : {});
    if (!record) return undefined;
    return withUndo(this.client.temporal, record);
  }

  /**
   * Re-runs a failed, timed-out or cancelled call with the same tool, input and key, as a new run
   * of the same call ID. The new run's record names the run it replaces and who asked.
   */
  async replay(callId: string, options: ReplayOptions): Promise<ReplayOutcome> {
    const refuse = (refusal: string): ReplayOutcome => ({ replayed: false, callId, refusal });
    const check = await this.#checkReplay(callId, options);
    if (!check.eligible) return refuse(check.refusal);
    const { record } = check;
    const replay: ReplayInfo = {
      replacesRunId: record.runId,
      operator: options.operator,
      force: options.force === true,
      ...(options.reason?.trim() ? { reason: options.reason.trim() } : {}),
    };
    const started = await this.client.start(
      { tool: record.tool, input: record.input, ...(record.key !== undefined ? { key: record.key } : {}) },
      { tenant: record.tenant, principal: record.principal, principalKind: record.principalKind },
      { replay, callId },
    );
    if (started.disposition === 'refused' || started.disposition === 'existing') {
      return refuse(
        started.record?.message ?? 'Temporal did not start a new run; the call keeps its key (see get).',
      );
    }
    if (started.disposition === 'attached') {
      // Between the read above and the start, another run took the call ID: a replay of the same
      // run that got there first (the server hands it back for the same request ID), or a new call.
      return refuse(
        `Nothing was started: run ${started.runId} of this call began after run ${record.runId}, the one this replay read (another replay got there first, or a new call with its key). Read the call again (toolgate get ${callId}) before replaying it.`,
      );
    }
    return { replayed: true, callId, replacesRunId: record.runId, started };
  }

  /**
   * Whether `replay` would start a new run of the call, and from which record; it starts nothing.
   * `replay` runs these checks before it starts, and a bulk dry run runs them alone.
   */
  async #checkReplay(callId: string, options: ReplayOptions): Promise<ReplayCheck> {
    const refuse = (refusal: string): ReplayCheck => ({ eligible: false, refusal });
    if (!options.operator) return refuse('A replay needs an operator name (who is asking).');
    const found = await this.#describeCall(callId, (notACall) => notACall.message);
    if ('refusal' in found) return refuse(found.refusal);
    const { description } = found;
    if (description.status.name === 'RUNNING') {
      return refuse('The call is still open; wait for it to finish or cancel it first.');
    }
    const record = await this.client.result(callId);
    if (record.synthetic || record.input === null) {
      return refuse(
        'The call has no stored record (it was terminated or ended abnormally), so its input is unknown. Send a new call instead.',
      );
    }
    switch (record.status) {
      case 'succeeded':
        return refuse(
          'The call succeeded, so replaying it would run it twice. Send a new call with a new key to run it again' +
            (record.tier === 'reversible' ? ', or undo it.' : '.'),
        );
      case 'denied':
        return refuse(
          `The call was denied (${record.reason ?? 'denied'}) before anything ran. Correct the input and send it again as a new call; a denied call is not replayed.`,
        );
      case 'failed':
      case 'timeout':
      case 'cancelled':
        break;
      default:
        return refuse(
          `The call is ${record.status}; only failed, timed-out or cancelled calls can be replayed.`,
        );
    }
    const tier = record.tier ?? lookupTool(this.#catalog, record.tool)?.tier;
    const mayHaveActed = record.effect !== 'none' && !(tier !== undefined && tierIsRetrySafe(tier));
    if (mayHaveActed) {
      if (!options.force) {
        return refuse(
          `The call is ${tier ?? 'of an unknown tier'} and its effect is ${record.effect}: it may already have acted. Check the downstream system first; to run it again anyway, replay with --force --reason "…".`,
        );
      }
      if (!options.reason?.trim()) {
        return refuse('A forced replay needs a reason; it is recorded on the new run.');
      }
    }
    return { eligible: true, record };
  }

  /**
   * Why a workflow of this type is not a call, naming the call it belongs to when it is one's undo;
   * undefined for a call.
   */
  #notACall(id: string, type: string): { message: string; owner?: string } | undefined {
    if (type === this.#callWorkflowType) return undefined;
    if (type === this.#undoWorkflowType && id.endsWith(undoIdSuffix)) {
      const owner = id.slice(0, -undoIdSuffix.length);
      return {
        message: `${id} is not a call: it is the undo of the call ${owner}. \`toolgate get ${owner}\` shows that call and its undo.`,
        owner,
      };
    }
    return { message: `${id} is not a toolgate call (it is a ${type} workflow).` };
  }

  /**
   * The description of the call with this ID, or why an operation on it is refused: no such
   * workflow, or one that is not a call (`refuseNotACall` words that refusal).
   */
  async #describeCall(
    callId: string,
    refuseNotACall: (notACall: { message: string; owner?: string }) => string,
  ): Promise<{ description: WorkflowDescription } | { refusal: string }> {
    let description: WorkflowDescription;
    try {
      description = await this.client.temporal.workflow.getHandle(callId).describe();
    } catch (error) {
      if (error instanceof WorkflowNotFoundError) return { refusal: `There is no call ${callId}.` };
      throw error;
    }
    const notACall = this.#notACall(callId, description.type);
    return notACall ? { refusal: refuseNotACall(notACall) } : { description };
  }

  /** Whether any workflow has this ID. */
  async #exists(id: string): Promise<boolean> {
    try {
      await this.client.temporal.workflow.getHandle(id).describe();
      return true;
    } catch (error) {
      if (error instanceof WorkflowNotFoundError || isInvalidArgument(error)) return false;
      throw error;
    }
  }

  /**
   * Replays every call matching the filters (default: failed ones), `concurrency` at a time. Each
   * call ID is replayed at most once, from its latest run.
   */
  async replayMany(filters: ListFilters, options: BulkReplayOptions): Promise<BulkReplaySummary> {
    const listed = await this.list({ status: 'failed', ...filters, limit: filters.limit ?? 1000 });
    const seen = new Set<string>();
    const targets = listed.filter((call) => !seen.has(call.callId) && seen.add(call.callId));
    const items: BulkReplayItem[] = [];
    let succeeded = 0;
    let failed = 0;
    let refused = 0;
    const report = (item: BulkReplayItem) => {
      items.push(item);
      if (item.outcome === 'succeeded') succeeded += 1;
      else if (item.outcome === 'refused') refused += 1;
      else if (item.outcome !== 'planned' && item.outcome !== 'started') failed += 1;
      options.onProgress?.({ total: targets.length, done: items.length, succeeded, failed, refused, item });
    };
    const concurrency = Math.max(1, Math.min(options.concurrency ?? 4, 64));
    let next = 0;
    // A dry run checks each call as its replay would, and starts nothing: what it plans is what a
    // replay would start then, and what it refuses comes with the reason a replay would give.
    const planOne = async (call: CallSummary): Promise<BulkReplayItem> => {
      try {
        const check = await this.#checkReplay(call.callId, options);
        if (!check.eligible) {
          return { callId: call.callId, tool: call.tool, outcome: 'refused', message: check.refusal };
        }
        return {
          callId: call.callId,
          tool: call.tool,
          outcome: 'planned',
          replacesRunId: check.record.runId,
        };
      } catch (error) {
        return errorItem(call, error);
      }
    };
    const replayOne = async (call: CallSummary): Promise<BulkReplayItem> => {
      try {
        const outcome = await this.replay(call.callId, options);
        if (!outcome.replayed) {
          return { callId: call.callId, tool: call.tool, outcome: 'refused', message: outcome.refusal };
        }
        const runId = outcome.started.runId;
        if (options.wait === false) {
          return {
            callId: call.callId,
            tool: call.tool,
            outcome: 'started',
            replacesRunId: outcome.replacesRunId,
            ...(runId ? { runId } : {}),
          };
        }
        const record = await this.client.result(call.callId, runId);
        return {
          callId: call.callId,
          tool: call.tool,
          outcome: record.status,
          runId: record.runId,
          replacesRunId: outcome.replacesRunId,
          ...(record.status !== 'succeeded' && record.message ? { message: record.message } : {}),
        };
      } catch (error) {
        return errorItem(call, error);
      }
    };
    const workOne = options.dryRun ? planOne : replayOne;
    const lanes = Array.from({ length: Math.min(concurrency, targets.length) }, async () => {
      for (;;) {
        const call = targets[next];
        next += 1;
        if (!call) return;
        report(await workOne(call));
      }
    });
    await Promise.all(lanes);
    return { total: targets.length, succeeded, failed, refused, dryRun: options.dryRun === true, items };
  }

  /**
   * Runs the compensation of a succeeded reversible call, once: a second undo, even a concurrent
   * one, finds the first and does not run the compensation again.
   */
  async undo(callId: string, options: UndoOptions): Promise<UndoOutcome> {
    const refuse = (refusal: string, undo?: UndoInfo): UndoOutcome => ({
      undone: false,
      callId,
      refusal,
      ...(undo ? { undo } : {}),
    });
    if (!options.operator) return refuse('An undo needs an operator name (who is asking).');
    const found = await this.#describeCall(callId, (notACall) =>
      notACall.owner === undefined
        ? notACall.message
        : `${callId} is the undo of the call ${notACall.owner}, not a call, and an undo is not undone in turn. \`toolgate get ${notACall.owner}\` shows that call and its undo.`,
    );
    if ('refusal' in found) return refuse(found.refusal);
    const record = await this.client.get(callId).catch((error: unknown) => {
      if (error instanceof WorkflowNotFoundError) return undefined;
      throw error;
    });
    if (!record) return refuse(`There is no call ${callId}.`);
    if (record.status !== 'succeeded') {
      return refuse(`The call is ${record.status}; only a succeeded call can be undone.`);
    }
    const contract = lookupTool(this.#catalog, record.tool);
    if (contract?.tier !== 'reversible' || !contract.compensation) {
      return refuse(
        `${record.tool} is ${contract?.tier ?? 'not a known tool'}: only reversible tools have a compensation, so this call cannot be undone.`,
      );
    }
    const request: ToolUndoRequest = {
      callId,
      runId: record.runId,
      tool: record.tool,
      input: record.input,
      output: record.output ?? null,
      ...(record.key !== undefined ? { key: record.key } : {}),
      context: { tenant: record.tenant, principal: record.principal, principalKind: record.principalKind },
      operator: options.operator,
    };
    const undoId = `${callId}${undoIdSuffix}`;
    const startNonce = randomUUID();
    let alreadyDone = false;
    let runId: string | undefined;
    try {
      const handle = await this.client.temporal.workflow.start(this.#undoWorkflowType, {
        workflowId: undoId,
        taskQueue: this.client.taskQueue,
        args: [request],
        // A completed undo blocks every later one; a failed one may be tried again.
        workflowIdReusePolicy: 'ALLOW_DUPLICATE_FAILED_ONLY',
        // A concurrent second undo joins the running one instead of starting its own.
        workflowIdConflictPolicy: 'USE_EXISTING',
        // Who undoes which run, for a read of the call while its undo runs (see readUndo).
        memo: { startNonce, operator: options.operator, runId: record.runId },
      });
      runId = handle.firstExecutionRunId;
      // The server may have attached this request to an undo already running: its memo says whose.
      const description = await this.client.temporal.workflow.getHandle(undoId, runId).describe();
      const memo: Record<string, unknown> = description.memo ?? {};
      alreadyDone = memo['startNonce'] !== startNonce;
    } catch (error) {
      if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
      alreadyDone = true;
    }
    try {
      const result = (await this.client.temporal.workflow
        .getHandle(undoId, runId)
        .result()) as ToolUndoResult;
      if (result.runId !== record.runId) {
        return refuse(
          `An earlier run of this call (${result.runId}) was already undone; this run cannot be undone separately.`,
          undoInfoFromResult(result),
        );
      }
      return { undone: true, callId, alreadyDone, result, undo: undoInfoFromResult(result) };
    } catch (error) {
      const undo = undoInfoFromFailure(error, options.operator);
      if (undo) return refuse(undo.message ?? 'The undo failed.', undo);
      throw error;
    }
  }
}

/** A bulk replay's item for a call whose check or replay threw: the error, in words. */
function errorItem(call: CallSummary, error: unknown): BulkReplayItem {
  return {
    callId: call.callId,
    tool: call.tool,
    outcome: 'error',
    message: error instanceof Error ? error.message : String(error),
  };
}

export { NotACallError, UnknownRunError } from '../contracts/errors.ts';
export { buildListQuery, type ListFilters, parseSince } from './list-query.ts';
