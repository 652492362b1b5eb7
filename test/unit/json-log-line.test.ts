import type { LogEntry } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import { jsonLogLine } from '../../src/worker/runtime-logging.ts';

const at = BigInt(Date.parse('2026-12-06T21:00:00.000Z')) * 1_000_000n;

function parse(entry: LogEntry): Record<string, unknown> {
  const line = jsonLogLine(entry);
  // One line per entry, whatever the message holds.
  expect(line.endsWith('\n')).toBe(true);
  expect(line.slice(0, -1)).not.toContain('\n');
  return JSON.parse(line) as Record<string, unknown>;
}

describe('a worker log line', () => {
  it('is one JSON object with time, level, message, and the call, tool and tenant first', () => {
    const line = parse({
      level: 'WARN',
      message: 'tool failed\nsecond line',
      timestampNanos: at,
      meta: { callId: 'toolgate/acme/read_config/~1', tool: 'read_config', tenant: 'acme', attempt: 1 },
    });
    expect(line).toEqual({
      time: '2026-12-06T21:00:00.000Z',
      level: 'warn',
      message: 'tool failed\nsecond line',
      callId: 'toolgate/acme/read_config/~1',
      tool: 'read_config',
      tenant: 'acme',
      attempt: 1,
    });
    expect(Object.keys(line).slice(0, 6)).toEqual(['time', 'level', 'message', 'callId', 'tool', 'tenant']);
  });

  it("takes a toolCall workflow's ID as the call ID, never another workflow's", () => {
    const activity = parse({
      level: 'INFO',
      message: 'Activity started',
      timestampNanos: at,
      meta: { workflowId: 'toolgate/acme/slow_search/~2', workflowType: 'toolCall', activityType: 'runTool' },
    });
    expect(activity['callId']).toBe('toolgate/acme/slow_search/~2');
    const entity = parse({
      level: 'INFO',
      message: 'Workflow started',
      timestampNanos: at,
      meta: { workflowId: 'toolgate-admission/q/tool:x', workflowType: 'toolgateAdmission' },
    });
    expect(entity['callId']).toBeUndefined();
    expect(entity['workflowId']).toBe('toolgate-admission/q/tool:x');
  });

  it('withholds task tokens and argument values, and writes big integers as text', () => {
    const line = parse({
      level: 'INFO',
      message: 'Activity started',
      timestampNanos: at,
      meta: {
        taskToken: 'Q2lTRUNSRVQ=',
        input: { apiKey: 'sk_live_abc' },
        args: ['sk_live_abc'],
        output: { token: 'sk_live_abc' },
        durationNanos: 12n,
      },
    });
    expect(JSON.stringify(line)).not.toContain('sk_live_abc');
    expect(line).not.toHaveProperty('taskToken');
    expect(line['durationNanos']).toBe('12');
  });

  it('gives an error its type and message, and its stack only at level error', () => {
    const error = new TypeError('boom');
    const warn = parse({ level: 'WARN', message: 'Activity failed', timestampNanos: at, meta: { error } });
    expect(warn['error']).toEqual({ type: 'TypeError', message: 'boom' });
    const failed = parse({ level: 'ERROR', message: 'tool threw', timestampNanos: at, meta: { error } });
    expect(failed['error']).toMatchObject({ type: 'TypeError', message: 'boom' });
    expect(String((failed['error'] as { stack?: unknown }).stack)).toContain('json-log-line.test.ts');
  });
});
