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
