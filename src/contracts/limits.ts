/**
 * Size limits for arguments and results. They sit well under Temporal's 2 MiB payload limit so a
 * breach is refused with PAYLOAD_TOO_LARGE and guidance, instead of a server error or a terminated
 * workflow.
 */
export interface PayloadLimits {
  /** Maximum size of the arguments, as UTF-8 JSON bytes. */
  readonly maxInputBytes: number;
  /** Maximum nesting depth of objects and arrays in the arguments. */
  readonly maxDepth: number;
  /** Maximum length of any single string in the arguments, in UTF-16 code units. */
  readonly maxStringLength: number;
  /** Maximum size of a tool's result, as UTF-8 JSON bytes. */
  readonly maxOutputBytes: number;
}

/**
 * The longest tool name a client passes on to a workflow. No tool can have a longer one (contracts
 * allow 64 characters); a longer name is refused NOT_ALLOWED before anything is started, so a model
 * cannot put megabytes into a call ID, a record and an index through the name alone. Shorter
 * unknown names still start a call that the allowlist denies, so they stay on record.
 */
export const maxRequestedToolNameLength = 128;

/**
 * How much longer than a tool's own deadline the server's start-to-close timer runs, so the executor's
 * deadline fires first; a stopping worker waits this long past the deadline too.
 */
export const defaultDeadlineGraceMs = 1_000;

/**
 * Liveness (docs/design.md "Liveness and cancellation"): a tool whose attempt may run longer than
 * this (deadline plus grace) gets it as a heartbeat timeout, so a dead worker is noticed within
 * it; a shorter tool relies on its start-to-close alone. Long enough that a busy worker is never
 * taken for a dead one: the worst start delay measured under CPU starvation was 6.7 s on a loaded
 * two-core cluster, 0.6 s on the dev server with one busy loop per core.
 */
export function livenessTimeoutFor(
  startToCloseMs: number,
  livenessMs = defaultLivenessMs,
): number | undefined {
  return startToCloseMs > livenessMs ? livenessMs : undefined;
}

export const defaultLivenessMs = 15_000;

/**
 * How often a running tool heartbeats; the worker's heartbeat throttle is the same. A cancel
 * reaches a tool only in a heartbeat's answer, so this bounds how long a cancel waits at the
 * tool: three heartbeat requests per second per running tool.
 */
export const heartbeatIntervalMs = 333;

export const defaultPayloadLimits: PayloadLimits = {
  maxInputBytes: 256 * 1024,
  maxDepth: 32,
  maxStringLength: 64 * 1024,
  maxOutputBytes: 1024 * 1024,
};

export interface LimitBreach {
  readonly limit: keyof PayloadLimits;
  readonly message: string;
}

/** UTF-8 length of a string without TextEncoder, which the workflow sandbox may lack. */
export function utf8Length(text: string): number {
  let bytes = 0;
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (code < 0x80) bytes += 1;
    else if (code < 0x800) bytes += 2;
    else if (code >= 0xd800 && code <= 0xdbff && index + 1 < text.length) {
      bytes += 4;
      index++;
    } else bytes += 3;
  }
  return bytes;
}

/**
 * Checks depth and string length by walking the value, then the byte size of its JSON. Walking first
 * means a hostile, deeply nested value is refused before JSON.stringify could overflow the stack.
 */
export function checkInputLimits(
  input: unknown,
  limits: PayloadLimits = defaultPayloadLimits,
): LimitBreach | undefined {
  const stack: Array<{ value: unknown; depth: number }> = [{ value: input, depth: 0 }];
  while (stack.length > 0) {
    const { value, depth } = stack.pop()!;
    if (typeof value === 'string') {
      if (value.length > limits.maxStringLength) {
        return {
          limit: 'maxStringLength',
          message: `A string argument is ${value.length} characters long; the limit is ${limits.maxStringLength}. Send a shorter value or a reference to the data instead.`,
        };
      }
    } else if (value !== null && typeof value === 'object') {
      if (depth >= limits.maxDepth) {
        return {
          limit: 'maxDepth',
          message: `The arguments nest deeper than ${limits.maxDepth} levels. Flatten the structure.`,
        };
      }
      for (const child of Object.values(value as Record<string, unknown>))
        stack.push({ value: child, depth: depth + 1 });
    }
  }
  let size: number;
  try {
    size = utf8Length(JSON.stringify(input) ?? '');
  } catch {
    return { limit: 'maxInputBytes', message: 'The arguments cannot be encoded as JSON.' };
  }
  if (size > limits.maxInputBytes) {
    return {
      limit: 'maxInputBytes',
      message: `The arguments are ${size} bytes; the limit is ${limits.maxInputBytes}. Send less data, or a reference to it.`,
    };
  }
  return undefined;
}

