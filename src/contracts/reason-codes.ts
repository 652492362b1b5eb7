/**
 * One table of reason codes, shared by the workflow, the client and every agent adapter. Each code
 * says whether retrying the same call can help and what a model should do next.
 */
export const ReasonCode = {
  NOT_ALLOWED: 'NOT_ALLOWED',
  INVALID_INPUT: 'INVALID_INPUT',
  KEY_REQUIRED: 'KEY_REQUIRED',
  KEY_MISMATCH: 'KEY_MISMATCH',
  APPROVAL_REJECTED: 'APPROVAL_REJECTED',
  APPROVAL_EXPIRED: 'APPROVAL_EXPIRED',
  TIMEOUT: 'TIMEOUT',
  CANCELLED: 'CANCELLED',
  TOOL_FAILED: 'TOOL_FAILED',
  OUTCOME_UNKNOWN: 'OUTCOME_UNKNOWN',
  PAYLOAD_TOO_LARGE: 'PAYLOAD_TOO_LARGE',
  RATE_LIMITED: 'RATE_LIMITED',
} as const;
export type ReasonCode = (typeof ReasonCode)[keyof typeof ReasonCode];

export interface ReasonCodeInfo {
  /** Whether sending the same call again, unchanged, can succeed. */
  readonly retryable: boolean;
  /** What happened, in words a model can act on. */
  readonly meaning: string;
  /** What the model (or the caller) should do next. */
  readonly nextStep: string;
}

export const reasonCodes: Readonly<Record<ReasonCode, ReasonCodeInfo>> = {
  NOT_ALLOWED: {
    retryable: false,
    meaning: 'This tool is not available to you.',
    nextStep: 'Use only the tools listed in your tool definitions, spelled exactly; do not retry this name.',
  },
  INVALID_INPUT: {
    retryable: false,
    meaning: 'The arguments did not match the tool input schema.',
    nextStep: 'Fix the arguments named in the error and call the tool again.',
  },
  KEY_REQUIRED: {
    retryable: false,
    meaning: 'This tool has lasting effects and needs an idempotency key.',
    nextStep:
      'Provide a stable business key for this action (for example an order or invoice ID) and call again.',
  },
  KEY_MISMATCH: {
    retryable: false,
    meaning: 'This idempotency key was already used for a call with different arguments.',
    nextStep: 'If you meant the earlier action, reuse its exact arguments; for a new action, use a new key.',
  },
  APPROVAL_REJECTED: {
    retryable: false,
    meaning: 'A human reviewer rejected this action.',
    nextStep: 'Do not retry it. Tell the user it was rejected and, if useful, ask how to proceed.',
  },
  APPROVAL_EXPIRED: {
    retryable: false,
    meaning: 'Nobody approved this action in time, so it did not run.',
    nextStep:
      'Ask the user whether to request approval again; the same call, key included, can be sent again and waits for a new decision.',
  },
  TIMEOUT: {
    retryable: true,
    meaning: 'The tool did not finish before its deadline.',
    nextStep: 'Retry later or with a narrower request.',
  },
  CANCELLED: {
    retryable: false,
    meaning: 'The call was cancelled by the caller.',
    nextStep: 'Do not retry unless the user asks for it again.',
  },
  TOOL_FAILED: {
    retryable: true,
    meaning: 'The tool reported an error.',
    nextStep: 'Check the arguments; retry once if the error looks temporary, otherwise report it.',
  },
  OUTCOME_UNKNOWN: {
    retryable: false,
    meaning: 'The action may or may not have taken effect.',
    nextStep:
      'Do not repeat it. Check the current state first, or tell the user an operator must reconcile it.',
  },
  PAYLOAD_TOO_LARGE: {
    retryable: false,
    meaning: 'The input or output exceeded the size limit.',
    nextStep: 'Send smaller arguments, or ask for less data (filter, paginate or summarise).',
  },
  RATE_LIMITED: {
    retryable: true,
    meaning: 'Too many calls right now.',
    nextStep: 'Wait for the retry-after time, then try again.',
  },
};

/** Reason codes that may be retried unchanged. Everything else needs a different call or a human. */
export const retryableReasonCodes: readonly ReasonCode[] = (Object.keys(reasonCodes) as ReasonCode[]).filter(
  (code) => reasonCodes[code].retryable,
);

export function isReasonCode(value: unknown): value is ReasonCode {
  return typeof value === 'string' && Object.hasOwn(reasonCodes, value);
}
