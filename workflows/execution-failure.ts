/**
 * How a failed execution ends a call (docs/design.md, "States and effects"): the failure is sorted
 * into one kind, and a table says the status, the reason code and the message of each kind, for an
 * effect that is settled and for one that may have lasted.
 */
import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  CancelledFailure,
  isCancellation,
  TimeoutFailure,
} from '@temporalio/workflow';
import { type ToolFailureDetails, ToolFailureType } from '../src/contracts/activity-types.ts';
import type { CallEffect, CallStatus } from '../src/contracts/call-record.ts';
import type { ReasonCode } from '../src/contracts/reason-codes.ts';
import { type SideEffectTier, tierIsRetrySafe } from '../src/contracts/tier.ts';
import { type CallState, close, deny } from './call-state.ts';

type FailureKind =
  | 'cancelled'
  | 'cancelIgnored'
  | 'timeout'
  | 'olderExecutor'
  | 'denied'
  | 'outputTooLarge'
  | 'toolFailed'
  | 'unexpected';

/** How one kind of failure ends the call; `lasting` applies when the effect may have lasted. */
interface Ending {
  readonly status: CallStatus;
  readonly reason: ReasonCode;
  readonly lastingReason: ReasonCode;
  readonly message: (details: ToolFailureDetails | undefined) => string | undefined;
  readonly lastingMessage: (details: ToolFailureDetails | undefined) => string | undefined;
}

const fixed = (message: string | undefined) => () => message;
const toolsOwn = (details: ToolFailureDetails | undefined) => details?.message;

const endings: Readonly<Record<Exclude<FailureKind, 'olderExecutor' | 'denied'>, Ending>> = {
  cancelled: {
    status: 'cancelled',
    reason: 'CANCELLED',
    lastingReason: 'OUTCOME_UNKNOWN',
    message: fixed('The call was cancelled by the caller.'),
    lastingMessage: fixed(
      'The call was cancelled while the tool ran, so it may have acted. Do not repeat it; check the current state first.',
    ),
  },
  // The caller cancelled and the tool ignored its signal until the executor's deadline: the call
  // ends as the caller asked (never retried), and says the tool did not stop.
  cancelIgnored: {
    status: 'cancelled',
    reason: 'CANCELLED',
    lastingReason: 'OUTCOME_UNKNOWN',
    message: fixed(
      'The call was cancelled. The tool did not stop when asked, so the executor stopped waiting for it at its deadline.',
    ),
    lastingMessage: fixed(
      'The call was cancelled, but the tool did not stop when asked and had not finished by its deadline, so it may have acted. Do not repeat it; check the current state first.',
    ),
  },
  timeout: {
    status: 'timeout',
    reason: 'TIMEOUT',
    lastingReason: 'OUTCOME_UNKNOWN',
    message: fixed(undefined),
    lastingMessage: fixed(
      'The tool did not finish before its deadline and may have acted. Do not repeat it; check the current state first.',
    ),
  },
  outputTooLarge: {
    status: 'failed',
    reason: 'PAYLOAD_TOO_LARGE',
    lastingReason: 'PAYLOAD_TOO_LARGE',
    message: toolsOwn,
    lastingMessage: toolsOwn,
  },
  toolFailed: {
    status: 'failed',
    reason: 'TOOL_FAILED',
    lastingReason: 'OUTCOME_UNKNOWN',
    message: toolsOwn,
    lastingMessage: toolsOwn,
  },
  unexpected: {
    status: 'failed',
    reason: 'TOOL_FAILED',
    lastingReason: 'OUTCOME_UNKNOWN',
    message: fixed('The tool failed unexpectedly.'),
    lastingMessage: fixed('The tool failed unexpectedly.'),
  },
};

const olderExecutorMessage =
  'A worker older than this release took the execution and could not run it; nothing ran. Finish upgrading the workers on this task queue, then call again.';

/** Ends a call whose execution activity failed. `checked`: the activity was to check the arguments. */
export function endFailedExecution(call: CallState, error: unknown, checked: boolean): never {
  const tool = call.contract!;
  const failure = error instanceof ActivityFailure ? error.cause : error;
  const details =
    failure instanceof ApplicationFailure
      ? (failure.details?.[0] as ToolFailureDetails | undefined)
      : undefined;
  call.record.attempts =
    details?.attempt ??
    (error instanceof ActivityFailure && error.retryState === 'MAXIMUM_ATTEMPTS_REACHED'
      ? tool.retry.maximumAttempts
      : 1);
  const kind = failureKind(error, failure, checked, tool.tier);
  if (kind === 'olderExecutor') return endOlderExecutor(call);
  if (kind === 'denied') return denyFromExecution(call, details);
  // A readonly tool never changed anything; other tiers may have, unless the tool said otherwise.
  const effect: CallEffect = tool.tier === 'readonly' ? 'none' : (details?.effect ?? 'unknown');
  const lasting = effect === 'unknown' && !tierIsRetrySafe(tool.tier);
  // The tool's own word that repeating the call cannot help reaches the model (the record only).
  if (kind === 'toolFailed' && details?.retryable === false) call.record.retryable = false;
  const ending = endings[kind];
  return close(
    call,
    ending.status,
    lasting ? ending.lastingReason : ending.reason,
    effect,
    (lasting ? ending.lastingMessage : ending.message)(details),
  );
}

function failureKind(error: unknown, failure: unknown, checked: boolean, tier: SideEffectTier): FailureKind {
  if (isCancellation(error) || failure instanceof CancelledFailure) return 'cancelled';
  const timedOut =
    failure instanceof TimeoutFailure ||
    (failure instanceof ApplicationFailure && failure.type === ToolFailureType.timeout);
  if (timedOut) return CancellationScope.current().consideredCancelled ? 'cancelIgnored' : 'timeout';
  // A retry-safe tier is sorted as below: its attempts are retried on the upgraded workers.
  if (checked && !tierIsRetrySafe(tier) && isUnregisteredExecutor(failure)) return 'olderExecutor';
  if (!(failure instanceof ApplicationFailure)) return 'unexpected';
  if (failure.type === ToolFailureType.denied) return 'denied';
  if (failure.type === ToolFailureType.outputTooLarge) return 'outputTooLarge';
  return 'toolFailed';
}

/**
 * A worker from before protocol 3 took the execution: it has no checkAndRunTool, so this tier's one
 * attempt never started the tool.
 */
function endOlderExecutor(call: CallState): never {
  call.record.attempts = 0;
  if (call.record.transitions.at(-1)?.status === 'running') call.record.transitions.pop();
  return close(call, 'failed', 'TOOL_FAILED', 'none', olderExecutorMessage);
}

/**
 * Refused inside the execution activity, before this attempt's tool started: by admission, or by an
 * execution-time check (a path outside its sandbox, a private address).
 */
function denyFromExecution(call: CallState, details: ToolFailureDetails | undefined): never {
  const { record } = call;
  if (details?.admission) {
    // On the first attempt nothing ran: the record goes from pending to denied, as it would have
    // with admission in the workflow. A retry refused (the policy changed) keeps the attempts that
    // did run.
    record.attempts = Math.max(0, (details.attempt ?? 1) - 1);
    if (record.attempts === 0 && record.transitions.at(-1)?.status === 'running') record.transitions.pop();
    if (details.retryAfterSeconds !== undefined) record.retryAfterSeconds = details.retryAfterSeconds;
  }
  const reason =
    details?.reason === 'NOT_ALLOWED' || details?.reason === 'RATE_LIMITED'
      ? details.reason
      : 'INVALID_INPUT';
  return deny(call, reason, details?.message);
}

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
