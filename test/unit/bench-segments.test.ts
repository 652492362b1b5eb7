import { readFile } from 'node:fs/promises';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils.js';
import { describe, expect, it } from 'vitest';
import { callSegments, meanSegments, segmentNames } from '../../bench/segments.ts';
import { renderLatencyReport } from '../support/bench-cells.ts';

const fixture = new URL('../fixtures/histories/protocol-2/succeeded.json', import.meta.url);

/** A recorded toolgate call (12 events): its start event is at 15:32:49.656522681 UTC, its close at .858009878. */
async function recordedCall() {
  const history = historyFromJSON(JSON.parse(await readFile(fixture, 'utf8')));
  const startEventMs = Date.parse('2026-11-30T15:32:49.656Z') + 0.522681;
  const closeEventMs = Date.parse('2026-11-30T15:32:49.858Z') + 0.009878;
  return { events: history.events ?? [], startEventMs, closeEventMs };
}

/** A history event with only an id, a time in ms after `base`, and one attribute. */
function event(eventId: number, atMs: number, attributes: Record<string, unknown>) {
  const base = Date.parse('2026-12-01T10:00:00Z');
  const time = base + atMs;
  return {
    eventId,
    eventTime: { seconds: Math.floor(time / 1000), nanos: (time % 1000) * 1e6 },
    ...attributes,
  };
}

