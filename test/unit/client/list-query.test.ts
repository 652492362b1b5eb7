import { describe, expect, it } from 'vitest';
import { buildListQuery, parseSince } from '../../../src/client/operations.ts';

describe('buildListQuery', () => {
  const now = Date.parse('2025-06-01T12:00:00.000Z');

  it('combines exact filters, several statuses and a relative start time', () => {
    expect(
      buildListQuery(
        {
          status: ['failed', 'timeout'],
          tool: 'read_config',
          tenant: 'acme',
          effect: 'unknown',
          since: '1h',
        },
        'toolCall',
        now,
      ),
    ).toBe(
      "WorkflowType = 'toolCall' AND CallStatus IN ('failed', 'timeout') AND ToolName = 'read_config' AND Tenant = 'acme' AND CallEffect = 'unknown' AND StartTime >= '2025-06-01T11:00:00.000Z'",
    );
  });

  it('refuses a value that could change the shape of the query', () => {
    expect(() => buildListQuery({ tool: "x' OR WorkflowType != '" })).toThrow(
      /characters a filter may not contain/,
    );
    expect(() => buildListQuery({ tenant: '' })).toThrow(RangeError);
  });

  it('parses durations and ISO times, and explains a bad one', () => {
    expect(parseSince('30m', now).toISOString()).toBe('2025-06-01T11:30:00.000Z');
    expect(parseSince('2d', now).toISOString()).toBe('2025-05-30T12:00:00.000Z');
    expect(parseSince('2025-05-01T00:00:00Z', now).toISOString()).toBe('2025-05-01T00:00:00.000Z');
    expect(() => parseSince('yesterday', now)).toThrow(/not a duration/);
    expect(parseSince('2025-05-01', now).toISOString()).toBe('2025-05-01T00:00:00.000Z');
    expect(parseSince('2025-05-01T09:30:00+02:00', now).toISOString()).toBe('2025-05-01T07:30:00.000Z');
    // Date.parse alone read a bare number as a year (90 → 1990) and guessed at loose dates.
    expect(() => parseSince('90', now)).toThrow(/A bare number needs a unit/);
    expect(() => parseSince('5 May', now)).toThrow(/not a duration/);
    expect(() => parseSince('2025', now)).toThrow(/not a duration/);
  });
});
