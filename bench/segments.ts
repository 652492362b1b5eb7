/**
 * Where one call's time goes, from its history's event times and the caller's clock: the part before
 * the server records the start, the waits for a worker, the worker's turns, the activities, and the
 * part after the close until the caller has the result. The parts add up to the latency the caller
 * saw, so a difference between two variants can be placed in one of them.
 *
 * Event times are the server's wall clock and the caller's times are this process's, on the same
 * machine, so no clock offset is involved. The caller's clock is performance.now() anchored to the
 * wall clock when the process started: a step of the wall clock during a run would move time from
 * the start to the result, or back, and leave their sum and the other parts as they are.
 */
import type { WorkflowHandle } from '@temporalio/client';

type HistoryEvent = NonNullable<Awaited<ReturnType<WorkflowHandle['fetchHistory']>>['events']>[number];

/** The parts of a call, in the order they happen. */
export const segmentNames = ['start', 'queue', 'workflowTasks', 'activities', 'other', 'result'] as const;
export type SegmentName = (typeof segmentNames)[number];

/** What each part covers, for the report. */
export const segmentDescriptions: Record<SegmentName, string> = {
  start: "from the caller's first line to the server's start event (client work, the start request)",
  queue:
    'workflow tasks waiting for a worker: scheduled to started, summed (an eager start hands the first one over at once)',
  workflowTasks:
    "the worker's turns: each workflow task from started to completed, summed (the worker's code, local activities, and the server taking the answer; the server stamps the completion before it stores it, so that write falls in the next part)",
  activities:
    'activities from scheduled to closed, summed (the write of the turn that scheduled them, dispatch, the run, the completion)',
  other:
    'the rest of the time between the start and the close events (timers, signals; 0.1-0.4 ms for a short call)',
  result:
    "from the close event to the caller holding the result (the last turn's write, the result's long poll and decoding)",
};

export type CallSegments = Record<SegmentName, number> & { readonly total: number };

/** The caller's side of one call, in milliseconds since the epoch (sub-millisecond resolution). */
export interface CallTiming {
  readonly workflowId: string;
  readonly startedAtMs: number;
  readonly endedAtMs: number;
}

type Timestamp = { seconds?: unknown; nanos?: number | null } | null | undefined;

function eventTimeMs(event: HistoryEvent): number {
  const time = event.eventTime as Timestamp;
  if (!time) throw new Error(`history event ${String(event.eventId)} has no time`);
  return Number(String(time.seconds ?? 0)) * 1000 + (time.nanos ?? 0) / 1e6;
}

const idOf = (value: unknown) => Number(String(value ?? 0));

/** The events that close a run. */
const closeAttributes = [
  'workflowExecutionCompletedEventAttributes',
  'workflowExecutionFailedEventAttributes',
  'workflowExecutionTimedOutEventAttributes',
  'workflowExecutionTerminatedEventAttributes',
  'workflowExecutionCanceledEventAttributes',
  'workflowExecutionContinuedAsNewEventAttributes',
] as const satisfies readonly (keyof HistoryEvent)[];

/**
 * Splits one call's latency into its parts. `events` is the call's whole history, which must be
 * closed; `timing` is when the caller started and when it held the result. Made for calls whose
 * workflow tasks and activities run one after another, as every bench variant's do: activities run
 * in parallel, or beside a workflow task, would be summed, and "other" would go negative.
 */
export function callSegments(events: readonly HistoryEvent[], timing: CallTiming): CallSegments {
  const first = events[0];
  const last = events.at(-1);
  if (!first?.workflowExecutionStartedEventAttributes || !last) {
    throw new Error(`${timing.workflowId}: the history does not begin with the workflow's start`);
  }
  if (!closeAttributes.some((field) => last[field])) {
    throw new Error(`${timing.workflowId}: the history does not end with the workflow's close`);
  }
  const timeById = new Map(events.map((event) => [idOf(event.eventId), eventTimeMs(event)]));
  const at = (id: unknown) => {
    const time = timeById.get(idOf(id));
    if (time === undefined) throw new Error(`${timing.workflowId}: history event ${String(id)} is missing`);
    return time;
  };
  let queue = 0;
  let workflowTasks = 0;
  let activities = 0;
  for (const event of events) {
    const time = eventTimeMs(event);
    const started = event.workflowTaskStartedEventAttributes;
    if (started) queue += time - at(started.scheduledEventId);
    const taskEnd =
      event.workflowTaskCompletedEventAttributes ??
      event.workflowTaskFailedEventAttributes ??
      event.workflowTaskTimedOutEventAttributes;
    if (taskEnd && idOf(taskEnd.startedEventId) > 0) workflowTasks += time - at(taskEnd.startedEventId);
    // A task that timed out before a worker took it has no started event (id 0): it waited all along.
    else if (taskEnd) queue += time - at(taskEnd.scheduledEventId);
    const activityEnd =
      event.activityTaskCompletedEventAttributes ??
      event.activityTaskFailedEventAttributes ??
      event.activityTaskTimedOutEventAttributes ??
      event.activityTaskCanceledEventAttributes;
    if (activityEnd) activities += time - at(activityEnd.scheduledEventId);
  }
  const opened = eventTimeMs(first);
  const closed = eventTimeMs(last);
  return {
    start: opened - timing.startedAtMs,
    queue,
    workflowTasks,
    activities,
    other: closed - opened - queue - workflowTasks - activities,
    result: timing.endedAtMs - closed,
    total: timing.endedAtMs - timing.startedAtMs,
  };
}

/** The mean of each part over many calls of one variant under one condition. */
export interface SegmentCell {
  readonly variant: string;
  readonly condition: string;
  readonly calls: number;
  /** Calls whose history could not be read or split (absent when none). */
  readonly skipped?: number;
  readonly meanMs: Record<SegmentName | 'total', number>;
}

export function meanSegments(
  variant: string,
  condition: string,
  calls: readonly CallSegments[],
  skipped = 0,
): SegmentCell | undefined {
  if (calls.length === 0) return undefined;
  const mean = (name: SegmentName | 'total') =>
    Math.round((calls.reduce((sum, call) => sum + call[name], 0) / calls.length) * 1000) / 1000;
  const meanMs = Object.fromEntries(
    [...segmentNames, 'total'].map((name) => [name, mean(name as SegmentName)]),
  );
  return {
    variant,
    condition,
    calls: calls.length,
    ...(skipped > 0 ? { skipped } : {}),
    meanMs: meanMs as SegmentCell['meanMs'],
  };
}
