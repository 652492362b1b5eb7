/**
 * Canonical JSON: object keys sorted by code unit, no whitespace, and only values JSON can carry.
 * Two inputs that mean the same get the same text, so their fingerprints match. It throws rather than
 * guess on values JSON has no form for (undefined in arrays, NaN, functions, cycles).
 */
export function canonicalJson(value: unknown): string {
  return write(value, new Set());
}

function write(value: unknown, ancestors: Set<object>): string {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError('canonical JSON cannot encode a non-finite number');
      return JSON.stringify(value);
    case 'object':
      break;
    default:
      throw new TypeError(`canonical JSON cannot encode a value of type ${typeof value}`);
  }
  const object = value as object;
  if (ancestors.has(object)) throw new TypeError('canonical JSON cannot encode a cycle');
  ancestors.add(object);
  let text: string;
  if (Array.isArray(object)) {
    text = `[${object.map((item) => write(item, ancestors)).join(',')}]`;
  } else {
    const record = object as Record<string, unknown>;
    const keys = Object.keys(record)
      .filter((key) => record[key] !== undefined)
      .sort();
    text = `{${keys.map((key) => `${JSON.stringify(key)}:${write(record[key], ancestors)}`).join(',')}}`;
  }
  ancestors.delete(object);
  return text;
}
