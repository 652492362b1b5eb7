import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, inject, it } from 'vitest';
import { spawnScript } from '../support/child-processes.ts';
import { faultSetup, useFaultRun } from '../support/fault-run.ts';
import { agent } from '../support/harness.ts';
import { mapLimited } from '../support/map-limited.ts';

const run = useFaultRun('toolgate-faults-');

const setup = () => faultSetup(run, 'faults');

/** Temporal's TimeoutType values that these tests look for. */
const timeoutTypes = { startToClose: 1, heartbeat: 4 } as const;

/**
 * Seconds from the activity's start to its timeout of the given type, for each activity that timed
 * out that way, read from the real history; -1 marks an attempt that timed out that way and was
 * retried (the retry carries the previous attempt's failure).
 */
async function activityTimeouts(callId: string, type: keyof typeof timeoutTypes): Promise<number[]> {
  const history = await run.temporal.workflow.getHandle(callId).fetchHistory();
  const events = history.events ?? [];
  const startedAt = new Map<string, number>();
  const seconds: number[] = [];
  const wanted = timeoutTypes[type];
  for (const event of events) {
    const time = Number(event.eventTime?.seconds ?? 0) + Number(event.eventTime?.nanos ?? 0) / 1e9;
    const started = event.activityTaskStartedEventAttributes;
    if (started) {
      startedAt.set(String(event.eventId), time);
      if (Number(started.lastFailure?.timeoutFailureInfo?.timeoutType) === wanted) seconds.push(-1);
    }
    const timedOut = event.activityTaskTimedOutEventAttributes;
    if (timedOut && Number(timedOut.failure?.timeoutFailureInfo?.timeoutType) === wanted) {
      seconds.push(time - (startedAt.get(String(timedOut.startedEventId)) ?? time));
    }
  }
  console.info(
    `${type} timeouts of ${callId}: ${seconds.map((value) => `${value} s after start`).join(', ')}`,
  );
  return seconds;
}

