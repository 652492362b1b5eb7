import { type CallRecord, keyIsReleased, type UndoInfo } from '../contracts/call-record.ts';
import { isReasonCode, type ReasonCode, reasonCodes } from '../contracts/reason-codes.ts';

/**
 * What a model is told about one tool call. `isError` maps to Anthropic's `is_error`; OpenAI has no
 * such flag, so the text itself starts with the outcome.
 *
 * Pure code with no Node imports: agent workflows use it too.
 */
export interface ModelToolResult {
  readonly isError: boolean;
  readonly text: string;
}

/** The largest tool result text handed back to a model; longer output is cut with a note. */
export const maximumResultCharacters = 16_000;

/**
 * The model-facing text for a closed call record. A success carries the output as JSON. Anything
 * else is an error whose text names the reason code, says whether retrying the same call can help
 * and what to do instead, and never carries a stack trace, an internal path or a host name.
 */
export function modelResultForRecord(record: CallRecord): ModelToolResult {
  if (record.status === 'succeeded') {
    const output = record.output === undefined ? 'null' : safeJson(record.output);
    if (record.undo) return modelResultForUndone(record, record.undo, output);
    return { isError: false, text: truncate(output) };
  }
  if (record.status === 'awaiting_approval' || record.status === 'pending' || record.status === 'running') {
    return modelResultForPending(record.callId, record.status);
  }
  const reason: ReasonCode = record.reason && isReasonCode(record.reason) ? record.reason : 'TOOL_FAILED';
  const detail = record.message ? scrubForModel(record.message) : '';
  const retryAfter =
    reason === 'RATE_LIMITED' && record.retryAfterSeconds !== undefined
      ? ` Wait at least ${Math.ceil(record.retryAfterSeconds)} seconds.`
      : '';
  return {
    isError: true,
    text: truncate(modelErrorText(reason, detail, whyRetryCannotHelp(record)) + retryAfter),
  };
}

/**
 * Why repeating this closed call unchanged cannot help although its reason code usually can be
 * retried, or undefined when it can: the tool said so (`ToolError({ retryable: false })`), or the
 * call keeps its key, so the same call would only return this record again.
 */
export function whyRetryCannotHelp(
  record: Pick<CallRecord, 'status' | 'effect' | 'tier' | 'key' | 'retryable'>,
): FinalReason | undefined {
  if (record.retryable === false) return 'the tool said so';
  if (record.key !== undefined && !keyIsReleased(record, record.tier)) return 'the key is taken';
  return undefined;
}

/** Why a failure that is usually worth a retry is not worth one this time. */
export type FinalReason = 'the tool said so' | 'the key is taken';

const finalRetryText: Readonly<Record<FinalReason, string>> = {
  'the tool said so':
    'Retrying the same call unchanged will not help: the tool said it cannot succeed as asked. Do not repeat it; change the request, or report the error to the user.',
  'the key is taken':
    'Retrying the same call will not help: its idempotency key is taken, so a repeat only returns this result again. Check the current state first; a new action needs a new key.',
};

/**
 * A succeeded call an operator has undone, is undoing, or tried to undo. Its stored record still
 * says the call succeeded: a completed or running undo is an error to the model, so that it does
 * not go on as if the effect were in place. A duplicate with the call's key gets this record back
 * and runs nothing, so the text says that repeating the call will not redo the effect.
 */
function modelResultForUndone(record: CallRecord, undo: UndoInfo, output: string): ModelToolResult {
  const parsed = Date.parse(undo.at);
  const when = Number.isNaN(parsed) ? '' : ` at ${new Date(parsed).toISOString()}`;
  const noRedo =
    record.key !== undefined
      ? ' Making this same call again will not redo it: it only returns this result again.'
      : '';
  const ask = ' If the effect is still needed, tell the user it was undone and ask how to proceed.';
  const original = ` The output of the call before it was undone: ${output}`;
  switch (undo.status) {
    case 'succeeded':
      return {
        isError: true,
        text: truncate(
          `Undone: this call succeeded earlier, but an operator has since undone it${when}, so its effect was reversed. ` +
            `Do not assume the effect is in place.${noRedo}${ask}${original}`,
        ),
      };
    case 'running':
      return {
        isError: true,
        text: truncate(
          `Being undone: this call succeeded earlier, but an operator is undoing it now (started${when || ' recently'}), so its effect is being reversed. ` +
            `Do not assume the effect is in place.${noRedo}${ask}${original}`,
        ),
      };
    default:
      return {
        isError: false,
        text: truncate(
          `Succeeded: this call succeeded earlier. An operator tried to undo it${when}, but the undo failed, so its effect may still be in place, in whole or in part; do not assume it was reversed. ` +
            `Output: ${output}`,
        ),
      };
  }
}

/**
 * The error text for a reason code, optionally with a specific detail from the call. Every code
 * yields the same three parts: what happened, whether a retry can help, what to do next.
 */
export function modelErrorText(reason: ReasonCode, detail = '', final?: FinalReason): string {
  const info = reasonCodes[reason];
  const what = detail.length > 0 ? detail : info.meaning;
  if (info.retryable && final) return `Error ${reason}: ${ensureSentence(what)} ${finalRetryText[final]}`;
  const retry = info.retryable
    ? 'Retrying the same call may help.'
    : 'Retrying the same call unchanged will not help.';
  const next = what.includes(info.nextStep) ? '' : ` ${info.nextStep}`;
  return `Error ${reason}: ${ensureSentence(what)} ${retry}${next}`;
}

/**
 * The text for a call that is waiting, usually for a human approval. It is not an error: the call is
 * alive and will finish on its own.
 */
