import { sha256Hex } from './fingerprint.ts';

/** Idempotency keys: short, and only characters that are safe in IDs, logs and queries. */
export const idempotencyKeyPattern = /^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,127}$/;
/** Tenants and tool names that can appear in a call ID as they are. */
export const namePattern = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

/** The prefix of every toolgate workflow ID, so operators can tell calls apart from other workflows. */
export const callIdPrefix = 'toolgate';

export function describeKeyRules(): string {
  return 'An idempotency key is 1 to 128 characters: letters, digits and _ . : @ -, starting with a letter or digit.';
}

/**
 * The segment a tool name takes in a call ID. A model may invent any name; one that is not a plain
 * name is replaced by a hash, so it can never inject separators into the ID.
 */
export function toolSegment(tool: string): string {
  return namePattern.test(tool) ? tool : `invalid-${sha256Hex(tool).slice(0, 16)}`;
}

/**
 * The call ID, which is the workflow ID and so the idempotency scope: `(tenant, tool, key)`.
 * Without a key the caller supplies a fresh unique suffix, and the call deduplicates with nothing.
 */
export function callId(options: {
  tenant: string;
  tool: string;
  key?: string | undefined;
  unique: string;
}): string {
  const scope = `${callIdPrefix}/${options.tenant}/${toolSegment(options.tool)}`;
  return options.key === undefined ? `${scope}/~${options.unique}` : `${scope}/k/${options.key}`;
}