async function waitFor<T>(probe: () => Promise<T | undefined>, timeoutMs: number, what: string): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const value = await probe();
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe('worker processes killed mid-call', () => {
  it('SIGKILL during a readonly call: retried on a new worker, succeeds once', async () => {
    const context = await setup();
    const first = await context.startWorker({ identity: 'worker-a' });
    const started = await context.client.start(
      { tool: 'slow_search', input: { query: 'crash me', delayMs: 3_000 } },
      agent,
    );
    await waitFor(
      async () =>
        (await context.lines('executions.jsonl')).find((line) => line['event'] === 'start')
          ? true
          : undefined,
      15_000,
      'the first attempt to start',
    );
    const killedAt = Date.now();
    await first.kill();
    await context.startWorker({ identity: 'worker-b' });
    const record = await context.client.result(started.callId);
    const recoveredAfterMs = Date.now() - killedAt;
    const executions = (await context.lines('executions.jsonl')).filter(
      (line) => line['tool'] === 'slow_search',
    );
    expect(record).toMatchObject({ status: 'succeeded', effect: 'none', attempts: 2 });
    expect(executions.filter((line) => line['event'] === 'start')).toHaveLength(2);
    expect(executions.filter((line) => line['event'] === 'finished')).toHaveLength(1);
    // slow_search may run 30 s, longer than the 15 s liveness window, so its attempt has a 15 s
    // heartbeat timeout (docs/design.md "Liveness and cancellation"); then the 3 s search again on
    // the new worker. By then the dead worker's sticky queue has had no poller for over 10 s, so
    // the workflow task goes straight to the shared queue (measured: about 19 s in all).
    expect(recoveredAfterMs).toBeLessThan(35_000);
    // The retried attempt records that the first one ended by HEARTBEAT timeout.
    expect(await activityTimeouts(started.callId, 'heartbeat')).toEqual([-1]);
    console.info(`readonly SIGKILL: recovered after ${recoveredAfterMs} ms on a new worker`);
  });

  it('SIGKILL during an irreversible call: not re-run, effect unknown, key stays taken', async () => {
    const context = await setup();
    const first = await context.startWorker({ identity: 'worker-a', stallAfterMs: { write_report: 20_000 } });
    const request = {
      tool: 'write_report',
      input: { path: 'crash/report.md', content: 'once' },
      key: 'crash-1',
    };
    const started = await context.client.start(request, agent);
    await waitFor(
      async () =>
        (await context.lines('executions.jsonl')).find((line) => line['event'] === 'wrote')
          ? true
          : undefined,
      15_000,
      'the write to happen',
    );
    const killedAt = Date.now();
    await first.kill();
    await context.startWorker({ identity: 'worker-b' });
    const record = await context.client.result(started.callId);
    const closedAfterMs = Date.now() - killedAt;
    expect(record).toMatchObject({
      status: 'timeout',
      effect: 'unknown',
      reason: 'OUTCOME_UNKNOWN',
      attempts: 1,
    });
    expect(record.message).toMatch(/Do not repeat it/);
    // write_report's deadline is 5 s, inside the liveness window: its start-to-close (deadline +
    // 1 s grace) ends the attempt. The stated delay after that: the workflow task waits up to 10 s
    // for the dead worker's sticky queue to fall back to the shared one, then runs in well under a
    // second (measured: closed about 16 s after the kill; the bound leaves room for a loaded box).
    const timeouts = await activityTimeouts(started.callId, 'startToClose');
    expect(timeouts).toHaveLength(1);
    expect(timeouts[0]!).toBeGreaterThanOrEqual(5.9);
    expect(timeouts[0]!).toBeLessThan(7);
    expect(closedAfterMs).toBeLessThan(5_000 + 1_000 + 10_000 + 4_000);

    const again = await context.client.start(request, agent);
    expect(again.disposition).toBe('existing');
    expect(again.record).toMatchObject({ status: 'timeout', reason: 'OUTCOME_UNKNOWN' });
    expect(
      (await context.lines('executions.jsonl')).filter((line) => line['event'] === 'wrote'),
    ).toHaveLength(1);
    expect(await readdir(join(context.dataDir, 'reports', 'crash'))).toEqual(['report.md']);
    console.info(`irreversible SIGKILL: closed OUTCOME_UNKNOWN ${closedAfterMs} ms after the kill`);
  });

  it('a client that dies after start(): a new client with the same key re-attaches and gets the result', async () => {
    const context = await setup();
    await context.startWorker();
    const script = fileURLToPath(new URL('../support/client-process.ts', import.meta.url));
    const request = { tool: 'slow_search', input: { query: 'orphan', delayMs: 2_000 }, key: 'orphan-1' };
    const dying = await spawnScript(
      script,
      [
        JSON.stringify({
          address: inject('temporalAddress'),
          taskQueue: context.taskQueue,
          request,
          context: agent,
        }),
      ],
      'STARTED',
    );
    run.children.push(dying);
    const callId = dying.lines.find((line) => line.startsWith('STARTED'))!.slice('STARTED '.length);
    await dying.kill();
    const reattached = await context.client.start(request, agent);
    expect(reattached.callId).toBe(callId);
    expect(['attached', 'existing']).toContain(reattached.disposition);
    const record = reattached.record ?? (await context.client.result(reattached.callId));
    expect(record).toMatchObject({ status: 'succeeded', callId });
    const finished = (await context.lines('executions.jsonl')).filter((line) => line['event'] === 'finished');
    expect(finished).toHaveLength(1);
  });

  it('200 concurrent calls over 20 keys: one side effect per key, every mismatch refused', async () => {
    const context = await setup();
    await context.startWorker();
    const calls = Array.from({ length: 200 }, (_, index) => {
      const key = index % 20;
      // Every fourth call of a key sends different arguments for the same key.
      const variant = Math.floor(index / 20) % 4 === 3 ? 'b' : 'a';
      return {
        key: `dup-${key}`,
        variant,
        request: {
          tool: 'write_report',
          input: { path: `dup/${key}-${variant}.md`, content: `report ${key} ${variant}` },
          key: `dup-${key}`,
        },
      };
    });
    // All 200 at once; if one throws, the others are awaited before the test fails (mapLimited).
    const records = await mapLimited(calls, calls.length, (call) => context.client.call(call.request, agent));
    const files = await readdir(join(context.dataDir, 'reports', 'dup'));
    expect(files).toHaveLength(20);
    const wrote = (await context.lines('executions.jsonl')).filter((line) => line['event'] === 'wrote');
    expect(wrote).toHaveLength(20);
    let mismatches = 0;
    for (let key = 0; key < 20; key++) {
      const winner = files.find((file) => file.startsWith(`${key}-`))!;
      const winningVariant = winner.slice(`${key}-`.length, -'.md'.length);
      calls.forEach((call, index) => {
        if (call.key !== `dup-${key}`) return;
        const record = records[index]!;
        if (call.variant === winningVariant) {
          expect(record.status).toBe('succeeded');
        } else {
          expect(record).toMatchObject({ status: 'denied', effect: 'none', reason: 'KEY_MISMATCH' });
          mismatches++;
        }
      });
    }
    expect(mismatches).toBeGreaterThanOrEqual(20);
    console.info(`200 calls / 20 keys: 20 side effects, ${mismatches} mismatches refused`);
  });
});
