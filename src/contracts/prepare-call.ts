import type { SearchAttributePair } from '@temporalio/common';
import { describeKeyRules, idempotencyKeyPattern, callId as makeCallId } from './call-id.ts';
import type { CallContext, CallRecord, CallStatus, ReplayInfo } from './call-record.ts';
import { checkInput, lookupTool, type ToolCatalog, type ToolContract } from './define-tool.ts';
import { KeyDerivationError } from './errors.ts';
import { callFingerprint } from './fingerprint.ts';
import {
  checkInputLimits,
  defaultPayloadLimits,
  jsonValueProblem,
  maxRequestedToolNameLength,
  type PayloadLimits,
} from './limits.ts';
import type { ReasonCode } from './reason-codes.ts';
import { searchAttributeKeys } from './search-attributes.ts';
import type { SideEffectTier } from './tier.ts';

export { KeyDerivationError };

/** What a caller asks for: a tool, its arguments and, for lasting effects, an idempotency key. */
export interface CallRequest {
  readonly tool: string;
  readonly input: unknown;
  readonly key?: string;
}

/** The toolCall workflow's input. The call ID is the workflow ID, so it is not repeated here. */
export interface ToolCallRequest {
  readonly tool: string;
  readonly input: unknown;
  readonly key?: string;
  readonly context: CallContext;
  /** Computed by the caller; the workflow recomputes it and refuses a call where they differ. */
  readonly fingerprint: string;
  readonly replay?: ReplayInfo;
  /**
   * The gate protocol the workflow follows, pinned in the start event so a replay takes the same
   * path. Absent (1): the first protocol, which every history recorded before version 2 follows.
   * 2: the lean path, see `leanGatesProtocol`. 3: validation recorded, see
   * `recordedValidationProtocol`.
   */
  readonly protocol?: number;
}

/**
 * Gate protocol 2, the lean path: the client indexes the tier at start, and a readonly call is
 * admitted inside its execution activity rather than by a separate local activity, with its
 * running state kept out of visibility. Same gates, same order, same outcomes; fewer commands.
 * Versioned through the request instead of `patched()`, because a patch marker makes the SDK upsert
 * the TemporalChangeVersion search attribute on every call: the very write this saves.
 */
export const leanGatesProtocol = 2;

/**
 * Gate protocol 3: the lean path, with the validation gate's verdict recorded in history. The
 * arguments are checked where admission runs, outside the workflow, against the worker's catalog:
 * for a readonly call by its execution activity (`checkAndRunTool`), for other tiers by the
 * `admitCall` local activity. The workflow branches on the recorded verdict, so a release that
 * tightens a schema cannot break the replay of calls that are open under it, and the workflow
 * builds no schema (unless the worker's activities know no contract for the tool: then it
 * validates itself, as protocol 2 does). Same gates, same order, same outcomes; the execution activity has
 * a new type, and an invalid readonly call needs no admission marker.
 */
export const recordedValidationProtocol = 3;

/** The protocol new calls are started with. */
export const currentGatesProtocol = recordedValidationProtocol;

/**
 * The protocols a client may pin for the calls it starts (`gateProtocol`): the current one, and
 * the one before it for a rollout whose older workers still serve the task queue.
 */
export const startableGatesProtocols: readonly number[] = [leanGatesProtocol, currentGatesProtocol];

/** Why a protocol cannot be pinned, or undefined when it can. */
export function describeGateProtocolProblem(protocol: unknown): string | undefined {
  if (protocol === undefined || startableGatesProtocols.includes(protocol as number)) return undefined;
  return `gateProtocol must be one of ${startableGatesProtocols.join(', ')} (got ${JSON.stringify(protocol)}). Pin ${leanGatesProtocol} only while workers older than gate protocol ${currentGatesProtocol} serve the task queue.`;
}

/** Derives a key for a request without one, from the caller's function. Never from a tool_use id. */
export type KeyDeriver = (tool: string, input: unknown, context: CallContext) => string | undefined;

