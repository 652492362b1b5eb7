/** What a call's history holds, read from the server, for tests that check its shape. */
import type { Client } from '@temporalio/client';

async function historyEvents(temporal: Client, callId: string) {
  return (await temporal.workflow.getHandle(callId).fetchHistory()).events ?? [];
}

/** Each event's kind, named by its attributes field (e.g. `markerRecordedEventAttributes`). */
export async function eventTypes(temporal: Client, callId: string): Promise<Array<string | undefined>> {
  return (await historyEvents(temporal, callId)).map((event) =>
    Object.keys(event).find((field) => field.endsWith('EventAttributes')),
  );
}

/** The names of the call's markers, in order: `core_local_activity`, `core_patch`. */
export async function markerNames(
  temporal: Client,
  callId: string,
): Promise<Array<string | null | undefined>> {
  return (await historyEvents(temporal, callId)).flatMap((event) =>
    event.markerRecordedEventAttributes ? [event.markerRecordedEventAttributes.markerName] : [],
  );
}

/** The activity types the call scheduled, in order. */
export async function scheduledActivityTypes(
  temporal: Client,
  callId: string,
): Promise<Array<string | null | undefined>> {
  return (await historyEvents(temporal, callId)).flatMap((event) =>
    event.activityTaskScheduledEventAttributes
      ? [event.activityTaskScheduledEventAttributes.activityType?.name]
      : [],
  );
}
