import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Client, type ClientOptions, type WorkflowHandle } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exampleCatalog } from '../../examples/contracts.ts';
import { ToolgateClient } from '../../src/client/toolgate-client.ts';
import type { CallRecord } from '../../src/contracts/call-record.ts';
import { decisionSignal } from '../../workflows/messages.ts';
import { agent, createHarness, type Harness } from '../support/harness.ts';
import { waitFor } from '../support/wait.ts';

const transfer = (reference: string, overrides: Record<string, unknown> = {}) => ({
  tool: 'transfer_funds',
  input: {
    reference,
    from: 'ACC-1',
    to: 'ACC-2',
    amountCents: 1250,
    currency: 'EUR',
    memo: null,
    ...overrides,
  },
});

type HistoryRequest = {
  waitNewEvent?: boolean | null;
  nextPageToken?: Uint8Array | null;
  maximumPageSize?: number | null;
};
type HistoryRead = (request: HistoryRequest) => Promise<{ history?: { events?: unknown[] | null } | null }>;

/**
 * A ToolgateClient of its own over the harness's connection, to watch or break what it sends:
 * `aroundHistoryRead` gets each history request and the real read; `interceptors` are the Temporal
 * client's.
 */
function watchedClient(
  harness: Harness,
  options: {
    aroundHistoryRead?: (request: HistoryRequest, read: HistoryRead) => ReturnType<HistoryRead>;
    interceptors?: ClientOptions['interceptors'];
  },
): ToolgateClient {
  const connection = harness.temporal.connection;
  const around = options.aroundHistoryRead;
  const service = new Proxy(connection.workflowService, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (!around || property !== 'getWorkflowExecutionHistory' || typeof value !== 'function') return value;
      return (request: HistoryRequest) => around(request, (forwarded) => value.call(target, forwarded));
    },
  });
  return new ToolgateClient({
    client: new Client({
      connection: new Proxy(connection, {
        get: (target, property, receiver) =>
          property === 'workflowService' ? service : Reflect.get(target, property, receiver),
      }),
      ...(options.interceptors ? { interceptors: options.interceptors } : {}),
    }),
    taskQueue: harness.taskQueue,
    catalog: exampleCatalog,
    signer: harness.signer,
  });
}

/** Waits until `count` decisions have reached the server (the worker is stopped meanwhile). */
/**
 * Gives a decision sent by Update (approve(), reject()) time to reach the server while the worker
 * is stopped. An admitted Update is held by the server, not written to history, so there is
 * nothing to count; a second on a local server is ample, and keeps two such decisions in order.
 */
const updateAdmitted = () => new Promise((resolve) => setTimeout(resolve, 1_000));

const signalsArrived = (handle: WorkflowHandle, count: number) =>
  waitFor(
    async () => {
      const events = (await handle.fetchHistory()).events ?? [];
      return events.filter((event) => event.workflowExecutionSignaledEventAttributes).length === count
        ? true
        : undefined;
    },
    { what: `${count} decision(s) to reach the server` },
  );