export interface PrepareCallOptions {
  readonly catalog?: ToolCatalog;
  readonly keyFor?: KeyDeriver;
  readonly limits?: PayloadLimits;
  /** A fresh unique string for keyless call IDs (a UUID; `uuid4()` inside workflows). */
  readonly unique: string;
  readonly replay?: ReplayInfo;
  /** The gate protocol to start with (see `startableGatesProtocols`); default the current one. */
  readonly protocol?: number;
  /**
   * SHA-256 as lowercase hex, for the fingerprint. Default the plain-JavaScript one, which also
   * runs inside workflows; the client passes Node's, which gives the same digest for less CPU.
   */
  readonly sha256Hex?: (text: string) => string;
  /**
   * Asked only for a tool name longer than any tool can have: whether to refuse it here, without a
   * workflow (default yes). Child calls answer through `patched()`, so agent histories recorded
   * before that refusal existed replay as they ran.
   */
  readonly refuseLongToolName?: () => boolean;
}

/** A call ready to start, or the record of why it cannot be. */
export type PreparedCall =
  | {
      readonly ok: true;
      readonly callId: string;
      readonly key?: string;
      readonly fingerprint: string;
      /** The tool's tier when the caller's catalog has the tool (the worker's catalog decides). */
      readonly tier?: SideEffectTier;
      readonly workflowRequest: ToolCallRequest;
      /** Set at start, so a call is visible in lists before its first workflow task runs. */
      readonly searchAttributes: SearchAttributePair[];
    }
  | {
      readonly ok: false;
      readonly record: CallRecord;
      /** The caller's own bug behind the refusal (a key function that threw), for its diagnostics. */
      readonly error?: KeyDerivationError;
    };

/**
 * What is wrong with a toolCall workflow's input, or undefined when it has the shape clients and
 * child calls send. A workflow started by hand with anything else is closed at once, INVALID_INPUT,
 * instead of failing its first task again and again.
 */
export function describeRequestProblem(request: unknown): string | undefined {
  if (typeof request !== 'object' || request === null || Array.isArray(request)) {
    return 'the workflow input is not a call request object';
  }
  const given = request as Record<string, unknown>;
  const context = given['context'];
  const fields: Array<[string, boolean]> = [
    ['tool', typeof given['tool'] === 'string'],
    ['fingerprint', typeof given['fingerprint'] === 'string'],
    ['context', typeof context === 'object' && context !== null],
    ['key', given['key'] === undefined || typeof given['key'] === 'string'],
    ['protocol', given['protocol'] === undefined || typeof given['protocol'] === 'number'],
  ];
  const wrong = fields.find(([, ok]) => !ok);
  if (wrong) return `${wrong[0]} is missing or of the wrong type`;
  const caller = context as Record<string, unknown>;
  if (typeof caller['tenant'] !== 'string' || typeof caller['principal'] !== 'string') {
    return 'context.tenant and context.principal must be strings';
  }
  if (!['human', 'agent', 'service'].includes(caller['principalKind'] as string)) {
    return "context.principalKind must be 'human', 'agent' or 'service'";
  }
  return undefined;
}

/** What the model and the record are told when a key function throws. */
export const keyDerivationFailureMessage =
  "No idempotency key could be derived from these arguments: the tool's key function failed on them. " +
  'Check the arguments against the tool description; if they are right, the tool cannot take them.';

/**
 * The key of a request: the explicit one, else the contract's business key function (on valid
 * input only), else the caller's deriver. Throws KeyDerivationError when a key function throws.
 */
export function deriveCallKey(
  request: CallRequest,
  context: CallContext,
  options: Pick<PrepareCallOptions, 'catalog' | 'keyFor'>,
): string | undefined {
  const contract = options.catalog ? lookupTool(options.catalog, request.tool) : undefined;
  return keyForRequest(request, context, contract, options.keyFor);
}

