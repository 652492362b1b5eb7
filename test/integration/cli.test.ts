import { writeFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type CliRunner, createCliRunner } from '../support/cli-runner.ts';
import { createHarness, type Harness } from '../support/harness.ts';
import { scheduledActivityTypes } from '../support/history.ts';
import { waitFor } from '../support/wait.ts';

describe('toolgate CLI (the real binary, as a process)', () => {
  let harness: Harness;
  let run: CliRunner;
  beforeAll(async () => {
    harness = await createHarness({ config: { region: 'eu-west' } });
    run = createCliRunner({
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TOOLGATE_TASK_QUEUE: harness.taskQueue,
      // The harness worker trusts the public key in <dataDir>/keys; the CLI signs with its private key.
      TOOLGATE_DATA_DIR: harness.dataDir,
    });
  });
  afterAll(async () => harness?.close());

  it('call: succeeded exits 0, failed exits 3, denied exits 2; get shows the record or exits 5', async () => {
    const [succeeded, failed, denied, unknown] = await Promise.all([
      run('call', 'read_config', '--input', '{"name":"region"}', '--tenant', 'cli'),
      run('call', 'read_config', '--input', '{"name":"missing_setting"}', '--tenant', 'cli'),
      run('call', 'read_config', '--input', '{"name":"region","extra":1}', '--tenant', 'cli'),
      run('get', 'toolgate/cli/read_config/~no-such-call'),
    ]);
    expect(succeeded.code).toBe(0);
    expect(succeeded.json['status']).toBe('succeeded');
    expect(succeeded.json['output']).toEqual({ name: 'region', value: 'eu-west' });
    expect(failed.code).toBe(3);
    expect(failed.json['status']).toBe('failed');
    expect(denied.code).toBe(2);
    expect(denied.json['reason']).toBe('INVALID_INPUT');
    expect(unknown.code).toBe(5);

    const got = await run('get', String(succeeded.json['callId']));
    expect(got.code).toBe(0);
    expect(got.json['status']).toBe('succeeded');
    expect((got.json['transitions'] as Array<{ status: string }>).map((step) => step.status)).toEqual([
      'pending',
      'running',
      'succeeded',
    ]);

    // list by status, once visibility has caught up.
    const listed = await waitFor(
      async () => {
        const result = await run('list', '--status', 'failed', '--tenant', 'cli', '--tool', 'read_config');
        const calls = result.json as unknown as Array<{ callId: string; status: string }>;
        return result.code === 0 &&
          Array.isArray(calls) &&
          calls.some((call) => call.callId === failed.json['callId'])
          ? calls
          : undefined;
      },
      { what: 'the failed call in list --status failed', timeoutMs: 20_000, intervalMs: 300 },
    );
    expect(listed.every((call) => call.status === 'failed')).toBe(true);
    expect(listed.some((call) => call.callId === succeeded.json['callId'])).toBe(false);
  });

  it('call --gate-protocol 2 starts a protocol-2 run (rollout with older workers); other values are refused', async () => {
    const scheduledActivities = (callId: string) => scheduledActivityTypes(harness.temporal, callId);
    const [pinned, current, refused] = await Promise.all([
      run(
        'call',
        'read_config',
        '--input',
        '{"name":"region"}',
        '--tenant',
        'cli-p2',
        '--gate-protocol',
        '2',
      ),
      run('call', 'read_config', '--input', '{"name":"region"}', '--tenant', 'cli-p3'),
      run('call', 'read_config', '--input', '{"name":"region"}', '--gate-protocol', '4'),
    ]);
    expect(pinned.code).toBe(0);
    expect(pinned.json['status']).toBe('succeeded');
    // Protocol 2 runs a readonly tool with runTool; protocol 3 with checkAndRunTool.
    expect(await scheduledActivities(String(pinned.json['callId']))).toEqual(['runTool']);
    expect(current.code).toBe(0);
    expect(await scheduledActivities(String(current.json['callId']))).toEqual(['checkAndRunTool']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(
      "'--gate-protocol <n>' argument '4' is invalid. Allowed choices are 2, 3.",
    );
  });

  it('approve and reject: a non-approver is refused (4), an approver approves (0) and the transfer runs once', async () => {
    const transfer = (reference: string, memo: string | null) =>
      JSON.stringify({ reference, from: 'ACC-1', to: 'ACC-2', amountCents: 4200, currency: 'EUR', memo });
    const context = ['--tenant', 'cli', '--principal', 'agent-7', '--principal-kind', 'agent', '--no-wait'];
    const [first, second] = await Promise.all([
      run('call', 'transfer_funds', '--input', transfer('cli-approve-1', 'rent'), ...context),
      run('call', 'transfer_funds', '--input', transfer('cli-reject-1', null), ...context),
    ]);
    expect(first.code).toBe(0);
    const approveId = String(first.json['callId']);
    const rejectId = String(second.json['callId']);
    for (const id of [approveId, rejectId]) {
      await waitFor(async () =>
        (await harness.client.get(id))?.status === 'awaiting_approval' ? true : undefined,
      );
    }

    // The intruder goes first: a refused decision is recorded and the call keeps waiting.
    const intruder = await run('approve', approveId, '--as', 'mallory');
    const [approved, rejected, rejectWithoutReason] = await Promise.all([
      run('approve', approveId, '--as', 'alice', '--comment', 'matches invoice', '--wait'),
      run('reject', rejectId, '--as', 'alice', '--reason', 'wrong account'),
      run('reject', rejectId, '--as', 'alice'),
    ]);
    expect(intruder.code).toBe(4);
    expect(String(intruder.json['reason'])).toMatch(/not an approver/);
    expect(approved.code).toBe(0);
    expect((approved.json['record'] as { status: string }).status).toBe('succeeded');
    expect(rejected.code).toBe(0);
    expect(rejected.json['accepted']).toBe(true);
    expect(rejectWithoutReason.code).toBe(1);

    const rejectedCall = await run('get', rejectId);
    expect(rejectedCall.code).toBe(0);
    expect(rejectedCall.json['status']).toBe('denied');
    expect(rejectedCall.json['reason']).toBe('APPROVAL_REJECTED');
    const approvedCall = await run('get', approveId);
    expect((approvedCall.json['refusedDecisions'] as unknown[]).length).toBe(1);
    expect(await harness.readLines(harness.tools.paths.ledgerFile)).toHaveLength(1);

    const late = await run('approve', rejectId, '--as', 'alice');
    expect(late.code).toBe(4);
    expect(late.json['state']).toBe('closed');
  });

  it('approve --run decides only the run that was read: a call restarted with new arguments is refused (4)', async () => {
    const transfer = (amountCents: number) =>
      JSON.stringify({
        reference: 'cli-rerun-1',
        from: 'ACC-1',
        to: 'ACC-2',
        amountCents,
        currency: 'EUR',
        memo: null,
      });
    const context = ['--tenant', 'cli', '--principal', 'agent-7', '--principal-kind', 'agent', '--no-wait'];
    const awaiting = (id: string, notRun?: string) =>
      waitFor(async () => {
        const record = await harness.client.get(id);
        return record?.status === 'awaiting_approval' && record.runId !== notRun ? record.runId : undefined;
      });
    const first = await run('call', 'transfer_funds', '--input', transfer(4200), ...context);
    const id = String(first.json['callId']);
    const readRun = await awaiting(id);
    // What the approver read: `get` prints the run.
    expect((await run('get', id)).json['runId']).toBe(readRun);

    // Somebody rejects it, which frees the key, and the model asks again with another amount.
    expect((await run('reject', id, '--as', 'alice', '--reason', 'duplicate')).code).toBe(0);
    const second = await run('call', 'transfer_funds', '--input', transfer(990_000), ...context);
    expect(second.json['callId']).toBe(id);
    const currentRun = await awaiting(id, readRun);

    const stale = await run('approve', id, '--as', 'alice', '--run', readRun);
    expect(stale.code).toBe(4);
    expect(stale.json['state']).toBe('refused');
    expect(String(stale.json['reason'])).toMatch(/restarted since you read it/);
    // Refused before signing: nothing reached the call, which keeps waiting.
    const waiting = await harness.client.get(id);
    expect(waiting?.status).toBe('awaiting_approval');
    expect(waiting?.refusedDecisions).toEqual([]);

    const current = await run('approve', id, '--as', 'alice', '--run', currentRun, '--wait');
    expect(current.code).toBe(0);
    expect((current.json['record'] as { input: { amountCents: number } }).input.amountCents).toBe(990_000);
    const ledger = await harness.readLines(harness.tools.paths.ledgerFile);
    expect(ledger.filter((line) => line['reference'] === 'cli-rerun-1')).toHaveLength(1);
  });

  it('a usage mistake exits 1, and with --json says what is wrong as JSON on stdout', async () => {
    const missing = await run('call', 'read_config');
    expect(missing.code).toBe(1);
    expect(missing.json).toEqual({
      ok: false,
      exitCode: 1,
      error: "required option '--input <json>' not specified",
    });
    expect(missing.stderr).toContain('run with --help for usage');
    const badChoice = await run('list', '--effect', 'bogus');
    expect(badChoice.code).toBe(1);
    expect(String(badChoice.json['error'])).toMatch(/Allowed choices are none, applied, unknown/);
  });

  it('cancel stops an open call (0) and refuses a closed one (4); approving it is refused (4)', async () => {
    const started = await run(
      'call',
      'slow_search',
      '--input',
      '{"query":"archive","delayMs":30000}',
      '--tenant',
      'cli',
      '--no-wait',
    );
    const id = String(started.json['callId']);
    await waitFor(async () => ((await harness.client.get(id))?.status === 'running' ? true : undefined));
    // A readonly call never waits for a human: a decision is refused at once, not left unread.
    const asked = Date.now();
    const pointless = await run('approve', id, '--as', 'alice');
    expect(pointless.code).toBe(4);
    expect(String(pointless.json['reason'])).toMatch(/readonly-tier, which never waits for a human decision/);
    expect(Date.now() - asked).toBeLessThan(10_000);
    expect((await harness.client.get(id))?.refusedDecisions).toEqual([]);
    const cancelled = await run('cancel', id);
    expect(cancelled.code).toBe(0);
    expect(cancelled.json['status']).toBe('cancelled');
    const again = await run('cancel', id);
    expect(again.code).toBe(4);
  });

  it('replay re-runs a fixed failed call (0), refuses a succeeded one (4); undo runs its compensation once', async () => {
    const failed = await run('call', 'read_config', '--input', '{"name":"feature_flag"}', '--tenant', 'cli');
    expect(failed.code).toBe(3);
    const id = String(failed.json['callId']);
    await writeFile(
      harness.tools.paths.configFile,
      JSON.stringify({ region: 'eu-west', feature_flag: true }),
    );

    const replayed = await run('replay', id, '--as', 'oscar');
    expect(replayed.code).toBe(0);
    const record = replayed.json['record'] as {
      status: string;
      replay: { replacesRunId: string; operator: string };
    };
    expect(record.status).toBe('succeeded');
    expect(record.replay).toMatchObject({ replacesRunId: failed.json['runId'], operator: 'oscar' });
    const refused = await run('replay', id);
    expect(refused.code).toBe(4);
    expect(String(refused.json['refusal'])).toMatch(/succeeded/);

    const labelled = await run(
      'call',
      'add_label',
      '--input',
      '{"item":"ticket-1","label":"vip"}',
      '--tenant',
      'cli',
    );
    expect(labelled.code).toBe(0);
    const labelId = String(labelled.json['callId']);
    const [firstUndo, secondUndo] = await Promise.all([
      run('undo', labelId, '--as', 'oscar'),
      run('undo', labelId, '--as', 'olga'),
    ]);
    expect([firstUndo.code, secondUndo.code]).toEqual([0, 0]);
    expect([firstUndo.json['alreadyDone'], secondUndo.json['alreadyDone']].sort()).toEqual([false, true]);
    const removals = (await harness.readLines(harness.tools.paths.executionsFile)).filter(
      (line) => line['tool'] === 'remove_label' && line['callId'] === labelId,
    );
    expect(removals).toHaveLength(1);
    const shown = await run('get', labelId);
    expect((shown.json['undo'] as { status: string }).status).toBe('succeeded');
    const undoReadonly = await run('undo', id);
    expect(undoReadonly.code).toBe(4);
  });
});
