import { readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { defaultPayloadConverter } from '@temporalio/common';
import { afterEach, describe, expect, it } from 'vitest';
import type { LoadGateOptions } from '../../activities/safety/admission-gates.ts';
import { exampleToolPaths } from '../../examples/tools.ts';
import type { CallRecord } from '../../src/contracts/call-record.ts';
import type { AcquireAnswer, AcquireRequest, ScopeState } from '../../src/policy/scope-state.ts';
import { admissionWorkflowId, scopeStateQuery } from '../../workflows/admission-entity.ts';
import { faultSetup, useFaultRun } from '../support/fault-run.ts';
/**
 * Quotas and breakers with several real worker processes (docs/design.md, "Admission"): the state
 * that admits lives in each scope's admission entity, so the limits hold across workers, a slot goes
 * back whoever ends the call, and a stopped, killed or terminated holder does not keep it.
 */
import { agent } from '../support/harness.ts';
import { type LoopbackServer, startLoopbackServer } from '../support/loopback-server.ts';
import { mapLimited } from '../support/map-limited.ts';
import type { WorkerProcessConfig } from '../support/worker-process.ts';

const run = useFaultRun('toolgate-admission-');
const servers: LoopbackServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

async function setup(admission: LoadGateOptions, extra: Partial<WorkerProcessConfig> = {}) {
  const base = await faultSetup(run, 'admission', { admission, ...extra });
  const startWorker = (identity: string) => base.startWorker({ identity });
  const scopeState = (scope: string): Promise<ScopeState> =>
    run.temporal.workflow.getHandle(admissionWorkflowId(base.taskQueue, scope)).query(scopeStateQuery);
  return { taskQueue: base.taskQueue, dataDir: base.dataDir, client: base.client, startWorker, scopeState };
}

/** The example tools' execution log, on disk: what ran, when, and in which worker process. */
async function executions(dataDir: string) {
  const text = await readFile(exampleToolPaths(dataDir).executionsFile, 'utf8').catch(() => '');
  return text
    .split('\n')
    .filter(Boolean)
    .map(
      (line) =>
        JSON.parse(line) as { tool: string; callId: string; event: string; atMs: number; pid: number },
    );
}

/** The most calls that were running at one moment, from their start and finish lines. */
function mostAtOnce(events: ReadonlyArray<{ event: string; atMs: number }>): number {
  const steps = events
    .filter((entry) => entry.event === 'start' || entry.event === 'finished')
    // At the same millisecond a finish counts before a start: the slot was free.
    .map((entry) => [entry.atMs, entry.event === 'start' ? 1 : -1] as const)
    .sort((left, right) => left[0] - right[0] || left[1] - right[1]);
  let running = 0;
  let most = 0;
  for (const [, step] of steps) {
    running += step;
    most = Math.max(most, running);
  }
  return most;
}

/** Makes a call again after each RATE_LIMITED, as an agent would, waiting the hint it was given. */
async function callUntilAdmitted(
  make: () => Promise<CallRecord>,
  refusals: CallRecord[],
): Promise<CallRecord> {
  for (;;) {
    const record = await make();
    if (record.reason !== 'RATE_LIMITED') return record;
    refusals.push(record);
    await sleep((record.retryAfterSeconds ?? 1) * 1000 * (0.5 + Math.random()));
  }
}

describe('admission across worker processes', () => {
  it('holds a concurrency quota of 3 across 3 workers: 60 calls of a 1 s tool, never more than 3 at once', async () => {
    const quota = await setup({ quotas: { perTool: { slow_search: { maxConcurrent: 3 } } } });
    await Promise.all(['w1', 'w2', 'w3'].map((identity) => quota.startWorker(identity)));
    const refusals: CallRecord[] = [];
    const records = await mapLimited(
      Array.from({ length: 60 }, (_, index) => index),
      12,
      (index) =>
        callUntilAdmitted(
          () =>
            quota.client.call({ tool: 'slow_search', input: { query: `q${index}`, delayMs: 1_000 } }, agent),
          refusals,
        ),
    );
    expect(records.map((record) => record.status)).toEqual(Array(60).fill('succeeded'));
    const ran = (await executions(quota.dataDir)).filter((entry) => entry.tool === 'slow_search');
    expect(ran.filter((entry) => entry.event === 'start')).toHaveLength(60);
    expect(mostAtOnce(ran)).toBeLessThanOrEqual(3);
    expect(new Set(ran.map((entry) => entry.pid)).size, 'calls ran on several workers').toBeGreaterThan(1);
    expect(refusals.length, 'the limit refused calls').toBeGreaterThan(0);
    for (const refusal of refusals) expect(refusal.message).toMatch(/limit 3\)\. Wait 1 s, then try again/);
    expect(Object.keys((await quota.scopeState('tool:slow_search')).holders)).toEqual([]);
    console.info(
      `concurrency quota 3 on 3 workers: 60 calls, at most ${mostAtOnce(ran)} at once, ${refusals.length} refusals`,
    );
  });

  it('hands back the slots of approval calls closed on another worker while the admitting one is stopped', async () => {
    const quota = await setup({ quotas: { perTool: { transfer_funds: { maxConcurrent: 2 } } } });
    const admitting = await quota.startWorker('admitting');
    const transfer = (reference: string) => ({
      tool: 'transfer_funds',
      input: { reference, from: 'ACC-1', to: 'ACC-2', amountCents: 100, currency: 'EUR', memo: null },
      key: `t-${reference}`,
    });
    const waiting = await Promise.all(
      ['A1', 'A2'].map((reference) => quota.client.start(transfer(reference), agent)),
    );
    for (const started of waiting) {
      await expect
        .poll(async () => (await quota.client.get(started.callId))?.status)
        .toBe('awaiting_approval');
    }
    expect(Object.keys((await quota.scopeState('tool:transfer_funds')).holders)).toHaveLength(2);
    await quota.startWorker('other');
    process.kill(admitting.pid, 'SIGSTOP');
    for (const started of waiting) {
      await quota.client.approve(started.callId, { approver: 'finance-lead', roles: ['finance'] });
    }
    const closed = await Promise.all(
      waiting.map((started) => quota.client.result(started.callId, started.runId)),
    );
    const lastCloseAt = Date.now();
    expect(closed.map((record) => record.status)).toEqual(['succeeded', 'succeeded']);
    process.kill(admitting.pid, 'SIGCONT');
    // The slots are back in the entity, whoever ended the calls.
    let backAfterMs = Number.POSITIVE_INFINITY;
    for (let tries = 0; tries < 100; tries++) {
      if (Object.keys((await quota.scopeState('tool:transfer_funds')).holders).length === 0) {
        backAfterMs = Date.now() - lastCloseAt;
        break;
      }
      await sleep(20);
    }
    expect(backAfterMs).toBeLessThanOrEqual(1_000);
    // Nothing runs, so nothing is refused: two new calls are admitted and wait for a human.
    const next = await Promise.all(
      ['A3', 'A4'].map((reference) => quota.client.start(transfer(reference), agent)),
    );
    for (const started of next) {
      expect(started.record?.reason).toBeUndefined();
      await expect
        .poll(async () => (await quota.client.get(started.callId))?.status)
        .toBe('awaiting_approval');
    }
    console.info(`stopped admitting worker: slots back ${backAfterMs} ms after the last close`);
  });

  it('reclaims the slot of a call an operator terminated, at the next admission', async () => {
    const quota = await setup({ quotas: { perTool: { transfer_funds: { maxConcurrent: 1 } } } });
    await quota.startWorker('w1');
    const transfer = (reference: string) => ({
      tool: 'transfer_funds',
      input: { reference, from: 'ACC-1', to: 'ACC-2', amountCents: 100, currency: 'EUR', memo: null },
      key: `t-${reference}`,
    });
    const holder = await quota.client.start(transfer('T1'), agent);
    await expect.poll(async () => (await quota.client.get(holder.callId))?.status).toBe('awaiting_approval');
    // Its lease is its approval wait, days long: only the entity's check of its holders frees it.
    await run.temporal.workflow.getHandle(holder.callId).terminate('operator test');
    const startedAt = Date.now();
    const next = await quota.client.start(transfer('T2'), agent);
    await expect.poll(async () => (await quota.client.get(next.callId))?.status).toBe('awaiting_approval');
    const admittedAfterMs = Date.now() - startedAt;
    expect(admittedAfterMs).toBeLessThan(5_000);
    expect(Object.keys((await quota.scopeState('tool:transfer_funds')).holders)).toEqual([next.callId]);
    console.info(`terminated holder: the next call admitted after ${admittedAfterMs} ms`);
  });

  it('reclaims the slots of calls whose worker was killed, and admits later calls', async () => {
    const quota = await setup({ quotas: { perTool: { slow_search: { maxConcurrent: 2 } } } });
    const doomed = await quota.startWorker('doomed');
    const holders = ['K1', 'K2'].map((query) =>
      quota.client.call({ tool: 'slow_search', input: { query, delayMs: 3_000 } }, agent),
    );
    await expect
      .poll(async () => (await executions(quota.dataDir)).filter((entry) => entry.event === 'start').length)
      .toBe(2);
    await quota.startWorker('survivor');
    await doomed.kill();
    const killedAt = Date.now();
    // The killed attempts are retried on the survivor and end; their slots come back with them.
    expect((await Promise.all(holders)).map((record) => record.status)).toEqual(['succeeded', 'succeeded']);
    const refusals: CallRecord[] = [];
    const later = await callUntilAdmitted(
      () => quota.client.call({ tool: 'slow_search', input: { query: 'later', delayMs: 10 } }, agent),
      refusals,
    );
    const admittedAfterMs = Date.now() - killedAt;
    expect(later.status).toBe('succeeded');
    // The lease (30 s timeout × 3 attempts and backoff, plus a minute) is the bound; it comes far sooner.
    expect(admittedAfterMs).toBeLessThan(60_000);
    expect(Object.keys((await quota.scopeState('tool:slow_search')).holders)).toEqual([]);
    console.info(
      `killed worker: a later call admitted ${admittedAfterMs} ms after the kill, ${refusals.length} refusals`,
    );
  });

  it('holds a rate quota of 10/s across 3 workers: 200 calls, at most 10 admissions in any second', async () => {
    const rate = await setup({ quotas: { perTool: { slow_search: { maxPerWindow: 10, windowMs: 1_000 } } } });
    await Promise.all(['w1', 'w2', 'w3'].map((identity) => rate.startWorker(identity)));
    // The entity's own record of its admissions, read while they happen: each stays a second.
    const admitted = new Map<string, number>();
    const look = async () => {
      const state = await rate.scopeState('tool:slow_search').catch(() => undefined);
      for (const [atMs, callId] of state?.admitted ?? []) admitted.set(callId, atMs);
    };
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        await look();
        await sleep(200);
      }
    })();
    const refusals: CallRecord[] = [];
    const records = await mapLimited(
      Array.from({ length: 200 }, (_, index) => index),
      20,
      (index) =>
        callUntilAdmitted(
          () => rate.client.call({ tool: 'slow_search', input: { query: `r${index}`, delayMs: 10 } }, agent),
          refusals,
        ),
    );
    watching = false;
    await watcher;
    await look();
    expect(records.filter((record) => record.status !== 'succeeded').map((record) => record.message)).toEqual(
      [],
    );
    // The watcher samples every 200 ms and an admission stays in the state for a second, so a slow
    // look can miss some; the entity's histories miss none. Each one the watcher saw agrees with them.
    const granted = await admissionsFromHistory(admissionWorkflowId(rate.taskQueue, 'tool:slow_search'));
    expect(granted.size).toBe(200);
    expect(admitted.size).toBeGreaterThan(0);
    for (const [callId, atMs] of admitted) expect(granted.get(callId)).toBe(atMs);
    const times = [...granted.values()].sort((left, right) => left - right);
    // At most 10 in any second, ends included: the 11th admission after any one is over a second later.
    let tightestMs = Number.POSITIVE_INFINITY;
    for (let index = 10; index < times.length; index++) {
      tightestMs = Math.min(tightestMs, times[index]! - times[index - 10]!);
    }
    expect(tightestMs).toBeGreaterThan(1_000);
    expect(refusals.length).toBeGreaterThan(0);
    for (const refusal of refusals)
      expect(refusal.message).toMatch(/\(limit 10 per 1000 ms\)\. Wait \d+ s, then try again/);
    const spanSeconds = (times.at(-1)! - times[0]!) / 1000;
    console.info(
      `rate quota 10/s on 3 workers: 200 admissions over ${spanSeconds.toFixed(1)} s, tightest 11 in ${tightestMs} ms, ${refusals.length} refusals; the watcher saw ${admitted.size} of them`,
    );
  });

  it('opens the breaker for every worker at once, and half-opens with one probe', async () => {
    const downstream = await startLoopbackServer((_request, response) => {
      response.statusCode = 503;
      response.end('unavailable');
    });
    servers.push(downstream);
    const breaker = await setup(
      { breakers: { http_fetch: { failureThreshold: 3, cooldownMs: 4_000 } } },
      { http: { ports: 'any', allowLoopbackForTests: true } },
    );
    await Promise.all(['w1', 'w2', 'w3'].map((identity) => breaker.startWorker(identity)));
    const fetch = (name: string) =>
      breaker.client.call({ tool: 'http_fetch', input: { url: `${downstream.url}/${name}` } }, agent);
    const storm = await Promise.all(Array.from({ length: 12 }, (_, index) => fetch(`s${index}`)));
    const stormRequests = downstream.stats.requests;
    // Without the breaker: 12 calls × 3 attempts. With it: the threshold plus what was in flight.
    expect(stormRequests).toBeLessThanOrEqual(3 + 12 - 1);
    expect(storm.every((record) => record.status !== 'succeeded' && record.effect === 'none')).toBe(true);
    expect((await breaker.scopeState('tool:http_fetch')).breaker).toMatchObject({ open: true });
    // Open: every worker refuses at once, and nothing reaches the downstream.
    const refused = await Promise.all(Array.from({ length: 9 }, (_, index) => fetch(`o${index}`)));
    expect(refused.every((record) => record.reason === 'RATE_LIMITED' && record.effect === 'none')).toBe(
      true,
    );
    expect(downstream.stats.requests).toBe(stormRequests);
    const refusedBy = await workersThatRan(refused.map((record) => record.callId));
    expect(refusedBy.size, 'refusals came from several workers').toBeGreaterThan(1);
    // Half-open after the cooldown: ten calls at once send exactly one probe; it fails and reopens.
    await sleep(4_200);
    const probing = await Promise.all(Array.from({ length: 10 }, (_, index) => fetch(`p${index}`)));
    expect(downstream.stats.requests - stormRequests).toBe(1);
    expect(probing.filter((record) => record.reason === 'RATE_LIMITED')).toHaveLength(10);
    expect((await breaker.scopeState('tool:http_fetch')).breaker).toMatchObject({ open: true, opened: 2 });
    console.info(
      `breaker on 3 workers: ${stormRequests} downstream requests in a 12-call storm, 0 while open, 1 probe for 10 calls half-open`,
    );
  });
});

