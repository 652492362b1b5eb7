/**
 * The `toolCall` workflow: one tool call through the five gates, in order (docs/design.md, "Shape"):
 * idempotency, allowlist, validation, approval, execution. Each gate is a function of the call's
 * state (`call-state.ts`) and the workflow's settings; a gate that settles the outcome closes the
 * call, which unwinds the rest.
 */
import {
  ActivityCancellationType,
  ApplicationFailure,
  allHandlersFinished,
  CancellationScope,
  condition,
  isCancellation,
  log,
  patched,
  proxyActivities,
  proxyLocalActivities,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import {
  type AdmitDecision,
  type RunToolRequest,
  type RunToolResult,
  ToolFailureType,
  type ToolgateActivities,
} from '../src/contracts/activity-types.ts';
import { type CallRecord, keyIsReleased, releasedFailureType } from '../src/contracts/call-record.ts';
import { checkArguments, previewOf } from '../src/contracts/check-arguments.ts';
import { lookupTool, type ToolCatalog, type ToolContract } from '../src/contracts/define-tool.ts';
import { callFingerprint } from '../src/contracts/fingerprint.ts';
import {
  checkInputLimits,
  defaultDeadlineGraceMs,
  defaultLivenessMs,
  defaultPayloadLimits,
  livenessTimeoutFor,
  type PayloadLimits,
} from '../src/contracts/limits.ts';
import { describeRequestProblem, type ToolCallRequest } from '../src/contracts/prepare-call.ts';
import { reasonCodes } from '../src/contracts/reason-codes.ts';
import { searchAttributeKeys } from '../src/contracts/search-attributes.ts';
import { tierRequiresKey } from '../src/contracts/tier.ts';
import { awaitDecision } from './approval-wait.ts';
import { countClosedCall, observeApprovalWait } from './call-metrics.ts';
import {
  answer,
  CallClosed,
  type CallState,
  close,
  deny,
  describeClaim,
  type GateSettings,
  now,
  openCall,
  recordRefusal,
  transition,
} from './call-state.ts';
import { type GateName, gatePassed, gateStopped, traceClosedCall } from './call-trace.ts';
import { endFailedExecution } from './execution-failure.ts';

export type { ToolCallRequest };
export { keyIsReleased };

export interface ToolCallWorkflowOptions {
  readonly limits?: PayloadLimits;
  /**
   * The liveness window: a tool whose attempt may run longer than this gets it as its heartbeat
   * timeout, so a dead worker is noticed sooner than the tool's deadline; a shorter tool's attempt
   * ends at its start-to-close (its deadline plus the grace). Default 15 s.
   */
  readonly heartbeatTimeoutMs?: number;
  /** Extra time the server's start-to-close timer allows past the executor's own deadline. */
  readonly deadlineGraceMs?: number;
}

/**
 * The patch under which an approval-tier call waits with `awaitDecisionUntilExpiry`: decisions still
 * queued when it expires are checked, later ones are not, and one signed after the expiry never
 * counts. Its marker is set in the first workflow task of approval-tier calls, once the tool is
 * looked up.
 */
export const decisionsQueuedAtExpiryPatch = 'decisions-queued-at-expiry';

/**
 * The patch under which a keyless call of a tier that needs a key is checked by the allowlist and
 * the arguments before the key rule (one admission local activity that takes no quota slot), so a
 * tool the caller may not use is NOT_ALLOWED and bad arguments are INVALID_INPUT, whatever the key.
 * Asked only for such calls, in their first activation.
 */
export const keyRuleAfterGatesPatch = 'key-rule-after-gates';

/**
 * The patch under which only a decision that counts uses up its nonce, so a refused one (unsigned,
 * badly signed, from a non-approver) cannot take the nonce a valid decision then carries. Histories
 * without it replay with every decision using its nonce. Set in the first workflow task of
 * approval-tier calls.
 */
export const nonceUsedWhenCountedPatch = 'nonce-used-when-counted';

const cancelledBeforeRunMessage = 'The call was cancelled before its tool ran; nothing ran.';

/**
 * Builds the `toolCall` workflow for a catalog of contracts. Export the result from a workflows
 * module under the name `toolCall`:
 *
 * ```ts
 * export const toolCall = createToolCallWorkflow(myCatalog);
 * ```
 */
export function createToolCallWorkflow(catalog: ToolCatalog, options: ToolCallWorkflowOptions = {}) {
  const settings: GateSettings = {
    catalog,
    limits: options.limits ?? defaultPayloadLimits,
    heartbeatTimeoutMs: options.heartbeatTimeoutMs ?? defaultLivenessMs,
    deadlineGraceMs: options.deadlineGraceMs ?? defaultDeadlineGraceMs,
    policy: proxyLocalActivities<ToolgateActivities>({
      startToCloseTimeout: '10 seconds',
      retry: { maximumAttempts: 3, initialInterval: '50 milliseconds' },
    }),
  };

  return async function toolCall(request: ToolCallRequest): Promise<CallRecord> {
    const call = openCall(request);
    // The gate in progress, for the trace: its events are no commands (workflows/call-trace.ts).
    let gate: GateName = 'idempotency';
    try {
      checkIdempotency(call, settings);
      gatePassed(call, gate);
      gate = 'allowlist';
      await checkAllowlist(call, settings);
      gatePassed(call, gate);
      gate = 'validation';
      await validateArguments(call, settings);
      gatePassed(call, gate);
      gate = 'approval';
      await awaitApproval(call, settings);
      gatePassed(call, gate);
      gate = 'execution';
      // Closes the call whichever way the tool ends: its decision is the call's status.
      await execute(call, settings);
    } catch (error) {
      settleInterruption(call, error);
      gateStopped(call, gate);
    } finally {
      await releaseSlot(call, settings);
    }
    // Decisions sent by Update get their answer before the run closes (once the call is closed,
    // each handler answers at once). Not cancellable: a cancelled call still answers them. Only
    // when one waits, so histories without Updates replay unchanged.
    if (!allHandlersFinished()) await CancellationScope.nonCancellable(() => condition(allHandlersFinished));
    return closeRun(call);
  };
}

/**
 * Gate 1: idempotency. The workflow ID already scopes the key; here the fingerprint is checked and
 * the tier's key rule applied. Shape and size come first, so a hostile payload (from anyone who can
 * start workflows directly) never reaches the hash or the parser.
 */
function checkIdempotency(call: CallState, settings: GateSettings): void {
  const { request, record } = call;
  const malformed = describeRequestProblem(request);
  if (malformed) {
    deny(
      call,
      'INVALID_INPUT',
      typeof request?.tool === 'number' || typeof request?.tool === 'object'
        ? 'The tool name must be a string.'
        : `The call request is malformed (${malformed}). Start calls with ToolgateClient or callToolAsChild.`,
    );
  }
  const breach = checkInputLimits(request.input, settings.limits);
  if (breach) deny(call, 'PAYLOAD_TOO_LARGE', breach.message);
  if (callFingerprint(request.tool, request.input) !== request.fingerprint) {
    deny(
      call,
      'INVALID_INPUT',
      'The call fingerprint does not match its arguments; the client must recompute it.',
    );
  }
  const contract = lookupTool(settings.catalog, request.tool);
  call.contract = contract;
  if (!contract) return;
  if (contract.tier === 'approval') {
    // Asked here, in the call's first activation, and not where they are used: there, right after
    // a local activity, a replay can see a patch marker one workflow task late, while a first
    // activation always sees its own.
    call.checkQueuedAtExpiry = patched(decisionsQueuedAtExpiryPatch);
    call.countedNoncesOnly = patched(nonceUsedWhenCountedPatch);
  }
  record.tier = contract.tier;
  // The tier comes from the contract here, never from the caller. On the lean path a client with
  // the catalog indexed it at start, so it is written only when missing or wrong.
  if (
    !call.lean ||
    workflowInfo().typedSearchAttributes.get(searchAttributeKeys.toolTier) !== contract.tier
  ) {
    upsertSearchAttributes([{ key: searchAttributeKeys.toolTier, value: contract.tier }]);
  }
  if (tierRequiresKey(contract.tier) && request.key === undefined) {
    // Since this patch the allowlist and the arguments answer first (gates 2 and 3): a model is
    // never told to add a key to a call that could not run anyway. Calls started before it were
    // denied here.
    if (patched(keyRuleAfterGatesPatch)) {
      call.keyMissing = true;
      return;
    }
    // A contract that derives its key from the arguments has none to give for arguments it cannot
    // take (a client with the catalog then sends no key): what the caller can fix is the
    // arguments, so that is what it is told.
    const verdict = contract.idempotencyKey ? checkArguments(contract, request.input) : undefined;
    if (verdict && !verdict.ok) deny(call, 'INVALID_INPUT', verdict.message);
    denyKeyRequired(call, contract);
  }
}

function denyKeyRequired(call: CallState, contract: ToolContract): never {
  return deny(
    call,
    'KEY_REQUIRED',
    `${contract.name} is ${contract.tier}: ${reasonCodes.KEY_REQUIRED.nextStep}`,
  );
}

/**
 * Gate 2: the allowlist, deny by default; an unknown name never reaches the policy. A readonly call
 * on the lean path is admitted by the activity that runs it, first thing and before the tool: the
 * same allowlist and quotas, recorded in history with the activity's outcome, without a separate
 * local activity. Other tiers are admitted here, before anything can wait for a human or hold a
 * slot across retries.
 */
async function checkAllowlist(call: CallState, settings: GateSettings): Promise<void> {
  const tool = call.contract;
  if (!tool) {
    deny(
      call,
      'NOT_ALLOWED',
      `There is no tool named ${JSON.stringify(call.request.tool.slice(0, 64))}. ${reasonCodes.NOT_ALLOWED.nextStep}`,
    );
  }
  call.admitInExecution = call.lean && tool.tier === 'readonly';
  if (!call.admitInExecution) await admit(call, settings);
}

/** Asks the policy to admit the call (allowlist, quotas; from protocol 3 the arguments too). */
async function admit(call: CallState, settings: GateSettings): Promise<AdmitDecision> {
  const tool = call.contract!;
  call.admitting = true;
  const decision = await settings.policy.admitCall({
    callId: call.record.callId,
    tool: tool.name,
    tier: tool.tier,
    context: call.request.context,
    // Protocol 3: the arguments are checked with the admission, and the verdict recorded.
    ...(call.recorded ? { check: true, input: call.request.input } : {}),
    // A call without the key its tier needs ends KEY_REQUIRED: it takes no quota slot.
    ...(call.keyMissing ? { allowlistOnly: true } : {}),
  });
  call.admission = decision;
  call.admitting = false;
  if (!decision.allowed) {
    if (decision.retryAfterSeconds !== undefined) call.record.retryAfterSeconds = decision.retryAfterSeconds;
    deny(call, decision.reason ?? 'NOT_ALLOWED', decision.message);
  }
  return decision;
}

/**
 * Gate 3: validation (the size was checked in gate 1). From protocol 3 the verdict is decided
 * outside the workflow and recorded: by the execution activity for a readonly call (it comes back
 * as a denial from `execute`), or with the admission. A tightened schema then cannot change the
 * branch a replay takes. Older protocols, and a worker whose activities know no contract for the
 * tool (`validated` absent), validate here.
 */
async function validateArguments(call: CallState, settings: GateSettings): Promise<void> {
  const tool = call.contract!;
  call.checkedByExecutor = call.recorded && (call.admitInExecution || call.admission?.validated === true);
  if (call.checkedByExecutor) return requireKey(call);
  // A schema that throws denies the call instead of failing the workflow task, which would hold the
  // call open until a new worker version shipped.
  const verdict = checkArguments(tool, call.request.input);
  if (!verdict.ok) {
    if (verdict.schemaError) {
      log.error('the tool schema threw while validating arguments', {
        tool: tool.name,
        error: verdict.schemaError,
      });
    }
    // The allowlist answers first: a tool this caller may not use is NOT_ALLOWED, whatever its arguments.
    if (!call.admission) await admit(call, settings);
    deny(call, 'INVALID_INPUT', verdict.message);
  }
  call.input = verdict.data;
  requireKey(call);
}

/** The key rule of gate 1, applied once the allowlist and the arguments have passed. */
function requireKey(call: CallState): void {
  if (call.keyMissing) denyKeyRequired(call, call.contract!);
}

/** Gate 4: an approval-tier call waits for a human decision that counts, or expires. */
async function awaitApproval(call: CallState, settings: GateSettings): Promise<void> {
  const tool = call.contract!;
  if (tool.tier !== 'approval' || !tool.approval) return;
  const { record, admission } = call;
  // The contract's condition, decided with the recorded validation: these arguments need no human.
  if (call.checkedByExecutor && admission?.approvalRequired === false) {
    record.approvalNotNeeded = true;
    return;
  }
  const approvers = admission?.approvers ?? tool.approval.approvers;
  // The preview of arguments checked with the admission was recorded with it.
  const preview = call.checkedByExecutor ? admission?.preview : previewOf(tool, call.input);
  const expiresAtMs = Date.now() + (admission?.approvalExpiresAfterMs ?? tool.approval.expiresAfterMs);
  // A quorum is honoured only as the admission recorded it, so a replay waits for what the call did.
  const quorum = call.checkedByExecutor ? (admission?.approvalQuorum ?? 1) : 1;
  record.approval = {
    approvers: [...approvers],
    expiresAt: new Date(expiresAtMs).toISOString(),
    ...(preview !== undefined ? { preview } : {}),
    ...(quorum > 1 ? { quorum, approvals: [] } : {}),
  };
  transition(call, 'awaiting_approval');
  const waitStartedMs = Date.now();
  let outcome = 'closed';
  let claims: Awaited<ReturnType<typeof awaitDecision>>;
  try {
    claims = await awaitDecision(call, settings, approvers, expiresAtMs);
    outcome = claims.decision;
  } finally {
    observeApprovalWait(tool.name, outcome, Math.max(0, Date.now() - waitStartedMs) / 1000);
  }
  call.decided = true;
  // Decisions queued behind the one that counted (sent while it was being checked) are refused as
  // the signal handler refuses later ones, and recorded.
  for (const payload of call.pendingDecisions.splice(0)) {
    const reason = 'the call was already decided';
    recordRefusal(call, { at: now(), ...describeClaim(payload), reason });
    answer(call, payload, { accepted: false, reason });
  }
  record.approval.decidedBy = claims.approver;
  record.approval.decision = claims.decision;
  record.approval.decidedAt = now();
  if (claims.comment !== undefined) record.approval.comment = claims.comment;
  if (claims.decision === 'reject') {
    deny(
      call,
      'APPROVAL_REJECTED',
      `Rejected by ${claims.approver}. ${reasonCodes.APPROVAL_REJECTED.nextStep}`,
    );
  }
}

/** Gate 5: the tool runs as an activity, with its deadline, heartbeats and AbortSignal. */
async function execute(call: CallState, settings: GateSettings): Promise<void> {
  const tool = call.contract!;
  // A cancel that is already in (it came with the start) stops the call here, before the tool:
  // without a local activity in between, nothing else on this path would notice it first.
  if (call.lean && CancellationScope.current().consideredCancelled) {
    deny(call, 'CANCELLED', cancelledBeforeRunMessage);
  }
  // A readonly call's "running" lasts as long as a read; visibility tracks it where a side effect
  // is at stake (the record keeps every transition either way).
  transition(call, 'running', { index: !call.admitInExecution });
  const run = executor(tool, settings);
  const request = runRequestOf(call);
  let result: RunToolResult;
  try {
    result = await (call.checkedByExecutor ? run.checkAndRunTool(request) : run.runTool(request));
  } catch (error) {
    endFailedExecution(call, error, call.checkedByExecutor);
  }
  call.record.attempts = result.attempt;
  call.record.output = result.output;
  close(call, 'succeeded', undefined, tool.tier === 'readonly' ? 'none' : 'applied');
}

/** What the execution activity gets: the checked input, the tier's key, and its deadline. */
function runRequestOf(call: CallState): RunToolRequest {
  const tool = call.contract!;
  const { request } = call;
  return {
    ...(call.admitInExecution ? { admit: true } : {}),
    ...(call.checkedByExecutor && !call.admitInExecution ? { validatedAtAdmission: true } : {}),
    callId: call.record.callId,
    tool: tool.name,
    input: call.input,
    ...(request.key !== undefined ? { key: request.key } : {}),
    tier: tool.tier,
    timeoutMs: tool.timeoutMs,
    context: request.context,
  };
}

/** The tool's activity: a local one on the fast path, else a regular one that heartbeats. */
function executor(tool: ToolContract, settings: GateSettings): ToolgateActivities {
  const retry = {
    maximumAttempts: tool.retry.maximumAttempts,
    initialInterval: tool.retry.initialIntervalMs,
    backoffCoefficient: tool.retry.backoffCoefficient,
    maximumInterval: tool.retry.maximumIntervalMs,
    nonRetryableErrorTypes: [
      ToolFailureType.denied,
      ToolFailureType.outputTooLarge,
      ToolFailureType.missingImplementation,
    ],
  };
  if (tool.fastPath) {
    return proxyLocalActivities<ToolgateActivities>({
      startToCloseTimeout: tool.timeoutMs + settings.deadlineGraceMs,
      retry,
      cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    });
  }
  const startToCloseMs = tool.timeoutMs + settings.deadlineGraceMs;
  const heartbeatTimeout = livenessTimeoutFor(startToCloseMs, settings.heartbeatTimeoutMs);
  return proxyActivities<ToolgateActivities>({
    startToCloseTimeout: startToCloseMs,
    ...(heartbeatTimeout === undefined ? {} : { heartbeatTimeout }),
    retry,
    // Without this the workflow would report "cancelled" while the tool may still be running.
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
  });
}

/**
 * What the gates threw: a settled outcome, or a cancel before the tool ran (during admission, or
 * while a decision is being verified), which means nothing ran: a denial, not an unknown outcome.
 */
function settleInterruption(call: CallState, error: unknown): void {
  if (error instanceof CallClosed) return;
  if (!isCancellation(error) || call.record.status === 'running') throw error;
  try {
    deny(call, 'CANCELLED', cancelledBeforeRunMessage);
  } catch (closed) {
    if (!(closed instanceof CallClosed)) throw closed;
  }
}

/**
 * Hands back a concurrency slot, also when admission was interrupted after the gate took it.
 * Release is idempotent, and its failure must never change the call's outcome.
 */
async function releaseSlot(call: CallState, settings: GateSettings): Promise<void> {
  const { contract } = call;
  if (!contract || !(call.admission?.holdsSlot || call.admitting)) return;
  try {
    await CancellationScope.nonCancellable(() =>
      settings.policy.releaseCall({
        callId: call.record.callId,
        tool: contract.name,
        context: call.request.context,
      }),
    );
  } catch (error) {
    log.warn('could not release the concurrency slot', { callId: call.record.callId, error: String(error) });
  }
}

/**
 * Ends the run with the record: completed, keeping the key, or failed with the record as detail,
 * which releases the key under ALLOW_DUPLICATE_FAILED_ONLY (docs/design.md, "Idempotency").
 */
function closeRun(call: CallState): CallRecord {
  const { record } = call;
  countClosedCall(call);
  traceClosedCall(call);
  log.info('tool call closed', {
    callId: record.callId,
    status: record.status,
    reason: record.reason,
    effect: record.effect,
  });
  if (keyIsReleased(record, call.contract?.tier)) {
    throw ApplicationFailure.create({
      type: releasedFailureType,
      message: record.message ?? record.status,
      nonRetryable: true,
      details: [record],
    });
  }
  return record;
}
