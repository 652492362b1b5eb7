import type { CallEffect, CallStatus } from '../contracts/call-record.ts';
import type { SideEffectTier } from '../contracts/tier.ts';

/** Filters for {@link ToolgateOperations.list}. Every filter is an exact match on a search attribute. */
export interface ListFilters {
  readonly status?: CallStatus | readonly CallStatus[];
  readonly tool?: string;
  readonly tenant?: string;
  readonly effect?: CallEffect;
  readonly principal?: string;
  readonly tier?: SideEffectTier;
  readonly reason?: string;
  /** Only calls started at or after this time: a Date, an ISO timestamp, or a duration like `1h`. */
  readonly since?: Date | string;
  /** At most this many calls, in the order of `list`. Default 100. */
  readonly limit?: number;
}

const keywordValuePattern = /^[A-Za-z0-9_.:@/~-]{1,256}$/;

/**
 * The visibility query for a set of filters. Values are checked against a strict character set
 * rather than escaped, so a filter can never change the shape of the query.
 */
export function buildListQuery(filters: ListFilters, workflowType = 'toolCall', nowMs = Date.now()): string {
  const clauses = [`WorkflowType = ${quote(workflowType, 'workflow type')}`];
  const statuses =
    filters.status === undefined
      ? []
      : typeof filters.status === 'string'
        ? [filters.status]
        : filters.status;
  if (statuses.length === 1) clauses.push(`CallStatus = ${quote(statuses[0]!, 'status')}`);
  if (statuses.length > 1) {
    clauses.push(`CallStatus IN (${statuses.map((status) => quote(status, 'status')).join(', ')})`);
  }
  const exact: Array<[string, string | undefined, string]> = [
    ['ToolName', filters.tool, 'tool'],
    ['Tenant', filters.tenant, 'tenant'],
    ['CallEffect', filters.effect, 'effect'],
    ['Principal', filters.principal, 'principal'],
    ['ToolTier', filters.tier, 'tier'],
    ['ReasonCode', filters.reason, 'reason'],
  ];
  for (const [attribute, value, what] of exact) {
    if (value !== undefined) clauses.push(`${attribute} = ${quote(value, what)}`);
  }
  if (filters.since !== undefined) {
    clauses.push(`StartTime >= '${parseSince(filters.since, nowMs).toISOString()}'`);
  }
  return clauses.join(' AND ');
}

function quote(value: string, what: string): string {
  if (!keywordValuePattern.test(value)) {
    throw new RangeError(
      `The ${what} filter ${JSON.stringify(value.slice(0, 64))} has characters a filter may not contain; use letters, digits and _ . : @ / ~ -.`,
    );
  }
  return `'${value}'`;
}

const durationUnits: Record<string, number> = {
  s: 1_000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 604_800_000,
};

/** `1h`, `30m`, `2d`, `90s`, `1w`, or an ISO timestamp, as a point in time. */
export function parseSince(since: Date | string, nowMs = Date.now()): Date {
  if (since instanceof Date) return since;
  const match = /^(\d{1,6})([smhdw])$/.exec(since.trim());
  if (match) {
    const unit = durationUnits[match[2]!]!;
    return new Date(nowMs - Number(match[1]) * unit);
  }
  // Only an ISO date or timestamp: Date.parse alone reads `90` as the year 1990 and `5 May` as a
  // date in some year it guesses, and a list or replay over the wrong window is worse than an error.
  const iso = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/i;
  const parsed = iso.test(since.trim()) ? Date.parse(since.trim()) : Number.NaN;
  if (Number.isNaN(parsed)) {
    throw new RangeError(
      `--since ${JSON.stringify(since)} is not a duration (e.g. 90s, 30m, 1h, 2d, 1w) or an ISO timestamp (e.g. 2025-05-01 or 2025-05-01T09:30:00Z). A bare number needs a unit: 90s, 90m.`,
    );
  }
  return new Date(parsed);
}
