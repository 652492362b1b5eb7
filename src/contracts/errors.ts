/**
 * toolgate's one family of errors. Each carries a `code`: a reason code (`reason-codes.ts`) when it
 * is about one call, or one of the operational codes below when it is about running toolgate.
 * `instanceof` answers by a global symbol, not by the class object, so it holds across two copies
 * of toolgate in one process and across realms (the workflow sandbox). Workflow-safe: no Node.
 */
import type { CallEffect } from './call-record.ts';
import { type ReasonCode, reasonCodes } from './reason-codes.ts';

/** What went wrong around calls rather than in one: each with what to do about it. */
export const OperationalCode = {
  /** toolgate was called the wrong way: a programming or command-line mistake. */
  USAGE: 'USAGE',
  /** A config, a key file or the cluster's setup is wrong. */
  CONFIG: 'CONFIG',
  /** The cluster, its namespace or its workers cannot be reached right now. */
  UNAVAILABLE: 'UNAVAILABLE',
  /** No such call, or no such run of it. */
  NOT_FOUND: 'NOT_FOUND',
  /** Another live process holds a resource (a dev server's database). */
  IN_USE: 'IN_USE',
} as const;
export type OperationalCode = (typeof OperationalCode)[keyof typeof OperationalCode];

/** Every code a toolgate error may carry. */
export type ToolgateErrorCode = ReasonCode | OperationalCode;

/** Whether a value is one of the codes a toolgate error may carry. */
export function isToolgateErrorCode(value: unknown): value is ToolgateErrorCode {
  return (
    typeof value === 'string' && (Object.hasOwn(reasonCodes, value) || Object.hasOwn(OperationalCode, value))
  );
}

/**
 * Makes `instanceof type` answer by a symbol from the global registry that every instance carries
 * on its prototype chain, instead of by the class object, which differs between copies of a module.
 */
function brand(type: abstract new (...args: never[]) => Error, name: string): void {
  const mark = Symbol.for(`toolgate.error.${name}`);
  Object.defineProperty(type.prototype, mark, { value: true });
  Object.defineProperty(type, Symbol.hasInstance, {
    value: (value: unknown) =>
      typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[mark] === true,
  });
}

