/**
 * `toolgate/workflow`: the workflow-safe entry point. An agent written as a Temporal workflow runs
 * each tool call as a child `toolCall` workflow, with the same workflow ID scheme, gates, key and
 * record as `ToolgateClient.call()`.
 *
 * Dedup differs in one way. Child workflows have no `USE_EXISTING` conflict policy, so a child start
 * cannot attach to a running call with the same key the way a client start does; the server answers
 * `WorkflowExecutionAlreadyStarted` instead. This module turns that answer into the same outcomes
 * `call()` gives, with the help of one local activity, `lookupToolCall` (register
 * `createToolCallLookupActivities(client)` from `toolgate` on the agent's worker):
 *
 * - the duplicate is **closed** (Completed, so it kept its key): the local activity reads the stored
 *   record through the client, and the same arguments get that record back; nothing runs again;
 * - the duplicate is **running** (e.g. waiting for an approval): the agent polls it with the local
 *   activity, on a durable timer with backoff, until it closes, then returns its record. This is the
 *   "attach" of `call()`, built from polling: N duplicates still cause exactly one side effect;
 * - either way, a different fingerprint under the same key is refused with `KEY_MISMATCH`;
 * - a duplicate that closed as Failed in the meantime released its key, so the start is retried.
 *
 * With `duplicates: 'report'` no activity is needed: a duplicate comes back as disposition
 * `duplicate` with its call ID and no record, and the agent decides what to do.
 */
