import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exampleCatalog } from '../../examples/contracts.ts';
import { type BulkReplayProgress, ToolgateOperations } from '../../src/client/operations.ts';
import type { CallContext } from '../../src/contracts/call-record.ts';
import { agent, createHarness, type Harness } from '../support/harness.ts';
import { waitFor } from '../support/wait.ts';

const requester: CallContext = { tenant: 'acme', principal: 'bob', principalKind: 'human' };

describe('replay and undo', () => {
  let harness: Harness;
  let operations: ToolgateOperations;
  beforeAll(async () => {
    harness = await createHarness();
    operations = new ToolgateOperations({ client: harness.client, catalog: exampleCatalog });
  });
  afterAll(async () => harness?.close());

  it('replays a failed readonly call once its tool is fixed, and the audit links both runs', async () => {
    await rm(harness.tools.paths.configFile, { force: true });
    const failed = await harness.client.call({ tool: 'read_config', input: { name: 'region' } }, agent);
    expect(failed.status).toBe('failed');
    expect(failed.effect).toBe('none');

    // Visibility lags, so wait until the failed run is listed by its status.
    await waitFor(
      async () => {
        const listed = await operations.list({ status: 'failed', tool: 'read_config', tenant: 'acme' });
        return listed.some((call) => call.runId === failed.runId) ? true : undefined;
      },
      { what: 'the failed call to be listed' },
    );

    await writeFile(harness.tools.paths.configFile, JSON.stringify({ region: 'eu-west' }));
    const outcome = await operations.replay(failed.callId, { operator: 'oscar' });
    expect(outcome.replayed).toBe(true);
    if (!outcome.replayed) return;
    const replayed = await harness.client.result(failed.callId, outcome.started.runId);
    expect(replayed.status).toBe('succeeded');
    expect(replayed.output).toEqual({ name: 'region', value: 'eu-west' });
    expect(replayed.callId).toBe(failed.callId);
    expect(replayed.runId).not.toBe(failed.runId);
    expect(replayed.replay).toEqual({ replacesRunId: failed.runId, operator: 'oscar', force: false });

    // The replaced run is still readable, and the call ID lists both runs.
    const original = await operations.get(failed.callId, { runId: failed.runId });
    expect(original?.status).toBe('failed');
    const runs = await waitFor(
      async () => {
        const listed = await operations.list({ tool: 'read_config', tenant: 'acme', since: '10m' });
        const mine = listed.filter((call) => call.callId === failed.callId);
        return mine.length === 2 && mine.some((call) => call.status === 'succeeded') ? mine : undefined;
      },
      { what: 'both runs to be listed' },
    );
    expect(runs.map((call) => call.status).sort()).toEqual(['failed', 'succeeded']);

    // A succeeded call is never replayed, and the refusal says why.
    const again = await operations.replay(failed.callId, { operator: 'oscar' });
    expect(again.replayed).toBe(false);
    if (!again.replayed) expect(again.refusal).toMatch(/succeeded/);
  });

  it('refuses to replay an irreversible call with an unknown effect unless forced with a reason', async () => {
    // The ledger path is a directory, so the transfer fails in a way the tool cannot vouch for.
    await mkdir(harness.tools.paths.ledgerFile, { recursive: true });
    const input = {
      reference: 'replay-unknown-1',
      from: 'ACC-1',
      to: 'ACC-2',
      amountCents: 1250,
      currency: 'EUR',
      memo: null,
    };
    const started = await harness.client.start({ tool: 'transfer_funds', input }, requester);
    await waitFor(async () =>
      (await harness.client.get(started.callId))?.status === 'awaiting_approval' ? true : undefined,
    );
    const decision = await harness.client.approve(started.callId, { approver: 'alice' });
    expect(decision.accepted).toBe(true);
    const failed = await harness.client.result(started.callId);
    expect(failed.status).toBe('failed');
    expect(failed.effect).toBe('unknown');

    const refused = await operations.replay(started.callId, { operator: 'oscar' });
    expect(refused.replayed).toBe(false);
    if (!refused.replayed) expect(refused.refusal).toMatch(/--force --reason/);
    const noReason = await operations.replay(started.callId, { operator: 'oscar', force: true });
    expect(noReason.replayed).toBe(false);

    await rm(harness.tools.paths.ledgerFile, { recursive: true, force: true });
    const forced = await operations.replay(started.callId, {
      operator: 'oscar',
      force: true,
      reason: 'ledger checked: transfer replay-unknown-1 is absent',
    });
    expect(forced.replayed).toBe(true);
    if (!forced.replayed) return;
    // The replay is a new approval-tier run: it waits for a human again.
    await waitFor(async () =>
      (await harness.client.get(started.callId))?.status === 'awaiting_approval' ? true : undefined,
    );
    expect((await harness.client.approve(started.callId, { approver: 'alice' })).accepted).toBe(true);
    const record = await harness.client.result(started.callId, forced.started.runId);
    expect(record.status).toBe('succeeded');
    expect(record.replay).toEqual({
      replacesRunId: failed.runId,
      operator: 'oscar',
      force: true,
      reason: 'ledger checked: transfer replay-unknown-1 is absent',
    });
    expect(await harness.readLines(harness.tools.paths.ledgerFile)).toHaveLength(1);
  });

  it('two replays of the same run that race start one run between them, even when the first has closed', async () => {
    await writeFile(harness.tools.paths.configFile, JSON.stringify({ region: 'eu-west' }));
    // A setting that does not exist: each run reads the file (one line in the executions file),
    // then fails with effect none, so the call stays replayable.
    const request = { tool: 'read_config', input: { name: 'race-missing' } } as const;
    const first = await harness.client.call(request, agent);
    expect(first.status).toBe('failed');
    const runsOfCall = async () =>
      (await harness.readLines(harness.tools.paths.executionsFile)).filter(
        (line) => line['callId'] === first.callId,
      ).length;
    expect(await runsOfCall()).toBe(1);

    // The race, made deterministic: this operator's replay reads run 1, and before its start reaches
    // the server another operator's replay of run 1 starts and closes.
    let winner: string | undefined;
    const racing = new Proxy(harness.client, {
      get(target, property) {
        if (property === 'start') {
          return async (...args: Parameters<typeof target.start>) => {
            const [call, context, options] = args;
            const other = await target.start(call, context, {
              ...options,
              replay: { replacesRunId: first.runId, operator: 'olga', force: false },
            });
            expect(other.disposition).toBe('started');
            winner = other.runId;
            await target.result(first.callId, other.runId);
            return target.start(...args);
          };
        }
        const value = Reflect.get(target, property, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const late = new ToolgateOperations({ client: racing, catalog: exampleCatalog });
    const outcome = await late.replay(first.callId, { operator: 'oscar' });
    expect(outcome.replayed).toBe(false);
    if (!outcome.replayed) {
      expect(outcome.refusal).toContain(`Nothing was started: run ${winner}`);
      expect(outcome.refusal).toContain(`toolgate get ${first.callId}`);
    }
    // The tool ran twice: the call and the one replay that won. The call's latest run is the winner's.
    expect(await runsOfCall()).toBe(2);
    expect((await harness.client.temporal.workflow.getHandle(first.callId).describe()).runId).toBe(winner);

    // A replay of the latest run is a new replay, with a request ID of its own.
    const next = await operations.replay(first.callId, { operator: 'oscar' });
    expect(next.replayed).toBe(true);
    if (next.replayed) {
      expect(next.replacesRunId).toBe(winner);
      expect((await harness.client.result(first.callId, next.started.runId)).status).toBe('failed');
    }
    expect(await runsOfCall()).toBe(3);
  });

  it('bulk-replays 20 failed calls with progress and ends with 20 successes', async () => {
    await rm(harness.tools.paths.configFile, { force: true });
    const tenant = 'bulk-tenant';
    const context: CallContext = { ...agent, tenant };
    const failed = await Promise.all(
      Array.from({ length: 20 }, () =>
        harness.client.call({ tool: 'read_config', input: { name: 'region' } }, context),
      ),
    );
    expect(failed.every((record) => record.status === 'failed')).toBe(true);
    await waitFor(
      async () =>
        (await operations.list({ status: 'failed', tenant, limit: 50 })).length === 20 ? true : undefined,
      { what: '20 failed calls to be listed', timeoutMs: 20_000 },
    );

    const dryRun = await operations.replayMany(
      { status: 'failed', tenant },
      { operator: 'oscar', dryRun: true },
    );
    expect(dryRun.total).toBe(20);
    expect(dryRun.items.every((item) => item.outcome === 'planned')).toBe(true);

    await writeFile(harness.tools.paths.configFile, JSON.stringify({ region: 'eu-west' }));
    const progress: BulkReplayProgress[] = [];
    const summary = await operations.replayMany(
      { status: 'failed', tool: 'read_config', tenant, since: '1h' },
      { operator: 'oscar', concurrency: 5, onProgress: (step) => progress.push(step) },
    );
    expect(summary.total).toBe(20);
    expect(summary.succeeded).toBe(20);
    expect(summary.failed + summary.refused).toBe(0);
    expect(progress.map((step) => step.done)).toEqual(Array.from({ length: 20 }, (_, index) => index + 1));
    expect(progress.at(-1)?.succeeded).toBe(20);
    const executions = await harness.readLines(harness.tools.paths.executionsFile);
    const replayedIds = new Set(failed.map((record) => record.callId));
    expect(executions.filter((line) => replayedIds.has(String(line['callId']))).length).toBe(20);
  });

  it('undo runs the compensation once, even when asked twice at the same time and again later', async () => {
    const record = await harness.client.call(
      { tool: 'add_label', input: { item: 'ticket-9', label: 'urgent' } },
      agent,
    );
    expect(record.status).toBe('succeeded');
    const labelsBefore = JSON.parse(await readFile(harness.tools.paths.labelsFile, 'utf8')) as Record<
      string,
      string[]
    >;
    expect(labelsBefore['ticket-9']).toEqual(['urgent']);

    const [first, second] = await Promise.all([
      operations.undo(record.callId, { operator: 'oscar' }),
      operations.undo(record.callId, { operator: 'olga' }),
    ]);
    const third = await operations.undo(record.callId, { operator: 'oscar' });
    for (const outcome of [first, second, third]) expect(outcome.undone).toBe(true);
    const fresh = [first, second, third].filter((outcome) => outcome.undone && !outcome.alreadyDone);
    expect(fresh).toHaveLength(1);

    const removals = (await harness.readLines(harness.tools.paths.executionsFile)).filter(
      (line) => line['tool'] === 'remove_label' && line['callId'] === record.callId,
    );
    expect(removals).toHaveLength(1);
    const labelsAfter = JSON.parse(await readFile(harness.tools.paths.labelsFile, 'utf8')) as Record<
      string,
      string[]
    >;
    expect(labelsAfter['ticket-9']).toEqual([]);

    const withUndo = await operations.get(record.callId);
    expect(withUndo?.undo?.status).toBe('succeeded');
    expect(['oscar', 'olga']).toContain(withUndo?.undo?.operator);

    const readonly = await harness.client.call({ tool: 'read_config', input: { name: 'region' } }, agent);
    const refused = await operations.undo(readonly.callId, { operator: 'oscar' });
    expect(refused.undone).toBe(false);
    if (!refused.undone) expect(refused.refusal).toMatch(/reversible/);
  });
});
