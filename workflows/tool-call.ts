import type { SearchAttributeUpdatePair } from '@temporalio/common';
import {
  ActivityCancellationType,
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  CancelledFailure,
  condition,
  isCancellation,
  log,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  sleep,
  TimeoutFailure,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type {
  AdmitDecision,
  RunToolRequest,
  RunToolResult,
  ToolFailureDetails,
  ToolgateActivities,
} from '../src/contracts/activity-types.ts';
import { ToolFailureType } from '../src/contracts/activity-types.ts';
import type { DecisionClaims } from '../src/contracts/approval.ts';
import {
  type CallEffect,
  type CallRecord,
  type CallStatus,
  releasedFailureType,
} from '../src/contracts/call-record.ts';
import { checkArguments, previewOf } from '../src/contracts/check-arguments.ts';
import { lookupTool, type ToolCatalog, type ToolContract } from '../src/contracts/define-tool.ts';
import { callFingerprint } from '../src/contracts/fingerprint.ts';
import { checkInputLimits, defaultPayloadLimits, type PayloadLimits } from '../src/contracts/limits.ts';
import {
  leanGatesProtocol,
  recordedValidationProtocol,
  type ToolCallRequest,
} from '../src/contracts/prepare-call.ts';
import { type ReasonCode, reasonCodes } from '../src/contracts/reason-codes.ts';
import { searchAttributeKeys } from '../src/contracts/search-attributes.ts';
import { type SideEffectTier, tierIsRetrySafe, tierRequiresKey } from '../src/contracts/tier.ts';
import { decisionSignal, recordQuery } from './messages.ts';

export type { ToolCallRequest };

export interface ToolCallWorkflowOptions {
  readonly limits?: PayloadLimits;
  /** How often an executing tool must heartbeat before the server presumes its worker dead. */
  readonly heartbeatTimeoutMs?: number;
  /** Extra time the server's start-to-close timer allows past the executor's own deadline. */
  readonly deadlineGraceMs?: number;
}

/**
 * Unwinds the gates once a call's outcome is settled; caught in `toolCall` and never seen outside.
 * Not an Error: it needs no stack, and capturing one cost about 40 µs per call in the profile.
 */
class CallClosed {}

/**
 * Builds the `toolCall` workflow for a catalog of contracts. Export the result from a workflows
 * module under the name `toolCall`:
 *
 * ```ts
 * export const toolCall = createToolCallWorkflow(myCatalog);
 * ```
 */
export function createToolCallWorkflow(catalog: ToolCatalog, options: ToolCallWorkflowOptions = {}) {
  const limits = options.limits ?? defaultPayloadLimits;
  const heartbeatTimeoutMs = options.heartbeatTimeoutMs ?? 2_000;
  const deadlineGraceMs = options.deadlineGraceMs ?? 1_000;

  // Policy checks are local activities: their results are markers in history, so a replay takes the
  // same branch even if the allowlist or the approvers changed since.
  const policy = proxyLocalActivities<ToolgateActivities>({
    startToCloseTimeout: '10 seconds',
    retry: { maximumAttempts: 3, initialInterval: '50 milliseconds' },
  });

  return async function toolCall(request: ToolCallRequest): Promise<CallRecord> {
    const info = workflowInfo();
    const now = () => new Date().toISOString();
    const record: CallRecord = {
      callId: info.workflowId,
      runId: info.runId,
      tool: request.tool,
      tenant: request.context.tenant,
      principal: request.context.principal,
      principalKind: request.context.principalKind,
      ...(request.key !== undefined ? { key: request.key } : {}),
      fingerprint: request.fingerprint,
      input: request.input,
      status: 'pending',
      effect: 'none',
      attempts: 0,
      transitions: [{ status: 'pending', at: now() }],
      refusedDecisions: [],
      ...(request.replay ? { replay: request.replay } : {}),
    };
    setHandler(recordQuery, () => record);
    // The gate protocol is pinned by the start event (see `leanGatesProtocol` and
    // `recordedValidationProtocol`): histories from earlier protocols replay down the path they took.
    const protocol = request.protocol ?? 1;
    const lean = protocol >= leanGatesProtocol;
    const recorded = protocol >= recordedValidationProtocol;

    const pendingDecisions: unknown[] = [];
    let decided = false;
    setHandler(decisionSignal, (payload: unknown) => {
      // A flood of signals must not grow the record past Temporal's payload limit: the queue is
      // bounded and refusals past a cap are only counted.
      if (pendingDecisions.length >= maxPendingDecisions) {
        record.refusedDecisionsDropped = (record.refusedDecisionsDropped ?? 0) + 1;
        record.decisionsDroppedUnread = (record.decisionsDroppedUnread ?? 0) + 1;
        const { nonce } = describeClaim(payload);
        if (nonce !== undefined) {
          record.droppedUnreadNonces = [...(record.droppedUnreadNonces ?? []), nonce].slice(
            -maxDroppedNonces,
          );
        }
        return;
      }
      if (decided) {
        // A decision after the first accepted one never counts; it is recorded and nothing else.
        recordRefusal({
          at: now(),
          ...describeClaim(payload),
          reason: 'the call was already decided',
        });
        return;
      }
      pendingDecisions.push(payload);
    });

    function recordRefusal(refusal: CallRecord['refusedDecisions'][number]): void {
      if (record.refusedDecisions.length >= maxRecordedRefusals) {
        record.refusedDecisionsDropped = (record.refusedDecisionsDropped ?? 0) + 1;
      } else {
        record.refusedDecisions.push(refusal);
      }
    }

    /** `index: false` keeps the status out of visibility (the record still has the transition). */
    const transition = (status: CallStatus, options: { index?: boolean } = {}) => {
      record.status = status;
      record.transitions.push({ status, at: now() });
      if (options.index === false) return;
      const updates: SearchAttributeUpdatePair[] = [
        { key: searchAttributeKeys.callStatus, value: status },
        { key: searchAttributeKeys.callEffect, value: record.effect },
      ];
      if (record.reason) updates.push({ key: searchAttributeKeys.reasonCode, value: record.reason });
      upsertSearchAttributes(updates);
    };

    const close = (
      status: CallStatus,
      reason: ReasonCode | undefined,
      effect: CallEffect,
      message?: string,
    ): never => {
      record.effect = effect;
      if (reason) record.reason = reason;
      record.message = message ?? (reason ? reasonCodes[reason].meaning : undefined);
      transition(status);
      throw new CallClosed();
    };
    const deny = (reason: ReasonCode, message?: string): never => close('denied', reason, 'none', message);

    let contract: ToolContract | undefined;
    /** Whether the approval wait is `awaitDecisionUntilExpiry` (see `decisionsQueuedAtExpiryPatch`). */
    let checkQueuedAtExpiry = false;
    let admission: AdmitDecision | undefined;
    let admitting = false;
    try {
      // Gate 1: idempotency. The workflow ID already scopes the key; here the fingerprint is
      // checked and the tier's key rule applied. Shape and size come first, so a hostile payload
      // (from anyone who can start workflows directly) never reaches the hash or the parser.
      if (typeof request.tool !== 'string') deny('INVALID_INPUT', 'The tool name must be a string.');
      const breach = checkInputLimits(request.input, limits);
      if (breach) deny('PAYLOAD_TOO_LARGE', breach.message);
      if (callFingerprint(request.tool, request.input) !== request.fingerprint) {
        deny(
          'INVALID_INPUT',
          'The call fingerprint does not match its arguments; the client must recompute it.',
        );
      }
      contract = lookupTool(catalog, request.tool);
      if (contract?.tier === 'approval') {
        // Asked here, in the call's first activation, and not where it is used: there, right after
        // a local activity, a replay can see the patch marker one workflow task late (a recorded
        // history failed to replay that way), while a first activation always sees its own.
        checkQueuedAtExpiry = patched(decisionsQueuedAtExpiryPatch);
      }
      if (contract) {
        record.tier = contract.tier;
        // The tier comes from the contract here, never from the caller. On the lean path a client
        // with the catalog indexed it at start, so it is written only when missing or wrong.
        if (!lean || info.typedSearchAttributes.get(searchAttributeKeys.toolTier) !== contract.tier) {
          upsertSearchAttributes([{ key: searchAttributeKeys.toolTier, value: contract.tier }]);
        }
        if (tierRequiresKey(contract.tier) && request.key === undefined) {
          // A contract that derives its key from the arguments has none to give for arguments it
          // cannot take (a client with the catalog then sends no key): what the caller can fix is
          // the arguments, so that is what it is told. Same point, same commands as KEY_REQUIRED;
          // the call closes in its first workflow task either way.
          const verdict = contract.idempotencyKey ? checkArguments(contract, request.input) : undefined;
          if (verdict && !verdict.ok) deny('INVALID_INPUT', verdict.message);
          deny('KEY_REQUIRED', `${contract.name} is ${contract.tier}: ${reasonCodes.KEY_REQUIRED.nextStep}`);
        }
      }

      // Gate 2: allowlist, deny by default. An unknown name never reaches the policy.
      if (!contract) {
        deny(
          'NOT_ALLOWED',
          `There is no tool named ${JSON.stringify(request.tool.slice(0, 64))}. ${reasonCodes.NOT_ALLOWED.nextStep}`,
        );
      }
      const tool = contract as ToolContract;
      const admit = async (): Promise<AdmitDecision> => {
        admitting = true;
        const decision = await policy.admitCall({
          callId: record.callId,
          tool: tool.name,
          tier: tool.tier,
          context: request.context,
          // Protocol 3: the arguments are checked with the admission, and the verdict recorded.
          ...(recorded ? { check: true, input: request.input } : {}),
        });
        admission = decision;
        admitting = false;
        if (!decision.allowed) {
          if (decision.retryAfterSeconds !== undefined) record.retryAfterSeconds = decision.retryAfterSeconds;
          deny(decision.reason ?? 'NOT_ALLOWED', decision.message);
        }
        return decision;
      };
      // A readonly call on the lean path is admitted by the activity that runs it, first thing and
      // before the tool: the same allowlist and quotas, recorded in history with the activity's
      // outcome, without a separate local activity. Other tiers are admitted here, before anything
      // can wait for a human or hold a slot across retries.
      const admitInExecution = lean && tool.tier === 'readonly';
      if (!admitInExecution) await admit();

      // Gate 3: validation (the size was checked in gate 1). From protocol 3 the verdict is decided
      // outside the workflow and recorded: by the execution activity for a readonly call (it comes
      // back as a denial from `execute`), or with the admission above. A tightened schema then
      // cannot change the branch a replay takes. Older protocols, and a worker whose activities
      // know no contract for the tool (`validated` absent), validate here.
      const checkedByExecutor = recorded && (admitInExecution || admission?.validated === true);
      let input: unknown = request.input;
      if (!checkedByExecutor) {
        // A schema that throws denies the call instead of failing the workflow task, which would
        // hold the call open until a new worker version shipped.
        const verdict = checkArguments(tool, request.input);
        if (!verdict.ok) {
          if (verdict.schemaError) {
            log.error('the tool schema threw while validating arguments', {
              tool: tool.name,
              error: verdict.schemaError,
            });
          }
          // The allowlist answers first: a tool this caller may not use is NOT_ALLOWED, whatever its arguments.
          if (!admission) await admit();
          deny('INVALID_INPUT', verdict.message);
        }
        input = (verdict as { data: unknown }).data;
      }

      // Gate 4: approval.
      if (tool.tier === 'approval' && tool.approval) {
        const approvers = admission?.approvers ?? tool.approval.approvers;
        // The preview of arguments checked with the admission was recorded with it.
        const preview = checkedByExecutor ? admission?.preview : previewOf(tool, input);
        const expiresAtMs = Date.now() + (admission?.approvalExpiresAfterMs ?? tool.approval.expiresAfterMs);
        record.approval = {
          approvers: [...approvers],
          expiresAt: new Date(expiresAtMs).toISOString(),
          ...(preview !== undefined ? { preview } : {}),
        };
        transition('awaiting_approval');
        const claims = checkQueuedAtExpiry
          ? await awaitDecisionUntilExpiry(approvers, expiresAtMs)
          : await awaitDecision(approvers, expiresAtMs);
        decided = true;
        // Decisions queued behind the one that counted (sent while it was being checked) are
        // refused as the handler refuses later ones; before, they stayed queued and unrecorded, and
        // their senders never learnt they did not count. The record only: no command changes.
        for (const payload of pendingDecisions.splice(0)) {
          recordRefusal({ at: now(), ...describeClaim(payload), reason: 'the call was already decided' });
        }
        record.approval.decidedBy = claims.approver;
        record.approval.decision = claims.decision;
        record.approval.decidedAt = now();
        if (claims.comment !== undefined) record.approval.comment = claims.comment;
        if (claims.decision === 'reject') {
          deny(
            'APPROVAL_REJECTED',
            `Rejected by ${claims.approver}. ${reasonCodes.APPROVAL_REJECTED.nextStep}`,
          );
        }
      }

      // Gate 5: execution.
      // A cancel that is already in (it came with the start) stops the call here, before the tool:
      // without a local activity in between, nothing else on this path would notice it first.
      if (lean && CancellationScope.current().consideredCancelled) {
        deny('CANCELLED', cancelledBeforeRunMessage);
      }
      // A readonly call's "running" lasts as long as a read; visibility tracks it where a side
      // effect is at stake (the record keeps every transition either way).
      transition('running', { index: !admitInExecution });
      // The activity is awaited here, not in a helper: every promise a workflow creates costs a
      // stack capture in the SDK's promise hook (for the stack-trace query), and an async layer
      // adds two. The commands are the same either way.
      const run = executor(tool);
      const runRequest = runRequestOf(tool, input, admitInExecution, checkedByExecutor);
      let result: RunToolResult;
      try {
        result = await (checkedByExecutor ? run.checkAndRunTool(runRequest) : run.runTool(runRequest));
      } catch (error) {
        classifyExecutionFailure(tool.tier, error, checkedByExecutor);
      }
      record.attempts = result.attempt;
      record.output = result.output;
      close('succeeded', undefined, tool.tier === 'readonly' ? 'none' : 'applied');
    } catch (error) {
      if (!(error instanceof CallClosed)) {
        // A cancel that lands before execution (during admission, or while a decision is being
        // verified) means nothing ran: a denial, not an unknown outcome.
        if (!isCancellation(error) || record.status === 'running') throw error;
        try {
          deny('CANCELLED', cancelledBeforeRunMessage);
        } catch (closed) {
          if (!(closed instanceof CallClosed)) throw closed;
        }
      }
    } finally {
      // Hand back a concurrency slot, also when admission was interrupted after the gate took it.
      // Release is idempotent, and its failure must never change the call's outcome.
      if (contract && (admission?.holdsSlot || admitting)) {
        try {
          await CancellationScope.nonCancellable(() =>
            policy.releaseCall({ callId: record.callId, tool: contract!.name, context: request.context }),
          );
        } catch (error) {
          log.warn('could not release the concurrency slot', { callId: record.callId, error: String(error) });
        }
      }
    }

    log.info('tool call closed', {
      callId: record.callId,
      status: record.status,
      reason: record.reason,
      effect: record.effect,
    });
    if (keyIsReleased(record, contract?.tier)) {
      // Failing the run releases the key under ALLOW_DUPLICATE_FAILED_ONLY; the record rides along.
      throw ApplicationFailure.create({
        type: releasedFailureType,
        message: record.message ?? record.status,
        nonRetryable: true,
        details: [record],
      });
    }
    return record;

    function denyCancelledWhileWaiting(): never {
      return deny('CANCELLED', 'The call was cancelled while it waited for approval; nothing ran.');
    }

    function denyExpired(): never {
      return deny(
        'APPROVAL_EXPIRED',
        `${reasonCodes.APPROVAL_EXPIRED.meaning} ${reasonCodes.APPROVAL_EXPIRED.nextStep}`,
      );
    }

    async function awaitDecision(approvers: readonly string[], expiresAtMs: number): Promise<DecisionClaims> {
      const seenNonces = new Set<string>();
      for (;;) {
        const remainingMs = expiresAtMs - Date.now();
        let arrived: boolean;
        try {
          arrived = remainingMs > 0 && (await condition(() => pendingDecisions.length > 0, remainingMs));
        } catch (error) {
          if (isCancellation(error)) return denyCancelledWhileWaiting();
          throw error;
        }
        if (!arrived) {
          return denyExpired();
        }
        const claims = await checkNextDecision(approvers, seenNonces);
        if (claims) return claims;
      }
    }

    /**
     * The approval wait of calls started since the `decisions-queued-at-expiry` patch. The expiry is
     * one timer for the whole wait, so whether the call has expired is an event in its history,
     * never a clock read after a local activity (whose time a replay may see a workflow task
     * earlier). The decisions already queued when it expires are still checked, since checking
     * the one ahead of them (a forged one, say) may have run past it; those that arrive later are
     * not, so a stream of signals cannot hold the call open, and a decision signed after the
     * expiry never counts.
     */
    async function awaitDecisionUntilExpiry(
      approvers: readonly string[],
      expiresAtMs: number,
    ): Promise<DecisionClaims> {
      const seenNonces = new Set<string>();
      let expired = false;
      const expiry = new CancellationScope();
      void expiry
        .run(() => sleep(Math.max(1, expiresAtMs - Date.now())))
        .then(
          () => {
            expired = true;
          },
          () => undefined,
        );
      let leftAfterExpiry: number | undefined;
      try {
        for (;;) {
          if (!expired) {
            try {
              await condition(() => expired || pendingDecisions.length > 0);
            } catch (error) {
              if (isCancellation(error)) return denyCancelledWhileWaiting();
              throw error;
            }
          }
          if (expired) {
            leftAfterExpiry ??= pendingDecisions.length;
            if (leftAfterExpiry === 0) {
              return denyExpired();
            }
            leftAfterExpiry--;
          }
          const claims = await checkNextDecision(approvers, seenNonces, () =>
            expired ? expiresAtMs : undefined,
          );
          if (claims) return claims;
        }
      } finally {
        expiry.cancel();
      }
    }

    /**
     * Checks the oldest queued decision: its claims if it counts, or undefined once its refusal is
     * recorded. `signedBy` gives, once the call has expired, the time a counting decision must have
     * been signed by.
     */
    async function checkNextDecision(
      approvers: readonly string[],
      seenNonces: Set<string>,
      signedBy: () => number | undefined = () => undefined,
    ): Promise<DecisionClaims | undefined> {
      const payload = pendingDecisions.shift();
      const verdict = await policy.verifyDecision({
        payload,
        callId: record.callId,
        runId: record.runId,
        fingerprint: record.fingerprint,
        requester: record.principal,
        approvers,
      });
      const deadline = signedBy();
      const late =
        verdict.accepted && deadline !== undefined && Date.parse(verdict.claims.issuedAt) > deadline;
      if (verdict.accepted && !late && !seenNonces.has(verdict.claims.nonce)) {
        seenNonces.add(verdict.claims.nonce);
        record.approval!.decisionNonce = verdict.claims.nonce;
        return verdict.claims;
      }
      const refusal = verdict.accepted
        ? {
            ...describeClaim(payload),
            reason: late
              ? 'the decision was signed after the call expired'
              : 'this signed decision was already used',
          }
        : {
            ...describeClaim(payload),
            ...(verdict.nonce ? { nonce: verdict.nonce } : {}),
            reason: verdict.reason,
          };
      if (refusal.nonce) seenNonces.add(refusal.nonce);
      recordRefusal({ at: now(), ...refusal });
      log.warn('approval decision refused', { callId: record.callId, ...refusal });
      return undefined;
    }

    /** What the execution activity gets: the checked input, the tier's key, and its deadline. */
    function runRequestOf(
      tool: ToolContract,
      input: unknown,
      admit: boolean,
      checked: boolean,
    ): RunToolRequest {
      return {
        ...(admit ? { admit: true } : {}),
        ...(checked && !admit ? { validatedAtAdmission: true } : {}),
        callId: record.callId,
        tool: tool.name,
        input,
        ...(request.key !== undefined ? { key: request.key } : {}),
        tier: tool.tier,
        timeoutMs: tool.timeoutMs,
        context: request.context,
      };
    }

    /** The tool's activity: a local one on the fast path, else a regular one that heartbeats. */
    function executor(tool: ToolContract): ToolgateActivities {
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
          startToCloseTimeout: tool.timeoutMs + deadlineGraceMs,
          retry,
          cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
        });
      }
      return proxyActivities<ToolgateActivities>({
        startToCloseTimeout: tool.timeoutMs + deadlineGraceMs,
        heartbeatTimeout: heartbeatTimeoutMs,
        retry,
        // Without this the workflow would report "cancelled" while the tool may still be running.
        cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
      });
    }

    function classifyExecutionFailure(tier: SideEffectTier, error: unknown, checked: boolean): never {
      const failure = error instanceof ActivityFailure ? error.cause : error;
      const details =
        failure instanceof ApplicationFailure
          ? (failure.details?.[0] as ToolFailureDetails | undefined)
          : undefined;
      record.attempts =
        details?.attempt ??
        (error instanceof ActivityFailure && error.retryState === 'MAXIMUM_ATTEMPTS_REACHED'
          ? contract!.retry.maximumAttempts
          : 1);
      // A readonly tool never changed anything; other tiers may have, unless the tool said otherwise.
      const unsettled: CallEffect = tier === 'readonly' ? 'none' : (details?.effect ?? 'unknown');
      const lasting = unsettled === 'unknown' && !tierIsRetrySafe(tier);
      if (isCancellation(error) || failure instanceof CancelledFailure) {
        return close(
          'cancelled',
          lasting ? 'OUTCOME_UNKNOWN' : 'CANCELLED',
          unsettled,
          lasting ? cancelledUnknownMessage : 'The call was cancelled by the caller.',
        );
      }
      if (
        failure instanceof TimeoutFailure ||
        (failure instanceof ApplicationFailure && failure.type === ToolFailureType.timeout)
      ) {
        if (CancellationScope.current().consideredCancelled) {
          // The caller cancelled, and the tool ignored its signal until the executor's deadline:
          // the call ends as the caller asked (never retried), and says the tool did not stop.
          return close(
            'cancelled',
            lasting ? 'OUTCOME_UNKNOWN' : 'CANCELLED',
            unsettled,
            lasting ? cancelIgnoredUnknownMessage : cancelIgnoredMessage,
          );
        }
        return close(
          'timeout',
          lasting ? 'OUTCOME_UNKNOWN' : 'TIMEOUT',
          unsettled,
          lasting ? timeoutUnknownMessage : undefined,
        );
      }
      if (checked && !tierIsRetrySafe(tier) && isUnregisteredExecutor(failure)) {
        // A worker from before protocol 3 took the execution: it has no checkAndRunTool, so this
        // tier's one attempt never started the tool. (A retry-safe tier is classified as below.)
        record.attempts = 0;
        if (record.transitions.at(-1)?.status === 'running') record.transitions.pop();
        return close('failed', 'TOOL_FAILED', 'none', olderExecutorMessage);
      }
      if (failure instanceof ApplicationFailure) {
        switch (failure.type) {
          case ToolFailureType.denied:
            if (details?.admission) {
              // Refused by admission inside the activity, before this attempt's tool started. On the
              // first attempt nothing ran: the record goes from pending to denied, as it would have
              // with admission in the workflow. A retry refused (the policy changed) keeps the
              // attempts that did run.
              record.attempts = Math.max(0, (details.attempt ?? 1) - 1);
              if (record.attempts === 0 && record.transitions.at(-1)?.status === 'running') {
                record.transitions.pop();
              }
              if (details.retryAfterSeconds !== undefined)
                record.retryAfterSeconds = details.retryAfterSeconds;
            }
            return deny(
              details?.reason === 'NOT_ALLOWED' || details?.reason === 'RATE_LIMITED'
                ? details.reason
                : 'INVALID_INPUT',
              details?.message,
            );
          case ToolFailureType.outputTooLarge:
            return close('failed', 'PAYLOAD_TOO_LARGE', unsettled, details?.message);
          default:
            return close('failed', lasting ? 'OUTCOME_UNKNOWN' : 'TOOL_FAILED', unsettled, details?.message);
        }
      }
      return close(
        'failed',
        lasting ? 'OUTCOME_UNKNOWN' : 'TOOL_FAILED',
        unsettled,
        'The tool failed unexpectedly.',
      );
    }
  };
}