export function modelResultForPending(callId: string, status = 'awaiting_approval'): ModelToolResult {
  const waiting =
    status === 'awaiting_approval'
      ? 'is waiting for a human to approve it'
      : 'has started and is still running';
  return {
    isError: false,
    text:
      `Pending: this call ${waiting}. Call ID: ${callId}. Do not call the tool again for this action; ` +
      'the result will be reported when it is decided. Continue with other work or tell the user it is pending.',
  };
}

/**
 * The text for a call that was accepted but that no worker has picked up within the caller's bound
 * (`noWorkerAfterMs`). Not an error and not a failure to retry: the call is durable, stays open and
 * runs when a worker starts, so making it again could do the action twice.
 */
export function modelResultForNoWorker(callId: string): ModelToolResult {
  return {
    isError: false,
    text:
      `Pending: this call was accepted, but no worker is running it yet. It stays open and will run when a worker starts. Call ID: ${callId}. ` +
      'Do not call the tool again for this action; the result will be reported when it is done. ' +
      'Continue with other work or tell the user the action is queued until the tool service is back.',
  };
}

/** The text for a call toolgate could not run at all (for example, the server was unreachable). */
export function modelResultForInfrastructureError(): ModelToolResult {
  return {
    isError: true,
    text: 'Error TOOL_FAILED: The tool service could not run this call right now. Retrying the same call later may help. Try again shortly, or tell the user the tool is unavailable.',
  };
}

/**
 * The text for a call the client refused because the agent's own set-up is wrong (its call context:
 * tenant, principal). No call can run until a person fixes it, so the model is told not to retry.
 */
export function modelResultForSetupError(): ModelToolResult {
  return {
    isError: true,
    text: 'Error TOOL_FAILED: The tool service is set up wrongly for this agent, so no call can run until someone fixes it. Retrying will not help. Tell the user the tool is unavailable.',
  };
}

const stackLine = /^\s*at\s.+$/gm;
const stackFrame = /\(?[^\s()]*:\d+:\d+\)?/g;
const url = /\b[a-z][a-z0-9+.-]*:\/\/[^\s'"<>]+/gi;
const windowsPath = /\b[A-Za-z]:\\[^\s'"]*/g;
const absolutePath = /(^|[\s'"(=])(\/[A-Za-z0-9_.~-][^\s'"()]*)/g;
const ipv4 = /\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b/g;
const ipv6Full = /\b(?:[0-9a-f]{1,4}:){7}[0-9a-f]{1,4}\b/gi;
const ipv6Compressed =
  /(?:\b[0-9a-f]{1,4}(?::[0-9a-f]{1,4})*)?::(?:[0-9a-f]{1,4}(?::[0-9a-f]{1,4})*)?(?![\w:])/gi;
const hostWithPort = /\b(?:localhost|[a-z][a-z0-9-]*(?:\.[a-z0-9-]+)+):\d{2,5}\b/gi;
// The whole dotted name, including any labels after the internal one (vault.corp.acme.io).
const internalHost =
  /\b[a-z0-9-]+(?:\.[a-z0-9-]+)*\.(?:internal|local|localdomain|lan|corp|intranet|svc|cluster)(?:\.[a-z0-9-]+)*\b/gi;
// Public names of three labels or more under a common top-level domain (db-primary.prod.acme.com).
// Two-label names stay: "example.com" in guidance is harmless, and README.md must not match.
const publicHost =
  /\b[a-z0-9-]+(?:\.[a-z0-9-]+){2,}\.(?:com|net|org|io|dev|app|cloud|ai|co|biz|info|xyz|tech|eu|us|uk|de|fr|nl|jp|ca|au|ch|gov|edu)\b/gi;
// The host a resolver or socket error names (getaddrinfo ENOTFOUND billing, connect ECONNREFUSED db).
const hostAfterErrorCode =
  /\b(ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH)\s+(?!\[)[^\s'",;)]+/g;
const localhost = /\blocalhost\b/gi;

/**
 * Removes what must never reach a model: stack frames, URLs, file system paths, IP addresses and
 * host names. Tool messages are written to be safe already; this is the second line of defence for a
 * tool that interpolates an error it did not write.
 */
export function scrubForModel(text: string): string {
  return text
    .replace(stackLine, '')
    .replace(url, '[address removed]')
    .replace(windowsPath, '[path removed]')
    .replace(absolutePath, (_match, lead: string) => `${lead}[path removed]`)
    .replace(ipv4, '[address removed]')
    .replace(ipv6Full, '[address removed]')
    .replace(ipv6Compressed, '[address removed]')
    .replace(hostWithPort, '[address removed]')
    .replace(internalHost, '[host removed]')
    .replace(publicHost, '[host removed]')
    .replace(hostAfterErrorCode, (_match, code: string) => `${code} [host removed]`)
    .replace(localhost, '[host removed]')
    .replace(stackFrame, (frame) => (/:\d+:\d+/.test(frame) ? '' : frame))
    .replace(/\n{2,}/g, '\n')
    .replace(/[ \t]{2,}/g, ' ')
    .trim()
    .slice(0, 2_000);
}

function ensureSentence(text: string): string {
  const trimmed = text.trim();
  return /[.!?)]$/.test(trimmed) ? trimmed : `${trimmed}.`;
}

function truncate(text: string): string {
  if (text.length <= maximumResultCharacters) return text;
  return `${text.slice(0, maximumResultCharacters)}… [truncated: ask for less data, e.g. filter or paginate]`;
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value) ?? 'null';
  } catch {
    return '"(the tool returned a value that cannot be shown)"';
  }
}
