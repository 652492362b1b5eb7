import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { cp, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { WorkflowNotFoundError } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type CliRunner, createCliRunner, exampleConfig, exampleEnv } from '../support/cli-runner.ts';
import { agent, createHarness, type Harness } from '../support/harness.ts';
import { scheduledActivityTypes } from '../support/history.ts';
import { waitFor } from '../support/wait.ts';

const binary = fileURLToPath(new URL('../../bin/toolgate.js', import.meta.url));

/** Runs the binary without `--json`: what an operator sees on a terminal. */
type TextRunner = (...args: string[]) => Promise<{ code: number; stdout: string; stderr: string }>;

function createTextRunner(env: Readonly<Record<string, string>>): TextRunner {
  const fullEnv = exampleEnv(env);
  return (...args) =>
    new Promise((resolve) => {
      execFile(
        process.execPath,
        [binary, ...args],
        { env: fullEnv, timeout: 60_000 },
        (error, stdout, stderr) => {
          resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr });
        },
      );
    });
}

/** Anything a terminal would act on rather than print, apart from the line ends. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point.
const terminalControl = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/;

describe('toolgate CLI (the real binary, as a process)', () => {
  let harness: Harness;
  let run: CliRunner;
  let runText: TextRunner;
  beforeAll(async () => {
    harness = await createHarness({ config: { region: 'eu-west' } });
    const env = {
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TOOLGATE_TASK_QUEUE: harness.taskQueue,
      // The harness worker trusts the public key in <dataDir>/keys; the CLI signs with its private key.
      TOOLGATE_DATA_DIR: harness.dataDir,
    };
    run = createCliRunner(env);
    runText = createTextRunner(env);
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

  it('approve with an approvers section in the config: names compare without case, roles come from the config', async () => {
    // The example tools with a registry: alice holds finance; names and roles come from here.
    const configFile = join(harness.dataDir, 'approvers.config.mjs');
    await writeFile(
      configFile,
      [
        `import base from ${JSON.stringify(pathToFileURL(exampleConfig).href)};`,
        "export default { ...base, approvers: [{ name: 'alice', roles: ['finance'] }] };",
        '',
      ].join('\n'),
    );
    const withRegistry = (...args: string[]) => run(...args, '--config', configFile);
    const input = JSON.stringify({
      reference: 'cli-registry-1',
      from: 'ACC-1',
      to: 'ACC-2',
      amountCents: 990,
      currency: 'EUR',
      memo: null,
    });
    const started = await withRegistry(
      'call',
      'transfer_funds',
      '--input',
      input,
      '--tenant',
      'cli',
      '--principal',
      'agent-7',
      '--principal-kind',
      'agent',
      '--no-wait',
    );
    const id = String(started.json['callId']);
    await waitFor(async () =>
      (await harness.client.get(id))?.status === 'awaiting_approval' ? true : undefined,
    );

    const [stranger, borrowedRole] = await Promise.all([
      withRegistry('approve', id, '--as', 'mallory'),
      withRegistry('approve', id, '--as', 'alice', '--role', 'admin'),
    ]);
    expect(stranger.code).toBe(4);
    expect(String(stranger.json['error'])).toContain(
      `"mallory" is not an approver in ${configFile} (approvers: alice)`,
    );
    expect(borrowedRole.code).toBe(4);
    expect(String(borrowedRole.json['error'])).toContain('--role admin: alice does not hold this role');
    // Nothing was signed or sent for either: the call has no refused decision.
    expect((await harness.client.get(id))?.refusedDecisions).toEqual([]);

    const approved = await withRegistry('approve', id, '--as', ' ALICE ', '--wait');
    expect(approved.code).toBe(0);
    const record = approved.json['record'] as { status: string; approval?: { decidedBy?: string } };
    expect(record.status).toBe('succeeded');
    expect(record.approval?.decidedBy).toBe('alice');
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
      error: "The arguments are required: --input '<json>', or --input-file <path> (- reads stdin).",
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

  it('text output never passes a terminal escape through; --json stays valid JSON', async () => {
    const tool = 'x\u001b]0;pwned\u0007\u001b[2J';
    const principal = 'eve\u001b[31m\u009b2J';
    const [text, json] = await Promise.all([
      runText(
        'call',
        tool,
        '--input',
        '{"note":"\\u001b[2J"}',
        '--tenant',
        'cli-esc',
        '--principal',
        principal,
      ),
      run('call', tool, '--input', '{"note":"\\u001b[2J"}', '--tenant', 'cli-esc', '--principal', principal),
    ]);
    expect({ code: text.code, stderr: text.stderr }).toEqual({ code: 2, stderr: '' });
    expect(text.stdout).toContain('tool      x?]0;pwned??[2J');
    expect(text.stdout).toContain('requester eve?[31m?2J (human) in cli-esc');
    expect(text.stdout).not.toMatch(terminalControl);
    expect(json.code).toBe(2);
    expect(json.stdout).not.toMatch(terminalControl);
    expect(json.json['tool']).toBe(tool);
    expect(json.json['principal']).toBe(principal);
    // list's TOOL and PRINCIPAL columns come from the search attributes the call wrote.
    const listed = await waitFor(
      async () => {
        const result = await runText('list', '--tenant', 'cli-esc');
        return result.stdout.includes('x?]0;pwned') ? result : undefined;
      },
      { what: 'the hostile call in list', timeoutMs: 20_000, intervalMs: 300 },
    );
    expect(listed.stdout).not.toMatch(terminalControl);
  });

  it('a call refused before any run started says so in text, instead of blank call and run lines', async () => {
    const key = `cli-refused-${randomUUID()}`;
    const first = await run('call', 'add_label', '--input', '{"item":"ticket-2","label":"a"}', '--key', key);
    expect(first.code).toBe(0);
    const [mismatch, longName] = await Promise.all([
      runText('call', 'add_label', '--input', '{"item":"ticket-2","label":"b"}', '--key', key),
      runText('call', 'x'.repeat(200), '--input', '{}'),
    ]);
    for (const refused of [mismatch, longName]) {
      expect(refused.code).toBe(2);
      const lines = refused.stdout.split('\n');
      expect(lines).toContain('call      (none: refused before a call was started)');
      expect(lines).toContain('run       (none: no run was started)');
      expect(lines).toContain('input     (not kept: the call was refused before it started)');
      expect(lines.some((line) => /^(call|run|input)\s*(null)?$/.test(line.trimEnd()))).toBe(false);
    }
    expect(mismatch.stdout).toMatch(/reason KEY_MISMATCH/);
    // JSON keeps the empty IDs: scripts test for them.
    const json = await run('call', 'add_label', '--input', '{"item":"ticket-2","label":"b"}', '--key', key);
    expect(json.json['callId']).toBe('');
    expect((json.json['record'] as { runId: string }).runId).toBe('');
  });

  it('get --run reads an open run at once; an unknown or malformed run of a known call is "not found" (5) and says so', async () => {
    const started = await run(
      'call',
      'slow_search',
      '--input',
      '{"query":"get-run","delayMs":30000}',
      '--tenant',
      'cli',
      '--no-wait',
    );
    const id = String(started.json['callId']);
    const runId = String(started.json['runId']);
    await waitFor(async () => ((await harness.client.get(id))?.status === 'running' ? true : undefined));
    try {
      const asked = Date.now();
      const open = await run('get', id, '--run', runId);
      expect(open.code).toBe(0);
      expect(open.json['status']).toBe('running');
      expect(open.json['runId']).toBe(runId);
      expect(Date.now() - asked).toBeLessThan(15_000);

      const [bogus, unknownRun, unknownCall, bogusText] = await Promise.all([
        run('get', id, '--run', 'bogus'),
        run('get', id, '--run', randomUUID()),
        run('get', 'toolgate/cli/read_config/~no-such-call', '--run', randomUUID()),
        runText('get', id, '--run', 'bogus'),
      ]);
      // The error names the run as unknown for this call, not the call as unknown.
      const namesTheRun = (error: unknown, runId: string) => {
        expect(String(error)).toContain(id);
        expect(String(error)).toMatch(new RegExp(`no run ${runId}\\b`));
        expect(String(error)).not.toMatch(/There is no call/);
      };
      expect(bogus.code).toBe(5);
      namesTheRun(bogus.json['error'], 'bogus');
      expect(unknownRun.code).toBe(5);
      namesTheRun(unknownRun.json['error'], '[0-9a-f-]{36}');
      expect(unknownCall.code).toBe(5);
      expect(String(unknownCall.json['error'])).toMatch(/There is no call/);
      expect(bogusText.code).toBe(5);
      namesTheRun(bogusText.stderr, 'bogus');
      expect(bogusText.stderr).not.toMatch(/Failed to describe workflow/);
    } finally {
      await run('cancel', id);
    }
  });

  it("get and undo on an undo's ID refuse it and name the call it belongs to", async () => {
    // The same labelling call, made twice: once to undo it, once as a duplicate of the undone call.
    const labelTicket = [
      'call',
      'add_label',
      '--input',
      '{"item":"ticket-3","label":"vip"}',
      '--tenant',
      'cli',
      '--key',
      'cli-undo-id',
    ];
    const labelled = await run(...labelTicket);
    expect(labelled.code).toBe(0);
    const labelId = String(labelled.json['callId']);
    expect((await run('undo', labelId, '--as', 'oscar')).code).toBe(0);
    const undoId = `${labelId}/undo`;
    const [got, gotText, undone, undoneText] = await Promise.all([
      run('get', undoId),
      runText('get', undoId),
      run('undo', undoId, '--as', 'oscar'),
      runText('undo', undoId, '--as', 'oscar'),
    ]);
    // Not a call, and not a crash: the error says whose undo it is and what to read instead.
    expect(got.code).toBe(5);
    expect(got.json['error']).toBe(
      `${undoId} is not a call: it is the undo of the call ${labelId}. \`toolgate get ${labelId}\` shows that call and its undo.`,
    );
    expect(gotText.code).toBe(5);
    expect(gotText.stderr).toContain(`it is the undo of the call ${labelId}`);
    expect(gotText.stderr).not.toMatch(/not iterable/);
    expect(undone.code).toBe(4);
    expect(String(undone.json['refusal'])).toContain(`is the undo of the call ${labelId}, not a call`);
    expect(undoneText.code).toBe(4);
    expect(undoneText.stderr).toContain(`toolgate get ${labelId}`);
    // The compensation ran once: the second undo, on the undo's ID, ran nothing.
    const removals = (await harness.readLines(harness.tools.paths.executionsFile)).filter(
      (line) => line['tool'] === 'remove_label' && line['callId'] === labelId,
    );
    expect(removals).toHaveLength(1);
    expect(((await run('get', labelId)).json['undo'] as { status: string }).status).toBe('succeeded');
    // A duplicate of the undone call gets its stored record with the undo, not a bare "applied".
    const again = await run(...labelTicket);
    expect(again.json['disposition']).toBe('existing');
    expect((again.json['record'] as { undo?: { status: string } }).undo?.status).toBe('succeeded');
  });

  it('bulk replay --dry-run refuses what a replay would refuse, with the reason, and starts nothing', async () => {
    const tenant = 'cli-dry';
    const [fixed, stillFailing] = await Promise.all([
      run('call', 'read_config', '--input', '{"name":"dry_fixed"}', '--tenant', tenant),
      run('call', 'read_config', '--input', '{"name":"dry_missing"}', '--tenant', tenant),
    ]);
    expect([fixed.code, stillFailing.code]).toEqual([3, 3]);
    const fixedId = String(fixed.json['callId']);
    const failingId = String(stillFailing.json['callId']);
    await writeFile(
      harness.tools.paths.configFile,
      JSON.stringify({ region: 'eu-west', feature_flag: true, dry_fixed: 1 }),
    );
    // Replayed and succeeded: its failed run is still listed, but a replay of it would be refused.
    expect((await run('replay', fixedId, '--as', 'oscar')).code).toBe(0);
    await waitFor(
      async () => {
        const listed = (await run('list', '--status', 'failed', '--tenant', tenant)).json as unknown;
        return Array.isArray(listed) && listed.length === 2 ? true : undefined;
      },
      { what: 'both failed runs to be listed', timeoutMs: 20_000, intervalMs: 300 },
    );
    const runsBefore = await harness.client.temporal.workflow.getHandle(fixedId).describe();

    const dryRun = await run(
      'replay',
      '--status',
      'failed',
      '--tenant',
      tenant,
      '--dry-run',
      '--as',
      'oscar',
    );
    expect(dryRun.json['dryRun']).toBe(true);
    const items = dryRun.json['items'] as Array<{ callId: string; outcome: string; message?: string }>;
    expect(items.find((item) => item.callId === failingId)?.outcome).toBe('planned');
    const refused = items.find((item) => item.callId === fixedId);
    expect(refused?.outcome).toBe('refused');
    expect(refused?.message).toMatch(/The call succeeded, so replaying it would run it twice/);
    expect(dryRun.json['refused']).toBe(1);
    expect(dryRun.code).toBe(4);
    const text = await runText(
      'replay',
      '--status',
      'failed',
      '--tenant',
      tenant,
      '--dry-run',
      '--as',
      'oscar',
    );
    expect(text.stdout).toContain(
      'Dry run: 1 of 2 call(s) would be replayed, 1 would be refused; nothing was started.',
    );
    // Nothing was started.
    expect((await harness.client.temporal.workflow.getHandle(fixedId).describe()).runId).toBe(
      runsBefore.runId,
    );
    expect((await harness.client.get(failingId))?.runId).toBe(stillFailing.json['runId']);
  });
  it('decisions over the claim limits, blank names or reasons and bad run IDs are refused (1) before anything is signed or sent; refusals and lookups say what happened', async () => {
    const input = JSON.stringify({
      reference: 'cli-limits-1',
      from: 'ACC-1',
      to: 'ACC-2',
      amountCents: 700,
      currency: 'EUR',
      memo: null,
    });
    const started = await run(
      'call',
      'transfer_funds',
      '--input',
      input,
      '--tenant',
      'cli',
      '--principal',
      'agent-7',
      '--principal-kind',
      'agent',
      '--key',
      `cli-limits-${randomUUID()}`,
      '--no-wait',
    );
    const id = String(started.json['callId']);
    await waitFor(async () =>
      (await harness.client.get(id))?.status === 'awaiting_approval' ? true : undefined,
    );
    const [longComment, noName, noReason, badRun, unknownRun] = await Promise.all([
      run('approve', id, '--as', 'alice', '--comment', 'x'.repeat(3000)),
      run('approve', id, '--as', ''),
      run('reject', id, '--as', 'alice', '--reason', ''),
      run('approve', id, '--as', 'alice', '--run', 'not-a-run'),
      run('approve', id, '--as', 'alice', '--run', randomUUID()),
    ]);
    expect(longComment.code).toBe(1);
    expect(String(longComment.json['error'])).toMatch(/--comment may have at most 2000 characters/);
    expect(noName.code).toBe(1);
    expect(noReason.code).toBe(1);
    expect(badRun.code).toBe(1);
    expect(String(badRun.json['error'])).toMatch(/not a run ID/);
    expect(unknownRun.code).toBe(5);
    expect(String(unknownRun.json['error'])).toMatch(/has no run/);
    expect(String(unknownRun.json['error'])).not.toMatch(/restarted/);
    // Nothing reached the call: no forged decision on its record, and it still waits.
    const record = await harness.client.get(id);
    expect(record?.refusedDecisions).toEqual([]);
    expect(record?.status).toBe('awaiting_approval');

    // Every refusal (exit 4) with --json carries ok, exitCode and error, beside its own fields.
    const [intruder, replayOpen] = await Promise.all([
      run('approve', id, '--as', 'mallory'),
      run('replay', id),
    ]);
    expect(intruder.code).toBe(4);
    expect(intruder.json).toMatchObject({ ok: false, exitCode: 4, accepted: false, state: 'refused' });
    expect(String(intruder.json['error'])).toMatch(/not an approver/);
    expect(String(intruder.json['reason'])).toMatch(/not an approver/);
    expect(replayOpen.code).toBe(4);
    expect(replayOpen.json).toMatchObject({ ok: false, exitCode: 4, replayed: false });
    expect(typeof replayOpen.json['refusal']).toBe('string');
    expect(String(replayOpen.json['error'])).toContain(String(replayOpen.json['refusal']));

    // Unknown calls and namespaces are named as such.
    const [approveNope, cancelNope, namespaceNope] = await Promise.all([
      run('approve', 'nope', '--as', 'alice'),
      run('cancel', 'nope'),
      run('list', '--namespace', 'nope'),
    ]);
    for (const nope of [approveNope, cancelNope]) {
      expect(nope.code).toBe(5);
      expect(nope.json).toEqual({ ok: false, exitCode: 5, error: 'There is no call nope.' });
    }
    expect(namespaceNope.code).toBe(6);
    expect(String(namespaceNope.json['error'])).toMatch(/namespace "nope" does not exist/);

    // A damaged approval key is named, with what to do.
    const damaged = await mkdtemp(join(tmpdir(), 'toolgate-damaged-key-'));
    try {
      await cp(join(harness.dataDir, 'keys'), join(damaged, 'keys'), { recursive: true });
      await writeFile(join(damaged, 'keys', 'approval-private.pem'), 'not a key\n');
      const corrupt = await run('approve', id, '--as', 'alice', '--data-dir', damaged);
      expect(corrupt.code).toBe(1);
      expect(String(corrupt.json['error'])).toContain(join(damaged, 'keys', 'approval-private.pem'));
      expect(String(corrupt.json['error'])).toMatch(/Restore it from a backup/);
    } finally {
      await rm(damaged, { recursive: true, force: true });
    }

    const rejected = await run('reject', id, '--as', 'alice', '--reason', 'limits test done');
    expect(rejected.code).toBe(0);
  });

  it('cancel --no-wait returns once the cancel is recorded; a closed call is left as it was; an unknown ID is not found', async () => {
    const started = await harness.client.start(
      { tool: 'slow_search', input: { query: 'no wait', delayMs: 20_000 } },
      agent,
    );
    await waitFor(async () =>
      (await harness.readLines(harness.tools.paths.executionsFile)).some(
        (line) => line['callId'] === started.callId && line['event'] === 'start',
      )
        ? true
        : undefined,
    );
    const cancelled = await run('cancel', '--no-wait', started.callId);
    expect(cancelled.code).toBe(0);
    expect(cancelled.json).toEqual({ ok: true, callId: started.callId });
    // The stop is the record's to report, as ever.
    expect(await harness.client.result(started.callId)).toMatchObject({
      status: 'cancelled',
      effect: 'none',
    });
    // A cancel of a closed call is accepted and changes nothing; the CLI says there is nothing to do.
    expect(await harness.client.cancel(started.callId)).toEqual({ callId: started.callId });
    expect(await harness.client.result(started.callId)).toMatchObject({ status: 'cancelled' });
    const again = await run('cancel', '--no-wait', started.callId);
    expect(again.code).toBe(4);
    expect(String(again.json['error'])).toContain('already closed (cancelled)');
    await expect(harness.client.cancel('toolgate/acme/slow_search/~no-such-call')).rejects.toBeInstanceOf(
      WorkflowNotFoundError,
    );
    const help = await runText('cancel', '--help');
    expect(help.stdout).toContain('--no-wait');
  });

  it('call --input-file reads the arguments from a file', async () => {
    const scratch = await mkdtemp(join(tmpdir(), 'toolgate-cli-files-'));
    try {
      const file = join(scratch, 'arguments.json');
      await writeFile(file, '{"name":"region"}');
      const fromFile = await run('call', 'read_config', '--input-file', file, '--tenant', 'cli');
      expect(fromFile.code).toBe(0);
      expect(fromFile.json['output']).toEqual({ name: 'region', value: 'eu-west' });
    } finally {
      await rm(scratch, { recursive: true, force: true });
    }
  });

  it('an inbox that cannot bind its port leaves no approvers file behind, so no token is lost', async () => {
    const scratch = await mkdtemp(join(tmpdir(), 'toolgate-cli-inbox-'));
    const blocker = createServer();
    try {
      await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
      const port = (blocker.address() as { port: number }).port;
      const inboxDir = join(scratch, 'inbox');
      await cp(join(harness.dataDir, 'keys'), join(inboxDir, 'keys'), { recursive: true });
      const inbox = await run('inbox', '--data-dir', inboxDir, '--port', String(port));
      expect(inbox.code).toBe(1);
      expect(inbox.json['ok']).toBe(false);
      expect(String(inbox.json['error'])).toMatch(/cannot listen/);
      // The token was never shown, so the file that held it is gone: the next start shows a new one.
      expect(await readdir(inboxDir)).toEqual(['keys']);
    } finally {
      blocker.close();
      await rm(scratch, { recursive: true, force: true });
    }
  });
});