/** The identities of the workers that ran these calls' activities, from their histories. */
async function workersThatRan(callIds: readonly string[]): Promise<Set<string>> {
  const identities = new Set<string>();
  for (const callId of callIds) {
    const history = await run.temporal.workflow.getHandle(callId).fetchHistory();
    for (const event of history.events ?? []) {
      const identity = event.activityTaskStartedEventAttributes?.identity;
      if (identity) identities.add(identity);
    }
  }
  return identities;
}

/**
 * Every call an admission entity granted, with the time it granted it, from the histories of all its
 * runs. An update's handler runs in the workflow task that accepted it, and workflow time there is
 * that task's start time, so the grant time is the last task start before the acceptance.
 */
async function admissionsFromHistory(workflowId: string): Promise<Map<string, number>> {
  const grants = new Map<string, number>();
  for await (const execution of run.temporal.workflow.list({ query: `WorkflowId = '${workflowId}'` })) {
    const history = await run.temporal.workflow.getHandle(workflowId, execution.runId).fetchHistory();
    let taskStartedMs = 0;
    const accepted = new Map<string, { callId: string; atMs: number }>();
    for (const event of history.events ?? []) {
      if (event.workflowTaskStartedEventAttributes) taskStartedMs = eventMs(event);
      const acceptance = event.workflowExecutionUpdateAcceptedEventAttributes;
      if (acceptance) {
        const [request] = acceptance.acceptedRequest?.input?.args?.payloads ?? [];
        const { callId } = defaultPayloadConverter.fromPayload<AcquireRequest>(request!);
        accepted.set(acceptance.acceptedRequest?.meta?.updateId ?? '', { callId, atMs: taskStartedMs });
      }
      const completion = event.workflowExecutionUpdateCompletedEventAttributes;
      if (completion) {
        const [payload] = completion.outcome?.success?.payloads ?? [];
        const answer = payload ? defaultPayloadConverter.fromPayload<AcquireAnswer>(payload) : undefined;
        const request = accepted.get(completion.meta?.updateId ?? '');
        if (answer?.granted && request && !grants.has(request.callId))
          grants.set(request.callId, request.atMs);
      }
    }
  }
  return grants;
}

function eventMs(event: { eventTime?: { seconds?: unknown; nanos?: unknown } | null }): number {
  return Number(event.eventTime?.seconds ?? 0) * 1000 + Math.floor(Number(event.eventTime?.nanos ?? 0) / 1e6);
}