describe('splitting a call by its history', () => {
  it('places every part of a recorded call, and the parts add up to what the caller saw', async () => {
    const { events, startEventMs, closeEventMs } = await recordedCall();
    const segments = callSegments(events, {
      workflowId: 'recorded',
      startedAtMs: startEventMs - 1.25,
      endedAtMs: closeEventMs + 2.5,
    });
    // Worked out by hand from the fixture's event times (milliseconds within second 49):
    // workflow tasks 681.426692 → 808.033150 and 838.600425 → 857.001569, scheduled at
    // 656.663539 and 832.553492; the activity scheduled at 808.225761 and completed at 832.544576.
    expect(segments.start).toBeCloseTo(1.25, 3);
    expect(segments.queue).toBeCloseTo(24.763153 + 6.046933, 3);
    expect(segments.workflowTasks).toBeCloseTo(126.606458 + 18.401144, 3);
    expect(segments.activities).toBeCloseTo(24.318815, 3);
    expect(segments.other).toBeCloseTo(1.350694, 3);
    expect(segments.result).toBeCloseTo(2.5, 3);
    expect(segments.total).toBeCloseTo(201.487197 + 3.75, 3);
    const sum = segmentNames.reduce((total, name) => total + segments[name], 0);
    expect(sum).toBeCloseTo(segments.total, 6);
  });

  it('counts a task that timed out before a worker took it as queue time, and a timer as other', () => {
    const events = [
      event(1, 0, { workflowExecutionStartedEventAttributes: {} }),
      event(2, 0.5, { workflowTaskScheduledEventAttributes: {} }),
      // Nobody took the first task within its schedule-to-start timeout: no started event.
      event(3, 10.5, { workflowTaskTimedOutEventAttributes: { scheduledEventId: 2, startedEventId: 0 } }),
      event(4, 10.5, { workflowTaskScheduledEventAttributes: {} }),
      event(5, 12, { workflowTaskStartedEventAttributes: { scheduledEventId: 4 } }),
      event(6, 15, { workflowTaskCompletedEventAttributes: { scheduledEventId: 4, startedEventId: 5 } }),
      event(7, 15, { timerStartedEventAttributes: {} }),
      event(8, 115, { timerFiredEventAttributes: {} }),
      event(9, 115, { workflowTaskScheduledEventAttributes: {} }),
      event(10, 116, { workflowTaskStartedEventAttributes: { scheduledEventId: 9 } }),
      event(11, 118, { workflowTaskFailedEventAttributes: { scheduledEventId: 9, startedEventId: 10 } }),
      event(12, 118, { workflowTaskScheduledEventAttributes: {} }),
      event(13, 119, { workflowTaskStartedEventAttributes: { scheduledEventId: 12 } }),
      event(14, 121, { workflowTaskCompletedEventAttributes: { scheduledEventId: 12, startedEventId: 13 } }),
      event(15, 121, { activityTaskScheduledEventAttributes: {} }),
      event(16, 122, { activityTaskStartedEventAttributes: { scheduledEventId: 15 } }),
      event(17, 130, { activityTaskFailedEventAttributes: { scheduledEventId: 15, startedEventId: 16 } }),
      event(18, 130, { workflowTaskScheduledEventAttributes: {} }),
      event(19, 131, { workflowTaskStartedEventAttributes: { scheduledEventId: 18 } }),
      event(20, 134, { workflowTaskCompletedEventAttributes: { scheduledEventId: 18, startedEventId: 19 } }),
      event(21, 134, { workflowExecutionFailedEventAttributes: {} }),
    ];
    const base = Date.parse('2026-12-01T10:00:00Z');
    const segments = callSegments(events as never, {
      workflowId: 'w',
      startedAtMs: base - 2,
      endedAtMs: base + 137,
    });
    // Queue: 10.5 - 0.5 before the timeout, then 1.5, 1, 1 and 1 for the four tasks that started.
    expect(segments.queue).toBeCloseTo(10 + 1.5 + 1 + 1 + 1, 6);
    // Workflow tasks: 3, 2 (the failed one), 2 and 3.
    expect(segments.workflowTasks).toBeCloseTo(3 + 2 + 2 + 3, 6);
    expect(segments.activities).toBeCloseTo(9, 6);
    // The timer's 100 ms, plus the half millisecond before the first task was scheduled.
    expect(segments.other).toBeCloseTo(100.5, 6);
    expect(segments.start).toBeCloseTo(2, 6);
    expect(segments.result).toBeCloseTo(3, 6);
    expect(segments.total).toBeCloseTo(139, 6);
  });

  it('refuses a history that does not begin with the start or end with the close, or lacks a referenced event', () => {
    const timing = { workflowId: 'broken', startedAtMs: 0, endedAtMs: 1 };
    expect(() => callSegments([], timing)).toThrow(/broken: the history does not begin/);
    const orphan = [
      event(1, 0, { workflowExecutionStartedEventAttributes: {} }),
      event(2, 1, { workflowTaskStartedEventAttributes: { scheduledEventId: 7 } }),
    ];
    expect(() => callSegments(orphan as never, timing)).toThrow(/broken: the history does not end with/);
    const closedOrphan = [...orphan, event(3, 2, { workflowExecutionCompletedEventAttributes: {} })];
    expect(() => callSegments(closedOrphan as never, timing)).toThrow(/broken: history event 7 is missing/);
  });

  it('averages the parts of many calls, and has nothing to say about none', async () => {
    const { events, startEventMs, closeEventMs } = await recordedCall();
    const fast = callSegments(events, {
      workflowId: 'a',
      startedAtMs: startEventMs - 1,
      endedAtMs: closeEventMs + 1,
    });
    const slow = callSegments(events, {
      workflowId: 'b',
      startedAtMs: startEventMs - 3,
      endedAtMs: closeEventMs + 5,
    });
    const cell = meanSegments('C', 'c1', [fast, slow]);
    expect(cell).toMatchObject({ variant: 'C', condition: 'c1', calls: 2 });
    expect(cell?.meanMs.start).toBeCloseTo(2, 3);
    expect(cell?.meanMs.result).toBeCloseTo(3, 3);
    expect(cell?.meanMs.total).toBeCloseTo(201.487 + 5, 2);
    expect(meanSegments('C', 'c1', [])).toBeUndefined();
    expect(meanSegments('C', 'c1', [fast], 3)).toMatchObject({ calls: 1, skipped: 3 });
    expect(cell).not.toHaveProperty('skipped');
  });

  it('reports the mean parts with their difference from B', () => {
    const meanMs = (total: number) => ({
      start: 1,
      queue: 2,
      workflowTasks: total - 6,
      activities: 2,
      other: 0,
      result: 1,
      total,
    });
    const markdown = renderLatencyReport({
      segments: [
        { variant: 'C', condition: 'c1', calls: 30, meanMs: meanMs(21.5) },
        { variant: 'B', condition: 'c1', calls: 30, meanMs: meanMs(19.25) },
        {
          variant: 'B-twin',
          condition: 'c1',
          calls: 28,
          skipped: 2,
          meanMs: { ...meanMs(19.248), start: 0.996 },
        },
      ],
    });
    expect(markdown).toContain('## Where the time goes');
    // A difference that rounds to zero reads +0.00, whichever side of zero it was on.
    expect(markdown).toContain('| B-twin | 28 (2 not split) | 1.00 (+0.00) | 2.00 (+0.00) | 13.25 (+0.00) |');
    expect(markdown).toContain('| B | 30 | 1.00 | 2.00 | 13.25 | 2.00 | 0.00 | 1.00 | 19.25 |');
    expect(markdown).toContain(
      '| C | 30 | 1.00 (+0.00) | 2.00 (+0.00) | 15.50 (+2.25) | 2.00 (+0.00) | 0.00 (+0.00) | 1.00 (+0.00) | 21.50 (+2.25) |',
    );
  });
});