const maxPendingDecisions = 50;

/**
 * The patch under which an approval-tier call waits with `awaitDecisionUntilExpiry`: decisions still
 * queued when it expires are checked, later ones are not, and one signed after the expiry never
 * counts. Before it (`awaitDecision`), such a call expired with a valid decision unread. Its marker
 * is set in the first workflow task of approval-tier calls, once the tool is looked up.
 */
export const decisionsQueuedAtExpiryPatch = 'decisions-queued-at-expiry';
const maxRecordedRefusals = 100;
const maxDroppedNonces = 20;

/**
 * The failure a Temporal worker reports for an activity type it does not register. The type alone
 * is not enough: a tool's own error class could be named NotFoundError.
 */
function isUnregisteredExecutor(failure: unknown): boolean {
  return (
    failure instanceof ApplicationFailure &&
    failure.type === 'NotFoundError' &&
    failure.message.startsWith('Activity function checkAndRunTool is not registered')
  );
}
const olderExecutorMessage =
  'A worker older than this release took the execution and could not run it; nothing ran. Finish upgrading the workers on this task queue, then call again.';

const cancelledBeforeRunMessage = 'The call was cancelled before its tool ran; nothing ran.';
const timeoutUnknownMessage =
  'The tool did not finish before its deadline and may have acted. Do not repeat it; check the current state first.';
