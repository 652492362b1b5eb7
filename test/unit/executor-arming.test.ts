import { setTimeout as sleep } from 'node:timers/promises';
import { ActivityCancellationDetails, ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createActivities } from '../../activities/create-activities.ts';
import { implementTool, type ToolExecution } from '../../activities/tool-implementation.ts';
import { readConfig } from '../../examples/contracts.ts';
import { ToolFailureType } from '../../src/contracts/activity-types.ts';
import {
  activityEnvironment as environment,
  quietLogger as quiet,
  readonlyRunRequest as request,
} from '../support/activity-requests.ts';

/**
 * The executor arms a heartbeat interval, a deadline timer and a cancellation listener only for a
 * tool that has not answered within a few microtask turns, and makes the tool's abort signal only
 * when the tool reads it. Whatever it skips, the outcome must be the one a fully armed run gives.
 */
const heartbeatIntervalMs = 4_321;

function activitiesWith(
  execute: (execution: ToolExecution<{ name: string }>) => Promise<unknown>,
  intervalMs = heartbeatIntervalMs,
) {
  return createActivities({
    tools: [implementTool(readConfig, execute)],
    policy: { allow: ['read_config'] },
    approvalPublicKeys: [],
    logger: quiet,
    heartbeatIntervalMs: intervalMs,
  });
}

/** Counts the heartbeat intervals the executor arms (by their unusual period). */
function countArmedIntervals() {
  const spy = vi.spyOn(globalThis, 'setInterval');
  return () => spy.mock.calls.filter((call) => call[1] === heartbeatIntervalMs).length;
}

const inner = async () => ({ value: 'eu-west-1' });

afterEach(() => {
  vi.restoreAllMocks();
});

describe('the executor, for a tool that answers at once', () => {
  const immediate: Record<string, (execution: ToolExecution<{ name: string }>) => Promise<unknown>> = {
    'an async function returning a value': async () => ({ value: 'eu-west-1' }),
    "an async function returning another's promise": async () => inner(),
    'a function returning a resolved promise': () => Promise.resolve({ value: 'eu-west-1' }),
  };
  for (const [shape, execute] of Object.entries(immediate)) {
    it(`${shape}: the same result, with no timer armed`, async () => {
      const armed = countArmedIntervals();
      const result = await environment().run(activitiesWith(execute).runTool, request('call-1'));
      expect(result).toEqual({ output: { value: 'eu-west-1' }, attempt: 1 });
      expect(armed()).toBe(0);
    });
  }

  it('a tool that throws at once or rejects at once: classified as before, with no timer armed', async () => {
    const armed = countArmedIntervals();
    for (const execute of [
      () => {
        throw new Error('secret detail');
      },
      async () => {
        throw new Error('secret detail');
      },
    ]) {
      const error = await environment()
        .run(activitiesWith(execute).runTool, request('call-2'))
        .catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(ApplicationFailure);
      expect((error as ApplicationFailure).type).toBe(ToolFailureType.failed);
      expect((error as ApplicationFailure).message).not.toMatch(/secret detail/);
    }
    expect(armed()).toBe(0);
  });
});