/** The base of every error toolgate throws on purpose. */
export class ToolgateError extends Error {
  override readonly name: string = 'ToolgateError';
  readonly code: ToolgateErrorCode;
  constructor(code: ToolgateErrorCode, message: string, options?: { readonly cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
  }
}
brand(ToolgateError, 'ToolgateError');

/** A programming error in how toolgate is called: wrong context, missing signer. Not a model error. */
export class ToolgateUsageError extends ToolgateError {
  override readonly name = 'ToolgateUsageError';
  constructor(message: string, options?: { readonly cause?: unknown }) {
    super('USAGE', message, options);
  }
}
brand(ToolgateUsageError, 'ToolgateUsageError');

/**
 * The cluster cannot take toolgate's calls as it is: its namespace lacks toolgate's search
 * attributes. The message says how to register them.
 */
export class ClusterNotReadyError extends ToolgateError {
  override readonly name = 'ClusterNotReadyError';
  constructor(message: string, options?: { readonly cause?: unknown }) {
    super('CONFIG', message, options);
  }
}
brand(ClusterNotReadyError, 'ClusterNotReadyError');

/**
 * No worker answered or ran a call: none polls its task queue, or all are busy. The call stays
 * open and runs when a worker does.
 */
export class NoWorkerAnsweredError extends ToolgateError {
  override readonly name: string = 'NoWorkerAnsweredError';
  constructor(message: string, options?: { readonly cause?: unknown }) {
    super('UNAVAILABLE', message, options);
  }
}
brand(NoWorkerAnsweredError, 'NoWorkerAnsweredError');

/** No cluster was found, or it does not answer; the message names where the address came from. */
export class EndpointUnavailableError extends ToolgateError {
  override readonly name = 'EndpointUnavailableError';
  constructor(message: string, options?: { readonly cause?: unknown }) {
    super('UNAVAILABLE', message, options);
  }
}
brand(EndpointUnavailableError, 'EndpointUnavailableError');

/** A config or key file that cannot be used; the message names the file, the field and the fix. */
export class ConfigError extends ToolgateError {
  override readonly name = 'ConfigError';
  constructor(message: string, options?: { readonly cause?: unknown }) {
    super('CONFIG', message, options);
  }
}
brand(ConfigError, 'ConfigError');

/**
 * A run of a call that does not exist, while the call does: the message says so (a plain "not
 * found" would say the call does not exist).
 */
export class UnknownRunError extends ToolgateError {
  override readonly name = 'UnknownRunError';
  readonly workflowId: string;
  readonly runId: string;
  constructor(message: string, workflowId: string, runId: string) {
    super('NOT_FOUND', message);
    this.workflowId = workflowId;
    this.runId = runId;
  }
}
brand(UnknownRunError, 'UnknownRunError');

/**
 * The ID names a workflow that is not a toolgate call, such as the undo of a call
 * (`<call id>/undo`); the message says what the ID is and which call to read instead.
 */
export class NotACallError extends ToolgateError {
  override readonly name = 'NotACallError';
  readonly workflowId: string;
  /** The call this workflow belongs to, when it is a call's undo. */
  readonly belongsTo: string | undefined;
  constructor(message: string, workflowId: string, belongsTo: string | undefined) {
    super('NOT_FOUND', message);
    this.workflowId = workflowId;
    this.belongsTo = belongsTo;
  }
}
brand(NotACallError, 'NotACallError');

/** Another live process holds the database; the message says which and what to do. */
export class DatabaseInUseError extends ToolgateError {
  override readonly name = 'DatabaseInUseError';
  constructor(message: string, options?: { readonly cause?: unknown }) {
    super('IN_USE', message, options);
  }
}
brand(DatabaseInUseError, 'DatabaseInUseError');

/**
 * A key function (the contract's or the caller's) threw for these arguments: the call is refused
 * INVALID_INPUT, and nothing is started.
 */
export class KeyDerivationError extends ToolgateError {
  override readonly name = 'KeyDerivationError';
  constructor(message: string, options?: { readonly cause?: unknown }) {
    super('INVALID_INPUT', message, options);
  }
}
brand(KeyDerivationError, 'KeyDerivationError');

/**
 * Decision claims that break the rules the workers check them by: signing them would only produce
 * a decision the worker refuses, so they are refused before anything is signed or sent.
 */
export class InvalidDecisionClaimsError extends ToolgateError {
  override readonly name = 'InvalidDecisionClaimsError';
  constructor(message: string) {
    super('USAGE', message);
  }
}
brand(InvalidDecisionClaimsError, 'InvalidDecisionClaimsError');

/**
 * An error a tool raises on purpose. Its message is shown to the model, so it must be safe: no
 * paths, hosts or secrets. Say `effect: 'none'` when the tool knows it changed nothing, so the key
 * can be released, and `retryable: false` when repeating the call cannot help.
 */
export class ToolError extends ToolgateError {
  override readonly name = 'ToolError';
  readonly effect: CallEffect | undefined;
  readonly retryable: boolean;
  constructor(message: string, options: { effect?: CallEffect; retryable?: boolean; cause?: unknown } = {}) {
    super('TOOL_FAILED', message, options.cause === undefined ? undefined : { cause: options.cause });
    this.effect = options.effect;
    this.retryable = options.retryable ?? true;
  }
}
brand(ToolError, 'ToolError');

/**
 * A refusal from an execution-time check (a path that escapes its sandbox, a URL that resolves to a
 * private address). It always happens before the side effect, so the call ends `denied`.
 */
export class ToolDenied extends ToolgateError {
  override readonly name = 'ToolDenied';
  readonly reason: 'NOT_ALLOWED' | 'INVALID_INPUT';
  constructor(message: string, reason: 'NOT_ALLOWED' | 'INVALID_INPUT' = 'INVALID_INPUT') {
    super(reason, message);
    this.reason = reason;
  }
}
brand(ToolDenied, 'ToolDenied');