describe('the five gates against a real dev server', () => {
  let harness: Harness;
  beforeAll(async () => {
    harness = await createHarness();
  });
  afterAll(async () => harness?.close());

  const executions = (tool?: string) =>
    harness
      .readLines(harness.tools.paths.executionsFile)
      .then((lines) => lines.filter((line) => !tool || line['tool'] === tool));

  it('runs a readonly call and records its transitions', async () => {
    const record = await harness.client.call({ tool: 'read_config', input: { name: 'region' } }, agent);
    expect(record).toMatchObject({ status: 'succeeded', effect: 'none', tier: 'readonly', attempts: 1 });
    expect(record.output).toEqual({ name: 'region', value: 'eu-west' });
    expect(record.transitions.map((transition) => transition.status)).toEqual([
      'pending',
      'running',
      'succeeded',
    ]);
    expect(record.callId).toMatch(/^toolgate\/acme\/read_config\/~/);
  });

  it('exposes the dedup window: the namespace retention, 24 h on the dev server', async () => {
    expect(await harness.client.dedupWindowSeconds()).toBe(24 * 60 * 60);
  });

  it('denies a tool that is registered but not allowlisted, before any side effect', async () => {
    const record = await harness.client.call(
      { tool: 'delete_everything', input: { confirm: true } },
      { ...agent },
    );
    // No key either: the allowlist answers before the key rule, so the caller is never told to add
    // a key to a tool it may not use.
    expect(record).toMatchObject({ status: 'denied', reason: 'NOT_ALLOWED', effect: 'none' });
    const keyed = await harness.client.call(
      { tool: 'delete_everything', input: { confirm: true }, key: 'purge-1' },
      agent,
    );
    expect(keyed).toMatchObject({ status: 'denied', reason: 'NOT_ALLOWED', effect: 'none' });
    expect(await executions('delete_everything')).toHaveLength(0);
  });

  it('matches tool names exactly: look-alikes and prototype names are NOT_ALLOWED', async () => {
    for (const tool of [
      'read_confg',
      'Read_Config',
      'read_config ',
      '__proto__',
      'constructor',
      'toString',
      'read_config\u200b',
    ]) {
      const record = await harness.client.call({ tool, input: { name: 'region' } }, agent);
      expect(record, tool).toMatchObject({ status: 'denied', reason: 'NOT_ALLOWED', effect: 'none' });
    }
    expect(await executions('read_config')).toHaveLength(1);
  });

  it('refuses invalid arguments with INVALID_INPUT naming the field', async () => {
    const record = await harness.client.call(
      { tool: 'read_config', input: { name: 'region', extra: 1 } },
      agent,
    );
    expect(record).toMatchObject({ status: 'denied', reason: 'INVALID_INPUT', effect: 'none' });
    expect(record.message).toContain('extra');
  });

  it('denies an irreversible call without a key with KEY_REQUIRED', async () => {
    const record = await harness.client.call(
      { tool: 'write_report', input: { path: 'a.md', content: 'x' } },
      agent,
    );
    expect(record).toMatchObject({ status: 'denied', reason: 'KEY_REQUIRED', effect: 'none' });
    expect(await readdir(harness.tools.paths.reportsDir).catch(() => [])).toHaveLength(0);
  });

  it('tells a caller whose arguments give no derived key what is wrong with them, not to send a key', async () => {
    // transfer_funds takes its key from the reference; with arguments it cannot take, the client
    // derives none, and the key gate answers with what can be fixed: the arguments.
    const record = await harness.client.call(
      { tool: 'transfer_funds', input: { ...transfer('t-bad-amount').input, amountCents: -1 } },
      agent,
    );
    expect(record).toMatchObject({ status: 'denied', reason: 'INVALID_INPUT', effect: 'none' });
    expect(record.message).toContain('amountCents');
    expect(record.key).toBeUndefined();
  });

  it('denies a path that escapes the sandbox, with effect none', async () => {
    for (const path of ['../escape.md', '/etc/passwd', 'a/../../b.md', '..%2fx.md']) {
      const record = await harness.client.call(
        { tool: 'write_report', input: { path, content: 'x' }, key: `esc-${path.length}` },
        agent,
      );
      expect(record, path).toMatchObject({ status: 'denied', reason: 'INVALID_INPUT', effect: 'none' });
    }
    expect(await executions('write_report')).toHaveLength(0);
  });

  it('deduplicates a repeated irreversible call: one file, the stored record returned', async () => {
    const request = {
      tool: 'write_report',
      input: { path: 'q3/summary.md', content: 'revenue up' },
      key: 'report-q3',
    };
    const first = await harness.client.call(request, agent);
    expect(first).toMatchObject({ status: 'succeeded', effect: 'applied', key: 'report-q3' });
    const again = await harness.client.start(request, agent);
    expect(again.disposition).toBe('existing');
    expect(again.runId).toBe(first.runId);
    expect(again.record).toEqual(first);
    expect(await readFile(join(harness.tools.paths.reportsDir, 'q3/summary.md'), 'utf8')).toBe('revenue up');
    expect(await executions('write_report')).toHaveLength(1);
  });

  it("serves a duplicate through describe and result when the key's history cannot be read at once", async () => {
    const request = {
      tool: 'write_report',
      input: { path: 'fallback.md', content: 'kept' },
      key: 'report-fallback',
    };
    const first = await harness.client.call(request, agent);
    expect(first).toMatchObject({ status: 'succeeded', effect: 'applied' });
    // A connection whose plain history reads fail (the read made alongside the start, and the one
    // after a refused start); the long poll that result() makes still goes through.
    let refusedReads = 0;
    const flaky = watchedClient(harness, {
      aroundHistoryRead: (historyRequest, read) => {
        if (historyRequest.waitNewEvent) return read(historyRequest);
        refusedReads++;
        return Promise.reject(new Error('history reads are down'));
      },
    });
    const again = await flaky.start(request, agent);
    expect(refusedReads).toBe(2);
    expect(again).toMatchObject({ disposition: 'existing', runId: first.runId, record: first });
    const changed = await flaky.start({ ...request, input: { ...request.input, content: 'other' } }, agent);
    expect(changed.record).toMatchObject({ status: 'denied', reason: 'KEY_MISMATCH' });
    expect((await executions('write_report')).filter((line) => line['callId'] === first.callId)).toHaveLength(
      1,
    );
  });

  it('refuses a reused key with different arguments: KEY_MISMATCH', async () => {
    const first = await harness.client.call(
      { tool: 'write_report', input: { path: 'm.md', content: 'one' }, key: 'mismatch-1' },
      agent,
    );
    expect(first.status).toBe('succeeded');
    const second = await harness.client.call(
      { tool: 'write_report', input: { path: 'm.md', content: 'two' }, key: 'mismatch-1' },
      agent,
    );
    expect(second).toMatchObject({ status: 'denied', reason: 'KEY_MISMATCH', effect: 'none' });
    expect(await readFile(join(harness.tools.paths.reportsDir, 'm.md'), 'utf8')).toBe('one');
  });

  it('refuses KEY_MISMATCH when two different calls race for one key', async () => {
    const results = await Promise.all(
      ['alpha', 'beta'].map((content) =>
        harness.client.call(
          { tool: 'write_report', input: { path: 'race.md', content }, key: 'race-1' },
          agent,
        ),
      ),
    );
    const statuses = results.map((record) => `${record.status}:${record.reason ?? ''}`).sort();
    expect(statuses).toEqual(['denied:KEY_MISMATCH', 'succeeded:']);
    const winner = results.find((record) => record.status === 'succeeded')!;
    expect(await readFile(join(harness.tools.paths.reportsDir, 'race.md'), 'utf8')).toBe(
      (winner.input as { content: string }).content,
    );
  });

  it('gives 50 concurrent callers with one key exactly one side effect and the same record', async () => {
    const request = { tool: 'write_report', input: { path: 'fifty.md', content: 'once' }, key: 'fifty' };
    const starts = await Promise.all(Array.from({ length: 50 }, () => harness.client.start(request, agent)));
    // One of them created the run; every other one joined it, running or closed.
    expect(starts.filter((start) => start.disposition === 'started')).toHaveLength(1);
    expect(starts.every((start) => ['started', 'attached', 'existing'].includes(start.disposition))).toBe(
      true,
    );
    const records = await Promise.all(
      starts.map((start) => start.record ?? harness.client.result(start.callId, start.runId)),
    );
    expect(new Set(records.map((record) => JSON.stringify(record))).size).toBe(1);
    expect(records[0]).toMatchObject({ status: 'succeeded', effect: 'applied' });
    const writes = (await executions('write_report')).filter((line) => line['callId'] === records[0]!.callId);
    expect(writes).toHaveLength(1);
  });

  it('ends a tool that ignores its signal as timeout within its deadline plus a small margin', async () => {
    const started = Date.now();
    const record = await harness.client.call(
      { tool: 'stubborn_search', input: { query: 'q', delayMs: 10_000 } },
      agent,
    );
    const elapsed = Date.now() - started;
    expect(record).toMatchObject({ status: 'timeout', reason: 'TIMEOUT', effect: 'none' });
    // Deadline 1000 ms; the margin covers workflow and activity task round trips.
    expect(elapsed).toBeLessThan(2_500);
    expect(elapsed).toBeGreaterThanOrEqual(1_000);
  });

  it('ends a cancelled call whose tool ignores its signal as cancelled at the deadline, not timeout', async () => {
    const startedAt = Date.now();
    const started = await harness.client.start(
      { tool: 'stubborn_search', input: { query: 'ignored', delayMs: 10_000 } },
      agent,
    );
    await waitFor(async () =>
      (await executions('stubborn_search')).some(
        (line) => line['callId'] === started.callId && line['event'] === 'start',
      )
        ? true
        : undefined,
    );
    const record = await harness.client.cancelAndWait(started.callId);
    const elapsed = Date.now() - startedAt;
    // The caller's intent wins over the deadline that ended the wait: never a retryable TIMEOUT.
    expect(record).toMatchObject({ status: 'cancelled', reason: 'CANCELLED', effect: 'none', attempts: 1 });
    expect(record.message).toContain('did not stop when asked');
    // Reported at the executor's deadline (1000 ms), since the tool never said it stopped.
    expect(elapsed).toBeGreaterThanOrEqual(1_000);
    expect(elapsed).toBeLessThan(2_500);
  });

  it('cancels a running call; the tool stops within 100 ms and the status follows', async () => {
    const started = await harness.client.start(
      { tool: 'slow_search', input: { query: 'cats', delayMs: 20_000 } },
      agent,
    );
    await waitFor(async () =>
      (await executions('slow_search')).some(
        (line) => line['callId'] === started.callId && line['event'] === 'start',
      )
        ? true
        : undefined,
    );
    const record = await harness.client.cancelAndWait(started.callId);
    expect(record).toMatchObject({ status: 'cancelled', reason: 'CANCELLED', effect: 'none' });
    const stopped = (await executions('slow_search')).find(
      (line) => line['callId'] === started.callId && line['event'] === 'stopped',
    );
    expect(stopped).toBeDefined();
    const abortedAt = stopped!['abortedAtMs'] as number;
    const stoppedAt = stopped!['stoppedAtMs'] as number;
    expect(stoppedAt - abortedAt).toBeLessThan(100);
    const cancelledAt = Date.parse(record.transitions.at(-1)!.at);
    // Workflow time has millisecond resolution from the server; the tool had stopped before it.
    expect(cancelledAt).toBeGreaterThanOrEqual(stoppedAt - 5);
  });

  it('reports a call cancelled before its first workflow task as denied: nothing ran', async () => {
    await harness.stopWorker();
    const started = await harness.client.start(
      { tool: 'slow_search', input: { query: 'early', delayMs: 5_000 } },
      agent,
    );
    await harness.temporal.workflow.getHandle(started.callId).cancel();
    await harness.startWorker();
    const record = await harness.client.result(started.callId);
    expect(record).toMatchObject({ status: 'denied', reason: 'CANCELLED', effect: 'none' });
    expect(
      (await executions('slow_search')).filter((line) => line['callId'] === started.callId),
    ).toHaveLength(0);
  });

  describe('approval', () => {
    const approvedRecord = async (callId: string) =>
      waitFor(
        async () => {
          const record = await harness.client.get(callId);
          return record?.status === 'awaiting_approval' ? record : undefined;
        },
        { what: 'awaiting_approval' },
      );

    it('joins a waiting call from its history alone, and refuses changed arguments while it waits', async () => {
      // A client that counts describe() calls: a new run is known from the server's answer to the
      // start, and joining a running call is answered by the history read made alongside the
      // start, so neither needs one. It counts starts too: the caller's interceptors see them.
      let describes = 0;
      let starts = 0;
      const counting = watchedClient(harness, {
        interceptors: {
          workflow: [
            {
              async describe(input, next) {
                describes++;
                return next(input);
              },
              async start(input, next) {
                starts++;
                return next(input);
              },
            },
          ],
        },
      });
      const first = await counting.start(transfer('t-join'), agent);
      expect(first.disposition).toBe('started');
      expect(describes).toBe(0);
      expect(starts).toBe(1);
      await approvedRecord(first.callId);
      describes = 0;
      const joined = await counting.start(transfer('t-join'), agent);
      expect(joined).toMatchObject({ callId: first.callId, runId: first.runId, disposition: 'attached' });
      const changed = await counting.start(transfer('t-join', { amountCents: 999_999 }), agent);
      expect(changed.disposition).toBe('refused');
      expect(changed.record).toMatchObject({ status: 'denied', reason: 'KEY_MISMATCH', effect: 'none' });
      expect(describes).toBe(0);
      expect((await harness.client.get(first.callId))?.status).toBe('awaiting_approval');
      expect((await counting.reject(first.callId, { approver: 'alice' })).accepted).toBe(true);
      const records = await Promise.all([counting.result(first.callId), counting.result(joined.callId)]);
      expect(records[0]).toMatchObject({ status: 'denied', reason: 'APPROVAL_REJECTED', effect: 'none' });
      expect(records[1]).toEqual(records[0]);
      // Rejected is a failed run: the key is free again, and a new start begins a new run.
      const describesBefore = describes;
      const again = await counting.start(transfer('t-join'), agent);
      expect(again.disposition).toBe('started');
      expect(again.runId).not.toBe(first.runId);
      expect(describes).toBe(describesBefore);
      expect(starts).toBe(4);
      await approvedRecord(again.callId);
      expect((await counting.reject(again.callId, { approver: 'alice' })).accepted).toBe(true);
      expect(await counting.result(again.callId)).toMatchObject({ reason: 'APPROVAL_REJECTED' });
    });

    it("takes the server's answer to a start only from a request that carries the start's own nonce", async () => {
      // An interceptor that rewrites the memo stands in for any request that is not this start's
      // own (another caller's, run in this one's async context): its answer must not count. The
      // start then asks the slower way (the parallel read or describe) and finds a run whose nonce
      // is not its own, so it reports joining it; taking the answer would have said `started`.
      const rewriting = watchedClient(harness, {
        interceptors: {
          workflow: [
            {
              async start(input, next) {
                const memo = { ...input.options.memo, startNonce: 'foreign' };
                return next({ ...input, options: { ...input.options, memo } });
              },
            },
          ],
        },
      });
      const started = await rewriting.start(transfer('t-foreign-nonce'), agent);
      expect(started.disposition).toBe('attached');
      await approvedRecord(started.callId);
      expect((await rewriting.reject(started.callId, { approver: 'alice' })).accepted).toBe(true);
      expect(await rewriting.result(started.callId)).toMatchObject({ reason: 'APPROVAL_REJECTED' });
    });

    it('runs an approved call exactly once, bound to its arguments', async () => {
      const started = await harness.client.start(transfer('t-approve'), agent);
      const waiting = await approvedRecord(started.callId);
      expect(waiting.approval?.preview).toBe('Transfer 12.50 EUR from ACC-1 to ACC-2');
      expect(await harness.readLines(harness.tools.paths.ledgerFile)).toHaveLength(0);
      const outcome = await harness.client.approve(started.callId, { approver: 'alice', comment: 'ok' });
      expect(outcome).toMatchObject({ accepted: true, state: 'accepted' });
      const record = await harness.client.result(started.callId);
      expect(record).toMatchObject({ status: 'succeeded', effect: 'applied', key: 'transfer-t-approve' });
      expect(record.approval).toMatchObject({ decidedBy: 'alice', decision: 'approve', comment: 'ok' });
      const ledger = await harness.readLines(harness.tools.paths.ledgerFile);
      expect(ledger.filter((line) => line['reference'] === 't-approve')).toHaveLength(1);
      expect(ledger.find((line) => line['reference'] === 't-approve')?.['key']).toBe('transfer-t-approve');
    });

    it('accepts an approver by role', async () => {
      const started = await harness.client.start(transfer('t-role'), agent);
      await approvedRecord(started.callId);
      const outcome = await harness.client.approve(started.callId, { approver: 'bob', roles: ['finance'] });
      expect(outcome.accepted).toBe(true);
      expect((await harness.client.result(started.callId)).status).toBe('succeeded');
    });

    it('refuses, and records, a decision queued behind the one that counted', async () => {
      const started = await harness.client.start(transfer('t-two-approvers'), agent);
      await approvedRecord(started.callId);
      // With the worker away, two approvers decide: the worker finds both queued, and the first counts.
      await harness.stopWorker();
      let first: ReturnType<ToolgateClient['approve']> | undefined;
      let second: ReturnType<ToolgateClient['approve']> | undefined;
      try {
        first = harness.client.approve(started.callId, { approver: 'alice', runId: started.runId });
        await updateAdmitted();
        second = harness.client.approve(started.callId, {
          approver: 'bob',
          roles: ['finance'],
          runId: started.runId,
        });
        await updateAdmitted();
      } finally {
        await harness.startWorker();
      }
      expect(await first).toMatchObject({ accepted: true, state: 'accepted' });
      // Before, bob's decision stayed queued and unrecorded: his approve() could not say it was refused.
      expect(await second).toMatchObject({
        accepted: false,
        state: 'refused',
        reason: 'the call was already decided',
      });
      const record = await harness.client.result(started.callId);
      expect(record).toMatchObject({ status: 'succeeded', approval: { decidedBy: 'alice' } });
      expect(record.refusedDecisions).toHaveLength(1);
      expect(record.refusedDecisions[0]).toMatchObject({
        claimedApprover: 'bob',
        reason: 'the call was already decided',
      });
      const ledger = await harness.readLines(harness.tools.paths.ledgerFile);
      expect(ledger.filter((line) => line['reference'] === 't-two-approvers')).toHaveLength(1);
    });

    it('refuses forged, self, wrong-hash and unlisted decisions, records them, and keeps waiting', async () => {
      const started = await harness.client.start(transfer('t-refuse'), agent);
      const waiting = await approvedRecord(started.callId);
      const forged = await harness.client.sendDecision(started.callId, {
        claims: { decision: 'approve', approver: 'alice', nonce: 'forged-nonce-1' },
        signature: 'AAAA',
      });
      expect(forged).toMatchObject({ accepted: false, state: 'refused' });
      const self = await harness.client.approve(started.callId, {
        approver: agent.principal,
        roles: ['finance'],
      });
      expect(self).toMatchObject({ accepted: false, state: 'refused' });
      expect(self.reason).toContain('requester');
      const claims = {
        callId: started.callId,
        runId: waiting.runId,
        decision: 'approve' as const,
        approver: 'alice',
        approverKind: 'human' as const,
        roles: [],
        fingerprint: 'f'.repeat(64),
        issuedAt: new Date().toISOString(),
        nonce: 'wrong-hash-nonce',
      };
      const wrongHash = await harness.client.sendDecision(started.callId, harness.signer.sign(claims));
      expect(wrongHash).toMatchObject({ accepted: false, state: 'refused' });
      expect(wrongHash.reason).toContain('argument hash');
      const unlisted = await harness.client.approve(started.callId, { approver: 'mallory' });
      expect(unlisted.reason).toContain('not an approver');
      const agentApprover = await harness.client.sendDecision(
        started.callId,
        harness.signer.sign({
          ...claims,
          fingerprint: waiting.fingerprint,
          approverKind: 'agent',
          nonce: 'agent-nonce-1',
        }),
      );
      expect(agentApprover.reason).toContain('only humans');
      // A decision signed for an earlier run of the same key (one that released it) never carries over.
      const earlierRun = await harness.client.sendDecision(
        started.callId,
        harness.signer.sign({
          ...claims,
          fingerprint: waiting.fingerprint,
          runId: 'an-earlier-run',
          nonce: 'earlier-run-1',
        }),
      );
      expect(earlierRun.reason).toContain('earlier run');

      const record = await harness.client.get(started.callId);
      expect(record?.status).toBe('awaiting_approval');
      expect(record?.refusedDecisions).toHaveLength(6);
      expect(
        await harness
          .readLines(harness.tools.paths.ledgerFile)
          .then((lines) => lines.filter((line) => line['reference'] === 't-refuse')),
      ).toHaveLength(0);

      const rejected = await harness.client.reject(started.callId, {
        approver: 'alice',
        comment: 'not today',
      });
      expect(rejected.accepted).toBe(true);
      const final = await harness.client.result(started.callId);
      expect(final).toMatchObject({ status: 'denied', reason: 'APPROVAL_REJECTED', effect: 'none' });
      const late = await harness.client.approve(started.callId, { approver: 'alice' });
      expect(late).toMatchObject({ accepted: false, state: 'closed' });
      expect(
        await harness
          .readLines(harness.tools.paths.ledgerFile)
          .then((lines) => lines.filter((line) => line['reference'] === 't-refuse')),
      ).toHaveLength(0);
    });

    it('cancelling while awaiting approval means nothing runs', async () => {
      const started = await harness.client.start(transfer('t-cancel'), agent);
      await approvedRecord(started.callId);
      const record = await harness.client.cancelAndWait(started.callId);
      expect(record).toMatchObject({ status: 'denied', reason: 'CANCELLED', effect: 'none' });
      const ledger = await harness.readLines(harness.tools.paths.ledgerFile);
      expect(ledger.filter((line) => line['reference'] === 't-cancel')).toHaveLength(0);
    });

    it('survives a worker restart while waiting, then executes exactly once', async () => {
      const started = await harness.client.start(transfer('t-restart'), agent);
      await approvedRecord(started.callId);
      await harness.stopWorker();
      // With no worker, reading the live record fails within its timeout and says what to check.
      // The server either lets the deadline pass, or, when no worker has started a poll on the task
      // queue for 20 s (an idle worker's poll lasts up to a minute), refuses the query at once.
      const asked = Date.now();
      try {
        await expect(harness.client.get(started.callId, { queryTimeoutMs: 1_000 })).rejects.toThrow(
          new RegExp(
            `^No worker answered the record query for ${started.callId} ` +
              '(within 1000 ms|and the server has seen none poll its task queue recently); ' +
              'is a toolgate worker running on its task queue\\?$',
          ),
        );
        expect(Date.now() - asked).toBeLessThan(5_000);
      } finally {
        // Restarted even if the check failed, so the tests after this one keep their worker.
        await harness.startWorker();
      }
      const outcome = await harness.client.approve(started.callId, { approver: 'alice' });
      expect(outcome.accepted).toBe(true);
      const record: CallRecord = await harness.client.result(started.callId);
      expect(record.status).toBe('succeeded');
      const ledger = await harness.readLines(harness.tools.paths.ledgerFile);
      expect(ledger.filter((line) => line['reference'] === 't-restart')).toHaveLength(1);
    });
    it('names the missing worker when the server refuses a query early: no poll for 20 s', async () => {
      const started = await harness.client.start(transfer('t-no-poller'), agent);
      await approvedRecord(started.callId);
      await harness.stopWorker();
      try {
        // matching.queryPollerUnavailableWindow is 20 s on the dev server; past it, the server
        // answers FAILED_PRECONDITION instead of letting the query's deadline run out.
        await new Promise((resolve) => setTimeout(resolve, 21_000));
        await expect(harness.client.get(started.callId, { queryTimeoutMs: 1_000 })).rejects.toThrow(
          `No worker answered the record query for ${started.callId} and the server has seen none poll ` +
            'its task queue recently; is a toolgate worker running on its task queue?',
        );
      } finally {
        await harness.startWorker();
      }
      expect(await harness.client.cancelAndWait(started.callId)).toMatchObject({
        status: 'denied',
        effect: 'none',
      });
    });

    it('reads one page of a long history on a start with its key (forged decisions made it long)', async () => {
      let pagedReads = 0;
      const peeks: number[] = [];
      const watched = watchedClient(harness, {
        aroundHistoryRead: async (historyRequest, read) => {
          if (historyRequest.nextPageToken?.length) pagedReads++;
          const response = await read(historyRequest);
          if (historyRequest.maximumPageSize) peeks.push(response.history?.events?.length ?? 0);
          return response;
        },
      });
      const first = await watched.start(transfer('t-long'), agent);
      await approvedRecord(first.callId);
      const handle = harness.temporal.workflow.getHandle(first.callId);
      // One at a time: each signal is sent only once the one before it was refused, so that each
      // signal and the workflow task it wakes are batches of their own (a signal that arrives while
      // a task runs is written with that task, and a busy worker would merge many). A page is
      // counted in batches, and the history must run to more than one page of them.
      const forged = 80;
      const refusedSoFar = async () => {
        const record = await harness.client.get(first.callId);
        return (record?.refusedDecisions.length ?? 0) + (record?.refusedDecisionsDropped ?? 0);
      };
      for (let index = 0; index < forged; index++) {
        await handle.signal('decision', {
          claims: { decision: 'approve', approver: 'alice', nonce: `forged-long-${index}` },
          signature: 'AAAA',
        });
        await waitFor(async () => ((await refusedSoFar()) > index ? true : undefined), {
          what: `forged decision ${index + 1} refused`,
          intervalMs: 10,
        });
      }
      const fullLength = (await handle.fetchHistory()).events?.length ?? 0;
      expect(fullLength).toBeGreaterThan(3 * forged);

      peeks.length = 0;
      const joined = await watched.start(transfer('t-long'), agent);
      expect(joined).toMatchObject({ callId: first.callId, runId: first.runId, disposition: 'attached' });
      // The start read one page, not the whole history, and still knew whose call it joined.
      expect(peeks).toHaveLength(1);
      expect(peeks[0]).toBeLessThan(fullLength);
      expect((await watched.approve(first.callId, { approver: 'alice' })).accepted).toBe(true);
      const record = await watched.result(first.callId);
      expect(record).toMatchObject({ status: 'succeeded', effect: 'applied' });
      // Closed, its close event beyond the first page: served the slower way, with no paging, and
      // without reading that first page a second time (the close event could not be on it).
      peeks.length = 0;
      const again = await watched.start(transfer('t-long'), agent);
      expect(again).toMatchObject({ disposition: 'existing', runId: first.runId, record });
      expect(pagedReads).toBe(0);
      expect(peeks).toHaveLength(1);
    });

    it('says a decision was dropped unread when a flood filled the queue, and a resend counts', async () => {
      const started = await harness.client.start(transfer('t-flood'), agent);
      await approvedRecord(started.callId);
      const handle = harness.temporal.workflow.getHandle(started.callId);
      // With the worker stopped, 60 forged decisions and then a valid one pile up; the worker reads
      // them in one activation, queues the first 50 to be checked and drops the other 11 unread.
      await harness.stopWorker();
      let outcome: ReturnType<ToolgateClient['approve']> | undefined;
      try {
        for (let index = 0; index < 60; index++) {
          await handle.signal(decisionSignal, {
            claims: { decision: 'approve', approver: 'alice', nonce: `flood-${index}` },
            signature: 'AAAA',
          });
        }
        // The valid decision goes as an Update, which the server holds (unwritten) until a worker
        // takes it; it reaches the worker after the signals, in the same activation.
        await waitFor(
          async () => {
            const events = (await handle.fetchHistory()).events ?? [];
            return events.filter((event) => event.workflowExecutionSignaledEventAttributes).length === 60
              ? true
              : undefined;
          },
          { what: 'the 60 forged decisions to reach the server' },
        );
        outcome = harness.client.approve(started.callId, { approver: 'alice', runId: started.runId });
        await new Promise((resolve) => setTimeout(resolve, 1_000));
      } finally {
        await harness.startWorker();
      }
      const dropped = await outcome;
      expect(dropped).toMatchObject({ accepted: false, state: 'dropped' });
      expect(dropped?.reason).toMatch(/^this decision was dropped unread and did not count\. /);
      expect(dropped?.reason).toContain('(11 dropped unread so far)');
      const flooded = await harness.client.get(started.callId);
      expect(flooded).toMatchObject({ status: 'awaiting_approval', decisionsDroppedUnread: 11 });
      // The last 20 dropped nonces at most: here all 11, the ten forged ones and the valid one last.
      expect(flooded?.droppedUnreadNonces).toHaveLength(11);
      expect(flooded?.droppedUnreadNonces?.slice(0, 10)).toEqual(
        Array.from({ length: 10 }, (_, index) => `flood-${50 + index}`),
      );
      expect(flooded?.approval?.decisionNonce).toBeUndefined();

      // Once the queue has drained, the same approver's decision, sent again, counts.
      await waitFor(
        async () =>
          (await harness.client.get(started.callId))?.refusedDecisions.length === 50 ? true : undefined,
        { what: 'the 50 queued forgeries to be refused' },
      );
      expect(await harness.client.approve(started.callId, { approver: 'alice' })).toMatchObject({
        accepted: true,
      });
      const record = await harness.client.result(started.callId);
      expect(record).toMatchObject({ status: 'succeeded', effect: 'applied', decisionsDroppedUnread: 11 });
      const ledger = await harness.readLines(harness.tools.paths.ledgerFile);
      expect(ledger.filter((line) => line['reference'] === 't-flood')).toHaveLength(1);
    }, 60_000);
  });
});