describe('the executor, for a tool that takes its time', () => {
  it('arms the heartbeat and sends heartbeats while the tool runs', async () => {
    const armed = countArmedIntervals();
    const activities = activitiesWith(async () => {
      await sleep(80);
      return { value: 'eu-west-1' };
    }, 10);
    const env = environment();
    let heartbeats = 0;
    env.on('heartbeat', () => heartbeats++);
    const result = await env.run(activities.runTool, request('call-3'));
    expect(result).toEqual({ output: { value: 'eu-west-1' }, attempt: 1 });
    expect(heartbeats).toBeGreaterThan(0);
    expect(armed()).toBe(0); // its period is 10 ms here, not the counted one
  });

  it('aborts the signal of a tool that listens, and reports the cancellation', async () => {
    const armed = countArmedIntervals();
    const seen: string[] = [];
    const activities = activitiesWith(
      (execution) =>
        new Promise((_resolve, reject) => {
          execution.signal.addEventListener('abort', () => {
            seen.push('aborted');
            reject(new Error('stopped'));
          });
        }),
    );
    const env = environment();
    const running = env.run(activities.runTool, request('call-4')).catch((caught: unknown) => caught);
    await sleep(30);
    env.cancel();
    const error = await running;
    expect(error).toBeInstanceOf(CancelledFailure);
    expect(seen).toEqual(['aborted']);
    expect(armed()).toBe(1);
  });

  it('hands a tool that reads its signal only after the cancellation an aborted signal', async () => {
    let abortedWhenRead: boolean | undefined;
    const activities = activitiesWith(async (execution) => {
      await sleep(60);
      abortedWhenRead = execution.signal.aborted;
      return { value: 'eu-west-1' };
    });
    const env = environment();
    const running = env.run(activities.runTool, request('call-5'));
    await sleep(20);
    env.cancel();
    // It finished anyway: its success is reported, as its effect is known.
    expect(await running).toEqual({ output: { value: 'eu-west-1' }, attempt: 1 });
    expect(abortedWhenRead).toBe(true);
  });

  it('stops waiting at the deadline and aborts the signal the tool reads after it', async () => {
    let abortedWhenRead: boolean | undefined;
    let reason: unknown;
    const activities = activitiesWith(async (execution) => {
      await sleep(120);
      abortedWhenRead = execution.signal.aborted;
      reason = execution.signal.reason;
      return { value: 'late' };
    });
    const error = await environment()
      .run(activities.runTool, request('call-6', { timeoutMs: 30 }))
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ApplicationFailure);
    expect((error as ApplicationFailure).type).toBe(ToolFailureType.timeout);
    expect((error as ApplicationFailure).message).toBe('The tool did not finish within 30 ms.');
    await sleep(150);
    expect(abortedWhenRead).toBe(true);
    expect(reason).toEqual(new Error('deadline'));
  });
});

describe('the executor, for a call interrupted before its tool starts', () => {
  function counting() {
    let runs = 0;
    const activities = activitiesWith(async () => {
      runs++;
      return { value: 'eu-west-1' };
    });
    return { activities, runs: () => runs };
  }

  it('a cancellation the caller asked for: the tool never runs, and the call is reported cancelled', async () => {
    const { activities, runs } = counting();
    const env = environment();
    env.cancel();
    const error = await env.run(activities.runTool, request('call-7')).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(CancelledFailure);
    expect(runs()).toBe(0);
  });

  it('a worker shutting down: the tool never runs, and the attempt fails retryably with no effect', async () => {
    const { activities, runs } = counting();
    const env = environment();
    env.cancel('WORKER_SHUTDOWN', new ActivityCancellationDetails({ workerShutdown: true }));
    const error = await env
      .run(activities.checkAndRunTool, request('call-8'))
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ApplicationFailure);
    const failure = error as ApplicationFailure;
    expect(failure.type).toBe(ToolFailureType.failed);
    expect(failure.nonRetryable).toBe(false);
    expect(failure.message).toBe('The executor was interrupted before the tool ran.');
    expect(failure.details?.[0]).toMatchObject({ effect: 'none', attempt: 1 });
    expect(runs()).toBe(0);
  });

  it('a cancellation that lands while the tool is starting still reaches its signal', async () => {
    const env = environment();
    const activities = activitiesWith(
      (execution) =>
        new Promise((_resolve, reject) => {
          // Delivered before the executor arms its listener: the abort event has already fired.
          env.cancel();
          execution.signal.addEventListener('abort', () => reject(new Error('stopped')));
        }),
    );
    const started = Date.now();
    const error = await env
      .run(activities.runTool, request('call-9', { timeoutMs: 1_500 }))
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(CancelledFailure);
    expect(Date.now() - started).toBeLessThan(1_000); // not the deadline's timeout
  });
});