function keyForRequest(
  request: CallRequest,
  context: CallContext,
  contract: ToolContract | undefined,
  keyFor: KeyDeriver | undefined,
): string | undefined {
  if (request.key !== undefined) return request.key;
  // A key function with a bug (say, `input.invoice.toLowerCase()` on a nullable field) must not
  // fail the caller: this also runs inside agent workflows, where a throw would fail the workflow
  // task and hold the agent until a new release. It becomes a refusal instead.
  const derive = (run: () => string | undefined): string | undefined => {
    try {
      return run();
    } catch (error) {
      throw new KeyDerivationError(keyDerivationFailureMessage, { cause: error });
    }
  };
  if (contract?.idempotencyKey) {
    // Invalid input gets no derived key; the workflow's validation gate will explain what is wrong.
    // A schema that throws (a lazy one that fails to build, a refinement with a bug) counts as
    // invalid, for the same reason as above. The gate then denies the call INVALID_INPUT.
    const parsed = checkInput(contract, request.input);
    if (parsed.success) return derive(() => contract.idempotencyKey!(parsed.data as never));
  }
  return keyFor ? derive(() => keyFor(request.tool, request.input, context)) : undefined;
}

/**
 * Everything a caller checks before asking Temporal for a workflow, done once per call: the tool
 * name's length, the key (given or derived) and its form, the size limits (so an oversized call
 * never becomes a server error), and the fingerprint. The tool is looked up once. Pure code, the
 * one preparation shared by the client, the agent adapters (through the client) and the
 * workflow-side child entry point.
 */
export function prepareCall(
  request: CallRequest,
  context: CallContext,
  options: PrepareCallOptions,
): PreparedCall {
  if (isLongToolName(request) && (options.refuseLongToolName?.() ?? true)) {
    return { ok: false, record: longToolNameRecord(request, context) };
  }
  const contract = options.catalog ? lookupTool(options.catalog, request.tool) : undefined;
  const tier = contract?.tier;
  const checked = checkRequest(request, context, contract, options);
  if ('refusal' in checked) {
    const { reason, message, key, fingerprint, error } = checked.refusal;
    return {
      ok: false,
      record: refusedCallRecord({ request, context, key, fingerprint, reason, message, tier }),
      ...(error ? { error } : {}),
    };
  }
  const { key, fingerprint } = checked;
  return {
    ok: true,
    callId: makeCallId({ tenant: context.tenant, tool: request.tool, key, unique: options.unique }),
    ...(key !== undefined ? { key } : {}),
    fingerprint,
    ...(tier ? { tier } : {}),
    workflowRequest: {
      tool: request.tool,
      input: request.input,
      ...(key !== undefined ? { key } : {}),
      context: { tenant: context.tenant, principal: context.principal, principalKind: context.principalKind },
      fingerprint,
      ...(options.replay ? { replay: options.replay } : {}),
      protocol: options.protocol ?? currentGatesProtocol,
    },
    searchAttributes: [
      { key: searchAttributeKeys.toolName, value: request.tool.slice(0, 128) },
      { key: searchAttributeKeys.tenant, value: context.tenant },
      { key: searchAttributeKeys.principal, value: context.principal },
      { key: searchAttributeKeys.callStatus, value: 'pending' },
      { key: searchAttributeKeys.callEffect, value: 'none' },
      // Indexed now so the workflow need not write it; the workflow corrects a missing or wrong one.
      ...(tier ? [{ key: searchAttributeKeys.toolTier, value: tier }] : []),
    ],
  };
}

interface RequestRefusal {
  readonly reason: ReasonCode;
  readonly message: string;
  readonly key: string | undefined;
  readonly fingerprint: string;
  readonly error?: KeyDerivationError;
}