/** What JSON calls a plain value's kind, for objects that only look like JSON. */
const nonJsonObjects: Readonly<Record<string, string>> = {
  Date: 'a Date; send it as an ISO 8601 string, e.g. date.toISOString()',
  Map: 'a Map; send a plain object, e.g. Object.fromEntries(map)',
  Set: 'a Set; send an array, e.g. [...set]',
};

/**
 * Why a value cannot travel as a call's JSON arguments, naming where it sits (`input.items[2].at`),
 * or undefined for plain JSON: objects, arrays, strings, finite numbers, booleans and null. A Date,
 * a Map, a BigInt or a class instance would reach the tool as something other than what the caller
 * sent, or not at all, so each is refused with what to send instead.
 */
export function jsonValueProblem(value: unknown, path = 'input'): string | undefined {
  type Step = { value: unknown; path: string; inArray: boolean } | { leave: object };
  const stack: Step[] = [{ value, path, inArray: false }];
  // The objects on the way from the root to the one being read: meeting one again is a cycle
  // (the same object twice side by side is not, and JSON carries it twice).
  const ancestors = new Set<object>();
  while (stack.length > 0) {
    const step = stack.pop()!;
    if ('leave' in step) {
      ancestors.delete(step.leave);
      continue;
    }
    const problem =
      scalarProblem(step.value, step.path, step.inArray) ?? objectProblem(step.value, step.path, ancestors);
    if (problem !== undefined) return problem;
    if (typeof step.value !== 'object' || step.value === null) continue;
    ancestors.add(step.value);
    stack.push({ leave: step.value });
    if (Array.isArray(step.value)) {
      step.value.forEach((child, index) => {
        stack.push({ value: child, path: `${step.path}[${index}]`, inArray: true });
      });
      continue;
    }
    for (const [key, child] of Object.entries(step.value)) {
      const name = /^[A-Za-z_$][\w$]*$/.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`;
      stack.push({ value: child, path: `${step.path}${name}`, inArray: false });
    }
  }
  return undefined;
}

/** Why an object cannot be sent as it is: a cycle, or not a plain object or array. */
function objectProblem(value: unknown, path: string, ancestors: ReadonlySet<object>): string | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  if (ancestors.has(value))
    return `${path} refers back to a value that contains it; JSON cannot carry a cycle.`;
  if (Array.isArray(value)) return undefined;
  const prototype = Object.getPrototypeOf(value) as object | null;
  if (prototype === Object.prototype || prototype === null) return undefined;
  const name = (prototype as { constructor?: { name?: unknown } }).constructor?.name;
  const kind = typeof name === 'string' && name !== '' ? name : 'object';
  return `${path} is ${nonJsonObjects[kind] ?? `a ${kind} instance; send plain JSON (objects, arrays, strings, numbers, booleans, null)`}.`;
}

function scalarProblem(value: unknown, path: string, inArray: boolean): string | undefined {
  switch (typeof value) {
    case 'bigint':
      return `${path} is a BigInt; send it as a number if it fits, or as a string.`;
    case 'number':
      return Number.isFinite(value)
        ? undefined
        : `${path} is ${value}; JSON has no such number: send a finite number or null.`;
    case 'undefined':
      // An object field that is undefined is left out, as JSON does; elsewhere there is no value.
      return inArray || path === 'input'
        ? `${path} is undefined; JSON has no such value: send null or leave it out.`
        : undefined;
    case 'function':
    case 'symbol':
      return `${path} is a ${typeof value}; only JSON values can be sent.`;
    default:
      return undefined;
  }
}