describe('approval expiry', () => {
  let harness: Harness;
  beforeAll(async () => {
    harness = await createHarness({
      policy: {
        allow: ['transfer_funds'],
        approvals: { transfer_funds: { expiresAfterMs: 1_500 } },
      },
    });
  });
  afterAll(async () => harness?.close());

  it('expires an unanswered call with APPROVAL_EXPIRED and runs nothing', async () => {
    const started = Date.now();
    const record = await harness.client.call(transfer('t-expire'), agent);
    expect(record).toMatchObject({ status: 'denied', reason: 'APPROVAL_EXPIRED', effect: 'none' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_500);
    expect(record.transitions.map((transition) => transition.status)).toEqual([
      'pending',
      'awaiting_approval',
      'denied',
    ]);
    expect(await harness.readLines(harness.tools.paths.ledgerFile)).toHaveLength(0);
    // The key was released because nothing ran: the same request may be sent again.
    const again = await harness.client.start(transfer('t-expire'), agent);
    expect(again.disposition).toBe('started');
    await harness.client.cancelAndWait(again.callId);
  });
});

describe('approval expiry with decisions queued', () => {
  let harness: Harness;
  beforeAll(async () => {
    // Long enough to stop the worker and send two decisions before the call expires, on a busy machine.
    harness = await createHarness({
      policy: { allow: ['transfer_funds'], approvals: { transfer_funds: { expiresAfterMs: 10_000 } } },
    });
  });
  afterAll(async () => harness?.close());

  /** Starts a transfer and returns it with the time it expires, once it waits for approval. */
  const startWaiting = async (reference: string) => {
    const started = await harness.client.start(transfer(reference), agent);
    const waiting = await waitFor(
      async () => {
        const record = await harness.client.get(started.callId);
        return record?.status === 'awaiting_approval' ? record : undefined;
      },
      { what: 'awaiting_approval' },
    );
    const expiresAt = Date.parse(waiting.approval?.expiresAt ?? '');
    expect(Number.isFinite(expiresAt)).toBe(true);
    return { started, expiresAt, handle: harness.temporal.workflow.getHandle(started.callId) };
  };
  it('still checks a valid decision queued behind a forged one when checking that ran past the expiry', async () => {
    const { started, expiresAt, handle } = await startWaiting('t-queued-at-expiry');
    // With the worker stopped, a forged decision and then a valid one arrive before the expiry,
    // and the worker sees them only after it: the forged one is checked first, past the expiry.
    await harness.stopWorker();
    let outcome: ReturnType<ToolgateClient['approve']> | undefined;
    try {
      await handle.signal(decisionSignal, {
        claims: { decision: 'approve', approver: 'alice', nonce: 'forged-at-expiry' },
        signature: 'AAAA',
      });
      await signalsArrived(handle, 1);
      outcome = harness.client.approve(started.callId, { approver: 'alice', runId: started.runId });
      await updateAdmitted();
      expect(Date.now()).toBeLessThan(expiresAt);
      await new Promise((resolve) => setTimeout(resolve, expiresAt - Date.now() + 300));
    } finally {
      await harness.startWorker();
    }
    expect(await outcome).toMatchObject({ accepted: true, state: 'accepted' });
    const record = await harness.client.result(started.callId);
    expect(record).toMatchObject({ status: 'succeeded', effect: 'applied' });
    expect(record.refusedDecisions.map((entry) => entry.nonce)).toEqual(['forged-at-expiry']);
    const ledger = await harness.readLines(harness.tools.paths.ledgerFile);
    expect(ledger.filter((line) => line['reference'] === 't-queued-at-expiry')).toHaveLength(1);
  });

  it('refuses a decision signed after the expiry, even when the worker reads it with the expiry', async () => {
    const { started, expiresAt } = await startWaiting('t-signed-late');
    // The worker is away over the expiry, and the approval is signed after it: the worker then
    // reads the decision and the expiry's timer in the same workflow task.
    await harness.stopWorker();
    let outcome: ReturnType<ToolgateClient['approve']> | undefined;
    try {
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, expiresAt - Date.now()) + 1_500));
      outcome = harness.client.approve(started.callId, { approver: 'alice', runId: started.runId });
      await updateAdmitted();
    } finally {
      await harness.startWorker();
    }
    expect(await outcome).toMatchObject({
      accepted: false,
      state: 'refused',
      reason: 'the decision was signed after the call expired',
    });
    const record = await harness.client.result(started.callId);
    expect(record).toMatchObject({ status: 'denied', reason: 'APPROVAL_EXPIRED', effect: 'none' });
    const ledger = await harness.readLines(harness.tools.paths.ledgerFile);
    expect(ledger.filter((line) => line['reference'] === 't-signed-late')).toHaveLength(0);
  });
});