const cancelledUnknownMessage =
  'The call was cancelled while the tool ran, so it may have acted. Do not repeat it; check the current state first.';
const cancelIgnoredMessage =
  'The call was cancelled. The tool did not stop when asked, so the executor stopped waiting for it at its deadline.';
const cancelIgnoredUnknownMessage =
  'The call was cancelled, but the tool did not stop when asked and had not finished by its deadline, so it may have acted. Do not repeat it; check the current state first.';

/**
 * docs/design.md, "Idempotency": a key is released only when no side effect can have happened, or when the tier is safe
 * to retry. Everything else keeps the key taken, including an outcome nobody knows.
 */
export function keyIsReleased(record: CallRecord, tier: SideEffectTier | undefined): boolean {
  if (record.status === 'succeeded') return false;
  if (record.effect === 'none') return true;
  return tier !== undefined && tierIsRetrySafe(tier);
}

/** What a refused payload claimed, for the audit. The payload is untrusted, so read defensively. */
function describeClaim(payload: unknown): { decision: string; claimedApprover: string; nonce?: string } {
  const claims =
    payload && typeof payload === 'object' && 'claims' in payload
      ? (payload as { claims: unknown }).claims
      : undefined;
  const read = (field: string) =>
    claims && typeof claims === 'object' && typeof (claims as Record<string, unknown>)[field] === 'string'
      ? ((claims as Record<string, unknown>)[field] as string).slice(0, 128)
      : undefined;
  const nonce = read('nonce');
  return {
    decision: read('decision') ?? 'unknown',
    claimedApprover: read('approver') ?? 'unknown',
    ...(nonce ? { nonce } : {}),
  };
}