/** The key and fingerprint of a request, or the first reason it cannot start. */
function checkRequest(
  request: CallRequest,
  context: CallContext,
  contract: ToolContract | undefined,
  options: PrepareCallOptions,
): { key: string | undefined; fingerprint: string } | { refusal: RequestRefusal } {
  const refuse = (reason: ReasonCode, message: string, key?: string) => ({
    refusal: { reason, message, key, fingerprint: '' },
  });
  // Values JSON cannot carry are named before anything reads them: a Date or a Map would reach
  // the tool as something else than the caller sent, and a BigInt not at all.
  const notJson = jsonValueProblem(request.input);
  if (notJson) return refuse('INVALID_INPUT', `The arguments are not plain JSON: ${notJson}`);
  let key: string | undefined;
  try {
    key = keyForRequest(request, context, contract, options.keyFor);
  } catch (error) {
    if (!(error instanceof KeyDerivationError)) throw error;
    return {
      refusal: { reason: 'INVALID_INPUT', message: keyDerivationFailureMessage, key, fingerprint: '', error },
    };
  }
  if (key !== undefined && !idempotencyKeyPattern.test(key)) {
    return refuse('INVALID_INPUT', `The idempotency key is malformed. ${describeKeyRules()}`, key);
  }
  const breach = checkInputLimits(request.input, options.limits ?? defaultPayloadLimits);
  if (breach) return refuse('PAYLOAD_TOO_LARGE', breach.message, key);
  try {
    return { key, fingerprint: callFingerprint(request.tool, request.input, options.sha256Hex) };
  } catch {
    return refuse('INVALID_INPUT', 'The arguments must be plain JSON values.', key);
  }
}

/** Whether the tool name is longer than any tool's (see `maxRequestedToolNameLength`). */
function isLongToolName(request: CallRequest): boolean {
  return typeof request.tool === 'string' && request.tool.length > maxRequestedToolNameLength;
}

/**
 * The refusal of a tool name longer than any tool can have. Nothing is started for such a name, so
 * the model cannot put megabytes into a record or an index through the name alone.
 */
function longToolNameRecord(request: CallRequest, context: CallContext): CallRecord {
  return refusedCallRecord({
    request: { ...request, tool: `${request.tool.slice(0, 40)}…` },
    context,
    key: undefined,
    fingerprint: '',
    reason: 'NOT_ALLOWED',
    message:
      `No tool has a name this long (${request.tool.length} characters; tool names have at most 64). ` +
      'Use only the tools listed in your tool definitions, spelled exactly.',
  });
}

/** The record of a call refused before any workflow started (KEY_MISMATCH, a malformed key…). */
export function refusedCallRecord(options: {
  readonly request: CallRequest;
  readonly context: CallContext;
  readonly key: string | undefined;
  readonly fingerprint: string;
  readonly reason: ReasonCode;
  readonly message: string;
  /** The tool's tier, when the caller's catalog knows the tool. */
  readonly tier?: SideEffectTier | undefined;
}): CallRecord {
  const at = new Date().toISOString();
  return {
    callId: '',
    runId: '',
    tool: options.request.tool,
    ...(options.tier ? { tier: options.tier } : {}),
    tenant: options.context.tenant,
    principal: options.context.principal,
    principalKind: options.context.principalKind,
    ...(options.key !== undefined ? { key: options.key } : {}),
    fingerprint: options.fingerprint,
    input: null,
    status: 'denied',
    effect: 'none',
    reason: options.reason,
    message: options.message,
    attempts: 0,
    transitions: [
      { status: 'pending', at },
      { status: 'denied', at },
    ],
    refusedDecisions: [],
    synthetic: true,
  };
}

/** A call whose workflow was terminated or timed out by the server: nobody can say whether it acted. */
export function abnormalCallRecord(
  callId: string,
  status: Extract<CallStatus, 'failed' | 'timeout'>,
  message: string,
): CallRecord {
  return {
    callId,
    runId: '',
    tool: 'unknown',
    tenant: 'unknown',
    principal: 'unknown',
    principalKind: 'service',
    fingerprint: '',
    input: null,
    status,
    effect: 'unknown',
    reason: 'OUTCOME_UNKNOWN',
    message,
    attempts: 0,
    transitions: [{ status, at: new Date().toISOString() }],
    refusedDecisions: [],
    synthetic: true,
  };
}
