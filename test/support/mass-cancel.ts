/**
 * Cancelling 100 running tools at once, and where each cancel's time went: `cancel()` answers once
 * the server has recorded the request, and each tool's AbortSignal fires soon after, carried by a
 * heartbeat's answer (docs/design.md "Liveness and cancellation"). Used on the dev server
 * (test/faults/mass-cancel.test.ts) and on the compose stack (test/cluster/).
 */
import type { ToolgateClient } from '../../src/client/toolgate-client.ts';
import { agent } from './harness.ts';

/** The server's count of heartbeat requests so far, from its Prometheus endpoint. */
export async function heartbeatRequests(metricsUrl: string): Promise<number> {
  const text = await (await fetch(metricsUrl)).text();
  let total = 0;
  for (const line of text.split('\n')) {
    // Every service may run in one process; count what the frontend received.
    if (
      line.startsWith('service_requests{') &&
      line.includes('operation="RecordActivityTaskHeartbeat"') &&
      line.includes('service_name="frontend"')
    ) {
      total += Number(line.slice(line.lastIndexOf(' ') + 1));
    }
  }
  return total;
}

export const quantile = (values: readonly number[], q: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!;
};
const spread = (values: readonly number[]) =>
  `p50 ${quantile(values, 0.5).toFixed(0)} ms, p99 ${quantile(values, 0.99).toFixed(0)} ms`;
const eventMs = (event: { eventTime?: { seconds?: unknown; nanos?: unknown } | null }) =>
  Number(event.eventTime?.seconds ?? 0) * 1000 + Number(event.eventTime?.nanos ?? 0) / 1e6;

export interface CancelRoundSetup {
  readonly client: ToolgateClient;
  /** The example tools' execution log (`executions.jsonl`), parsed. */
  lines(file: 'executions.jsonl'): Promise<Array<Record<string, unknown>>>;
  /** The server's count of heartbeat requests so far, when its metrics are at hand. */
  countHeartbeats?(): Promise<number>;
}

/** Starts 100 slow searches, waits until all run, then cancels them all at once. */
export async function cancelRound(setup: CancelRoundSetup, round: string) {
  const { client, lines, countHeartbeats } = setup;
  const calls = await Promise.all(
    Array.from({ length: 100 }, (_, index) =>
      client.start({ tool: 'slow_search', input: { query: `${round} ${index}`, delayMs: 25_000 } }, agent),
    ),
  );
  const ours = new Set(calls.map((call) => call.callId));
  const events = async (event: string) =>
    (await lines('executions.jsonl')).filter(
      (line) => line['event'] === event && ours.has(String(line['callId'])),
    );
  const deadline = Date.now() + 60_000;
  while ((await events('start')).length < 100) {
    if (Date.now() > deadline) throw new Error(`${round}: not all 100 tools started within 60 s`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  // Every tool runs and heartbeats: count what that costs the server over 3 s.
  const windowMs = 3_000;
  const countedFrom = await countHeartbeats?.();
  await new Promise((resolve) => setTimeout(resolve, windowMs));
  const heartbeatsPerToolSecond =
    countedFrom === undefined
      ? Number.NaN
      : ((await countHeartbeats!()) - countedFrom) / 100 / (windowMs / 1000);

  const cancels = await Promise.all(
    calls.map(async (call) => {
      const sentAtMs = Date.now();
      const receipt = await client.cancel(call.callId);
      return { callId: call.callId, sentAtMs, returnedMs: Date.now() - sentAtMs, receipt };
    }),
  );
  const records = await Promise.all(calls.map((call) => client.result(call.callId)));
  const abortedAt = new Map(
    (await events('stopped')).map((line) => [String(line['callId']), Number(line['abortedAtMs'])]),
  );
  const phases = await Promise.all(cancels.map((cancel) => cancelPhases(setup.client, cancel, abortedAt)));
  const returned = cancels.map((cancel) => cancel.returnedMs);
  const toAbort = cancels.map((cancel) => (abortedAt.get(cancel.callId) ?? Number.NaN) - cancel.sentAtMs);
  console.info(
    `mass cancel ${round}: ${Number.isNaN(heartbeatsPerToolSecond) ? '' : `${heartbeatsPerToolSecond.toFixed(2)} heartbeat requests per running tool per second; `}` +
      `cancel() returned ${spread(returned)}, max ${Math.max(...returned)} ms; cancel() → tool abort ` +
      `${spread(toAbort)}, max ${Math.max(...toAbort)} ms. Phases: cancel in history ` +
      `${spread(phases.map((phase) => phase.recorded))}; activity cancel requested ` +
      `${spread(phases.map((phase) => phase.activityCancel))}; then the abort ${spread(phases.map((phase) => phase.abort))}`,
  );
  return {
    heartbeatsPerToolSecond,
    cancels,
    returned,
    toAbort,
    records,
    finished: await events('finished'),
  };
}

/**
 * Where one cancel's time went, from the call's history: the server records the cancel, a workflow
 * task asks to cancel the activity, and the tool's next heartbeat brings the answer.
 */
async function cancelPhases(
  client: ToolgateClient,
  cancel: { callId: string; sentAtMs: number },
  abortedAt: ReadonlyMap<string, number>,
) {
  const history = await client.temporal.workflow.getHandle(cancel.callId).fetchHistory();
  const events = history.events ?? [];
  const requested = events.find((event) => event.workflowExecutionCancelRequestedEventAttributes);
  const activityCancel = events.find((event) => event.activityTaskCancelRequestedEventAttributes);
  const activityCancelMs = activityCancel ? eventMs(activityCancel) : Number.NaN;
  return {
    recorded: requested ? eventMs(requested) - cancel.sentAtMs : Number.NaN,
    activityCancel: activityCancelMs - cancel.sentAtMs,
    abort: (abortedAt.get(cancel.callId) ?? Number.NaN) - activityCancelMs,
  };
}