import { ApplicationFailure, WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import {
  ChildWorkflowFailure,
  ParentClosePolicy,
  patched,
  proxyLocalActivities,
  sleep,
  startChild,
  uuid4,
  workflowInfo,
} from '@temporalio/workflow';
import type { ToolCallLookupActivities } from '../src/contracts/activity-types.ts';
import { namePattern } from '../src/contracts/call-id.ts';
import { type CallContext, type CallRecord, releasedFailureType } from '../src/contracts/call-record.ts';
import type { ToolCatalog } from '../src/contracts/define-tool.ts';
import type { PayloadLimits } from '../src/contracts/limits.ts';
import {
  abnormalCallRecord,
  type CallRequest,
  describeGateProtocolProblem,
  type PrepareCallOptions,
  prepareCall,
  refusedCallRecord,
} from '../src/contracts/prepare-call.ts';
import { reasonCodes } from '../src/contracts/reason-codes.ts';

/** What a child call asks for; the same shape as the client's `CallRequest`. */
export type ChildCallRequest = CallRequest;

export interface ChildCallOptions {
  /** The contracts, for their key functions. Without it only explicit keys and `keyFor` are used. */
  readonly catalog?: ToolCatalog;
  /** Derives a key when the contract has none. Never given the model's tool_use id. */
  readonly keyFor?: (tool: string, input: unknown, context: CallContext) => string | undefined;
  /** Task queue of the toolCall workers. Default: the agent workflow's own task queue. */
  readonly taskQueue?: string;
  readonly workflowType?: string;
  readonly limits?: PayloadLimits;
  /** `wait` (default) treats duplicates like `call()` does; `report` hands them back unresolved. */
  readonly duplicates?: 'wait' | 'report';
  /** Polling of a running duplicate: first and longest interval. Default 1 s growing to 30 s. */
  readonly duplicatePollMs?: { readonly initial: number; readonly maximum: number };
  /**
   * What happens to a call when the agent workflow closes first. Default `ABANDON`: a tool call is
   * its own durable unit, and terminating it mid-run would leave an unknown outcome.
   */
  readonly parentClosePolicy?: ParentClosePolicy;
  /** The gate protocol the calls start with; as `ToolgateClientOptions.gateProtocol`. */
  readonly gateProtocol?: 2 | 3;
}

/**
 * How a child call resolved. As for `ToolgateClient.start()`, plus `duplicate`: the key's call was
 * running or closed and `duplicates: 'report'` was chosen, so there is no record.
 */
export type ChildCallDisposition = 'started' | 'attached' | 'existing' | 'refused' | 'duplicate';

/** A started (or joined) child call. */
export interface ChildToolCall {
  readonly callId: string;
  readonly disposition: ChildCallDisposition;
  /** Known already for `existing`, `attached` and `refused`. */
  readonly record?: CallRecord;
  /** Waits for the call to close. Rejects for `duplicate`, which has nothing to wait on. */
  result(): Promise<CallRecord>;
}

/** The record and how it was obtained. */
export interface ChildCallOutcome {
  readonly callId: string;
  readonly disposition: ChildCallDisposition;
  readonly record?: CallRecord;
}

/** Failure type raised when a `duplicate` child call is awaited. */
export const duplicateCallFailureType = 'ToolCallDuplicate';

const maximumStartAttempts = 3;

/** The patch under which `startToolCallChild` refuses an over-long tool name without a child. */
export const childRefusesLongToolNamePatch = 'child-refuses-long-tool-name';

/**
 * Starts a tool call as a child workflow and returns once it has started, or once its outcome is
 * known without running anything. Use it to start several calls of one turn in parallel, or to
 * report an approval-tier call as pending (its `callId`) while the agent goes on.
 */
export async function startToolCallChild(
  request: ChildCallRequest,
  context: CallContext,
  options: ChildCallOptions = {},
): Promise<ChildToolCall> {
  checkChildCallSetup(context, options);
  // The fingerprint is computed here, in workflow code: @noble/hashes runs in the sandbox.
  const prepared = prepareCall(request, context, childPrepareOptions(options));
  if (!prepared.ok) return known('', 'refused', prepared.record);
  const { callId: id, key, fingerprint, workflowRequest } = prepared;
  const mismatch = () =>
    known(
      '',
      'refused',
      refusedCallRecord({
        request,
        context,
        key,
        fingerprint,
        reason: 'KEY_MISMATCH',
        message: `${reasonCodes.KEY_MISMATCH.meaning} ${reasonCodes.KEY_MISMATCH.nextStep} (existing call: ${id})`,
        tier: prepared.tier,
      }),
    );

  for (let attempt = 1; ; attempt++) {
    try {
      const handle = await startChild(options.workflowType ?? 'toolCall', {
        workflowId: id,
        taskQueue: options.taskQueue ?? workflowInfo().taskQueue,
        args: [workflowRequest],
        // The same rule as the client: only a Completed run keeps its key.
        workflowIdReusePolicy: 'ALLOW_DUPLICATE_FAILED_ONLY',
        parentClosePolicy: options.parentClosePolicy ?? ParentClosePolicy.ABANDON,
        // The client reads the fingerprint from the memo to sign approvals and detect mismatches.
        memo: { fingerprint, startNonce: uuid4() },
        typedSearchAttributes: prepared.searchAttributes,
      });
      return { callId: id, disposition: 'started', result: () => childResult(handle.result(), id) };
    } catch (error) {
      if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
    }
    if ((options.duplicates ?? 'wait') === 'report') return reportedDuplicate(id);
    const joined = await joinDuplicate(id, fingerprint, options);
    if (joined === 'mismatch') return mismatch();
    if (joined !== 'released') return joined;
    // It closed and freed its key between our start and the lookup: start again.
    if (attempt >= maximumStartAttempts) {
      // A plain Error fails only this workflow task, which Temporal retries; an ApplicationFailure
      // would fail the whole agent workflow.
      throw new Error(
        `The call ${id} kept changing while it was started; the workflow task will be retried.`,
      );
    }
  }
}

function childPrepareOptions(options: ChildCallOptions): PrepareCallOptions {
  return {
    ...(options.catalog ? { catalog: options.catalog } : {}),
    ...(options.keyFor ? { keyFor: options.keyFor } : {}),
    ...(options.limits ? { limits: options.limits } : {}),
    unique: uuid4(),
    ...(options.gateProtocol !== undefined ? { protocol: options.gateProtocol } : {}),
    // As the client does, a name longer than any tool's starts nothing. Histories recorded without
    // this patch started a child for such a name, which the allowlist denied, and replay that way.
    // patched() is asked only for such names, so no other history gains a marker.
    refuseLongToolName: () => patched(childRefusesLongToolNamePatch),
  };
}

/**
 * The call already running or closed under this key: its record when the arguments are the same
 * (waiting for it if it runs), 'mismatch' for other arguments, or 'released' when it freed its key
 * meanwhile and the start can be tried again.
 */
async function joinDuplicate(
  id: string,
  fingerprint: string,
  options: ChildCallOptions,
): Promise<ChildToolCall | 'mismatch' | 'released'> {
  const lookup = await lookupActivities().lookupToolCall({ callId: id });
  if (lookup.state === 'released' || lookup.state === 'not_found') return 'released';
  if (lookup.fingerprint !== fingerprint) return 'mismatch';
  if (lookup.state === 'completed' && lookup.record) return known(id, 'existing', lookup.record);
  // Wait for the run that matched, not for whatever runs under this ID later: if it is rejected or
  // expires, its key is free, and a new run with other arguments may start under the same ID.
  const record = await waitForRunningCall(id, lookup.runId, options);
  return known(id, 'attached', record);
}

/** Refuses, as a non-retryable usage error, a child call the agent's own code set up wrongly. */
function checkChildCallSetup(context: CallContext, options: ChildCallOptions): void {
  if (!namePattern.test(context.tenant)) {
    throw ApplicationFailure.nonRetryable(
      'context.tenant must be 1-64 letters, digits, _ . or -, starting with a letter or digit.',
      'ToolgateUsageError',
    );
  }
  const protocolProblem = describeGateProtocolProblem(options.gateProtocol);
  if (protocolProblem) throw ApplicationFailure.nonRetryable(protocolProblem, 'ToolgateUsageError');
}

/** A duplicate reported as such (`duplicates: 'report'`): its result is for the client to look up. */
function reportedDuplicate(id: string): ChildToolCall {
  return {
    callId: id,
    disposition: 'duplicate',
    result: () =>
      Promise.reject(
        ApplicationFailure.nonRetryable(
          `The call ${id} already exists; look it up with the client.`,
          duplicateCallFailureType,
        ),
      ),
  };
}

/** Runs a tool call as a child workflow and waits for its record. The workflow twin of `call()`. */
export async function callToolAsChild(
  request: ChildCallRequest,
  context: CallContext,
  options: ChildCallOptions = {},
): Promise<ChildCallOutcome> {
  const started = await startToolCallChild(request, context, options);
  if (started.disposition === 'duplicate') return { callId: started.callId, disposition: 'duplicate' };
  const record = started.record ?? (await started.result());
  return { callId: started.callId, disposition: started.disposition, record };
}

function known(callId: string, disposition: ChildCallDisposition, record: CallRecord): ChildToolCall {
  return { callId, disposition, record, result: () => Promise.resolve(record) };
}

function lookupActivities() {
  return proxyLocalActivities<ToolCallLookupActivities>({
    startToCloseTimeout: '15 seconds',
    retry: { maximumAttempts: 5, initialInterval: '200 milliseconds' },
  });
}

/**
 * Polls the attached run until it closes. `runId` is undefined only when the lookup that matched
 * was recorded before lookups named their run: such a history keeps its recorded behaviour (the
 * latest run), so it replays unchanged.
 */
async function waitForRunningCall(
  callId: string,
  runId: string | undefined,
  options: ChildCallOptions,
): Promise<CallRecord> {
  const initial = options.duplicatePollMs?.initial ?? 1_000;
  const maximum = options.duplicatePollMs?.maximum ?? 30_000;
  let intervalMs = initial;
  for (;;) {
    await sleep(intervalMs);
    const lookup = await lookupActivities().lookupToolCall(
      runId === undefined ? { callId } : { callId, runId },
    );
    if (lookup.record && lookup.state !== 'running') return lookup.record;
    // Back off, so a call that waits days for approval adds a modest number of events to history.
    intervalMs = Math.min(maximum, Math.round(intervalMs * 1.5));
  }
}

async function childResult(result: Promise<unknown>, callId: string): Promise<CallRecord> {
  try {
    return (await result) as CallRecord;
  } catch (error) {
    const cause = error instanceof ChildWorkflowFailure ? error.cause : undefined;
    if (cause instanceof ApplicationFailure && cause.type === releasedFailureType && cause.details?.[0]) {
      return cause.details[0] as CallRecord;
    }
    if (error instanceof ChildWorkflowFailure) {
      // Terminated or timed out by the server: nobody can say whether it acted.
      return abnormalCallRecord(
        callId,
        'failed',
        'The call ended abnormally; the action may or may not have happened.',
      );
    }
    throw error;
  }
}
