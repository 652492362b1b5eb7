/**
 * The CLI's checks that happen before anything connects, signs or is sent, and the shape of its
 * errors with --json. The binary runs with no cluster to find: a check that came after connecting
 * would end "No toolgate server found" (exit 6) instead of the usage error (exit 1).
 */
import { execFile } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readCallInput } from '../../../src/cli/commands/call.ts';
import { describeCliError } from '../../../src/cli/errors.ts';
import { parsePort } from '../../../src/cli/options.ts';
import {
  createApprovalSigner,
  decisionClaims,
  InvalidDecisionClaimsError,
} from '../../../src/client/approval-signer.ts';
import { loadOrCreateApproverDirectory } from '../../../src/inbox/approver-tokens.ts';
import { exampleConfig } from '../../support/cli-runner.ts';

const binary = fileURLToPath(new URL('../../../bin/toolgate.js', import.meta.url));

interface Result {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
  readonly json: Record<string, unknown>;
}

let dataDir: string;
/** This process's environment without any way to find a cluster. */
function isolatedEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (!name.startsWith('TEMPORAL_') && !name.startsWith('TOOLGATE_')) env[name] = value;
  }
  return { ...env, TOOLGATE_DATA_DIR: dataDir, TOOLGATE_CONFIG: exampleConfig };
}

function cli(...args: string[]): Promise<Result> {
  return cliWithEnv({}, ...args);
}

function cliWithEnv(extraEnv: NodeJS.ProcessEnv, ...args: string[]): Promise<Result> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [binary, ...args],
      { env: { ...isolatedEnv(), ...extraEnv }, timeout: 60_000 },
      (error, stdout, stderr) => {
        let json: Record<string, unknown> = {};
        try {
          json = JSON.parse(stdout) as Record<string, unknown>;
        } catch {
          json = {};
        }
        resolve({
          code: error ? (typeof error.code === 'number' ? error.code : 1) : 0,
          stdout,
          stderr,
          json,
        });
      },
    );
  });
}

const waitingId = 'toolgate/default/transfer_funds/k/transfer-inv-42';

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'toolgate-cli-usage-'));
});
afterAll(async () => {
  await rm(dataDir, { recursive: true, force: true });
});

describe('the approval signer refuses claims the workers would refuse', () => {
  const { privateKey } = generateKeyPairSync('ed25519');
  const signer = createApprovalSigner(privateKey);
  const claims = (overrides: Record<string, unknown>) =>
    decisionClaims({
      callId: waitingId,
      runId: '01a242f6-7031-776e-a9b9-e5cf50990d47',
      decision: 'approve',
      approver: 'alice',
      approverKind: 'human',
      roles: [],
      fingerprint: 'a'.repeat(64),
      ...overrides,
    });

  it('a comment over 2000 characters, an empty approver, too many roles: not signed, the limit named', () => {
    expect(() => signer.sign(claims({ comment: 'x'.repeat(3000) }))).toThrow(InvalidDecisionClaimsError);
    expect(() => signer.sign(claims({ comment: 'x'.repeat(3000) }))).toThrow(/at most 2000 characters/);
    expect(() => signer.sign(claims({ approver: '' }))).toThrow(/approver name must not be empty/);
    expect(() => signer.sign(claims({ roles: Array.from({ length: 33 }, () => 'r') }))).toThrow(
      /at most 32 entries/,
    );
    expect(() => signer.sign(claims({ roles: ['r'.repeat(65)] }))).toThrow(/at most 64 characters/);
    // What the workers accept is still signed.
    expect(signer.sign(claims({ comment: 'x'.repeat(2000) })).signature).toMatch(/^[A-Za-z0-9+/=]+$/);
  });
});

describe('approve and reject check their flags before anything is signed or sent (exit 1)', () => {
  it('a comment over the limit names the limit', async () => {
    const result = await cli('approve', waitingId, '--as', 'alice', '--comment', 'x'.repeat(3000), '--json');
    expect(result.code).toBe(1);
    expect(result.json).toEqual({
      ok: false,
      exitCode: 1,
      error: 'Nothing was signed or sent: --comment may have at most 2000 characters (3000 given).',
    });
  });

  it('an empty --as, an empty or blank --reason, a --reason over the limit, a malformed --run', async () => {
    const [noName, emptyReason, blankReason, longReason, badRun] = await Promise.all([
      cli('approve', waitingId, '--as', '', '--json'),
      cli('reject', waitingId, '--as', 'alice', '--reason', '', '--json'),
      cli('reject', waitingId, '--as', 'alice', '--reason', '   ', '--json'),
      cli('reject', waitingId, '--as', 'alice', '--reason', 'y'.repeat(2001), '--json'),
      cli('approve', waitingId, '--as', 'alice', '--run', 'not-a-run', '--json'),
    ]);
    for (const result of [noName, emptyReason, blankReason, longReason, badRun]) {
      expect(result.code).toBe(1);
      expect(result.json['ok']).toBe(false);
      expect(result.json['exitCode']).toBe(1);
    }
    expect(String(noName.json['error'])).toMatch(/--as is empty/);
    expect(String(emptyReason.json['error'])).toMatch(/--reason is empty/);
    expect(String(blankReason.json['error'])).toMatch(/--reason is empty/);
    expect(String(longReason.json['error'])).toMatch(/--reason may have at most 2000 characters/);
    expect(String(badRun.json['error'])).toMatch(/is not a run ID/);
    expect(String(badRun.json['error'])).not.toMatch(/restarted/);
  });
});

describe('replay and call check their flags before anything is sent (exit 1)', () => {
  it('replay --force without --reason (or with a blank one) is refused', async () => {
    const [withoutReason, blankReason, bulk] = await Promise.all([
      cli('replay', waitingId, '--force', '--json'),
      cli('replay', waitingId, '--force', '--reason', ' ', '--json'),
      cli('replay', '--force', '--dry-run', '--json'),
    ]);
    for (const result of [withoutReason, blankReason, bulk]) {
      expect(result.code).toBe(1);
      expect(String(result.json['error'])).toMatch(/--force needs --reason/);
    }
  });

  it('call and mcp refuse a bad --tenant or --principal before connecting, naming the flag', async () => {
    // No cluster is reachable here: before, both got as far as connecting and exited 6 "no server"
    // (and mcp, with a server, answered every tools/call "could not run, retry later").
    const [call, mcp, principal] = await Promise.all([
      cli('call', 'read_config', '--input', '{"name":"region"}', '--tenant', 'acme corp', '--json'),
      cli('mcp', '--tenant', 'acme corp'),
      cli('call', 'read_config', '--input', '{}', '--principal', 'p'.repeat(200), '--json'),
    ]);
    expect(call.code).toBe(1);
    expect(String(call.json['error'])).toMatch(/^--tenant "acme corp" must be 1-64 letters/);
    expect(mcp.code).toBe(1);
    expect(mcp.stdout).toBe('');
    expect(mcp.stderr).toMatch(/--tenant "acme corp" must be 1-64 letters/);
    expect(principal.code).toBe(1);
    expect(String(principal.json['error'])).toMatch(/^--principal "p{80}" must be a non-empty string/);
  });

  it('list and replay refuse a bad filter before connecting; mcp --json keeps stdout for the protocol', async () => {
    const [list, replay, concurrency, mcpJson] = await Promise.all([
      cli('list', '--since', '90', '--json'),
      cli('replay', '--tool', "x' OR 1=1", '--dry-run', '--json'),
      cli('replay', '--concurrency', '0', '--dry-run', '--json'),
      cli('mcp', '--json', '--no-such-flag'),
    ]);
    // Before, these connected first and exited 6 (no server) without a word about the flag.
    expect(list.code).toBe(1);
    expect(String(list.json['error'])).toMatch(/--since "90" is not a duration/);
    expect(replay.code).toBe(1);
    expect(String(replay.json['error'])).toMatch(/characters a filter may not contain/);
    expect(concurrency.code).toBe(1);
    expect(String(concurrency.json['error'])).toMatch(/--concurrency must be a whole number from 1 to 64/);
    expect(mcpJson.code).toBe(1);
    expect(mcpJson.stdout).toBe('');
    expect(JSON.parse(mcpJson.stderr.trim().split('\n').at(-1)!)).toMatchObject({
      level: 'error',
      message: expect.stringMatching(/unknown option '--no-such-flag'/),
    });
  });

  it('call --key "" is refused as malformed', async () => {
    const result = await cli('call', 'read_config', '--input', '{"name":"region"}', '--key', '', '--json');
    expect(result.code).toBe(1);
    expect(String(result.json['error'])).toMatch(/--key is empty: the idempotency key is malformed/);
  });

  it('call --input-file: unreadable, invalid JSON, or given with --input, each says so', async () => {
    const invalid = join(dataDir, 'invalid.json');
    await writeFile(invalid, '{"name":');
    const [missing, notJson, both, neither] = await Promise.all([
      cli('call', 'read_config', '--input-file', join(dataDir, 'absent.json'), '--json'),
      cli('call', 'read_config', '--input-file', invalid, '--json'),
      cli('call', 'read_config', '--input-file', invalid, '--input', '{}', '--json'),
      cli('call', 'read_config', '--json'),
    ]);
    for (const result of [missing, notJson, both, neither]) expect(result.code).toBe(1);
    expect(String(missing.json['error'])).toMatch(
      /--input-file: cannot read .*absent\.json: it does not exist/,
    );
    expect(String(notJson.json['error'])).toMatch(/--input-file: .*invalid\.json is not valid JSON/);
    expect(String(both.json['error'])).toMatch(/not both/);
    expect(String(neither.json['error'])).toMatch(/--input-file/);
  });

  it('readCallInput reads a file or stdin, larger than one command-line argument may be', async () => {
    const file = join(dataDir, 'large.json');
    const large = { text: 'z'.repeat(200_000) };
    await writeFile(file, JSON.stringify(large));
    expect(await readCallInput({ inputFile: file })).toEqual(large);
    expect(await readCallInput({ inputFile: '-' }, async () => '{"name":"region"}')).toEqual({
      name: 'region',
    });
    expect(await readCallInput({ input: '[1]' })).toEqual([1]);
    await expect(readCallInput({ inputFile: dataDir })).rejects.toThrow(/it is a directory/);
    await expect(readCallInput({ inputFile: '-' }, async () => '')).rejects.toThrow(
      /stdin is not valid JSON/,
    );
  });
});

describe('inbox: a failed start never loses a token', () => {
  it('--port abc and --port 99999 are usage errors naming the range, and create nothing', async () => {
    const inboxDir = join(dataDir, 'inbox');
    await mkdir(inboxDir);
    const [letters, tooHigh] = await Promise.all([
      cli('inbox', '--data-dir', inboxDir, '--port', 'abc', '--json'),
      cli('inbox', '--data-dir', inboxDir, '--port', '99999', '--json'),
    ]);
    for (const result of [letters, tooHigh]) {
      expect(result.code).toBe(1);
      expect(String(result.json['error'])).toMatch(/--port must be a whole number from 0 to 65535/);
    }
    expect(await readdir(inboxDir)).toEqual([]);
    expect(() => parsePort('7233x', '--port')).toThrow(/from 1 to 65535/);
    expect(parsePort('0', '--port', { allowZero: true })).toBe(0);
  });

  it('discard() removes the approvers file a start created, and the directory it created', async () => {
    const parent = join(dataDir, 'discard');
    const nested = join(parent, 'new', 'data');
    await mkdir(parent);
    const first = await loadOrCreateApproverDirectory(nested);
    expect(first.created?.token).toBeTruthy();
    await first.discard?.();
    expect(existsSync(join(parent, 'new'))).toBe(false);
    expect(existsSync(parent)).toBe(true);
    // The next start creates the file again, with a token to show.
    const second = await loadOrCreateApproverDirectory(nested);
    expect(second.created?.token).toBeTruthy();
    // A file that was there before is never discarded.
    expect((await loadOrCreateApproverDirectory(nested)).discard).toBeUndefined();
  });

  it('refuses an approvers file with a shared token or a repeated name, and names the file when it is not JSON', async () => {
    const directory = join(dataDir, 'approvers-check');
    await mkdir(directory);
    const file = join(directory, 'approvers.json');
    const sharedToken = 'shared-token-0123456789';
    await writeFile(
      file,
      JSON.stringify({
        approvers: [
          { name: 'alice', roles: ['finance'], token: sharedToken },
          { name: 'bob', roles: ['finance'], token: sharedToken },
          { name: 'alice', roles: [], token: 'another-token-0123456789' },
        ],
      }),
    );
    // Before, bob's entry silently won for the shared token, and two "alice" entries were accepted.
    const refusal = loadOrCreateApproverDirectory(directory);
    await expect(refusal).rejects.toThrow(/approvers\.1\.token: the same token as approvers\[0\]/);
    await expect(loadOrCreateApproverDirectory(directory)).rejects.toThrow(
      /approvers\.2\.name: the same name as approvers\[0\]/,
    );
    await expect(loadOrCreateApproverDirectory(directory)).rejects.not.toThrow(sharedToken);
    await writeFile(file, '{"approvers": [');
    await expect(loadOrCreateApproverDirectory(directory)).rejects.toThrow(
      new RegExp(`^${file.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} is not valid JSON`),
    );
  });
});

describe('dev and worker with --json print their failure as JSON, with the documented exit code', () => {
  it('worker on a data directory with no server: exit 6, {"ok":false,…} on stdout', async () => {
    const result = await cli('worker', '--data-dir', join(dataDir, 'nonexistent'), '--json');
    expect(result.code).toBe(6);
    expect(result.json['ok']).toBe(false);
    expect(result.json['exitCode']).toBe(6);
    expect(String(result.json['error'])).toMatch(/no toolgate server found/);
  });

  it('dev on a data directory in use: exit 1, and the JSON error names the pid', async () => {
    const claimed = join(dataDir, 'claimed');
    await mkdir(claimed);
    // A live process (this one) holds the database.
    await writeFile(
      join(claimed, 'temporal.db.owner.json'),
      `${JSON.stringify({ ownerPid: process.pid, claimedAt: new Date().toISOString() })}\n`,
    );
    // A CLI path that is never run: the claim refuses before any server starts. Without it, a
    // machine with no Temporal CLI yet (a clean CI) would first build one with Go.
    const result = await cliWithEnv(
      { TEMPORAL_CLI_PATH: '/bin/false' },
      'dev',
      '--data-dir',
      claimed,
      '--port',
      '17391',
      '--ui-port',
      '17392',
      '--json',
    );
    expect(result.code).toBe(1);
    expect(result.json['ok']).toBe(false);
    expect(result.json['exitCode']).toBe(1);
    expect(String(result.json['error'])).toContain(`pid ${process.pid}`);
  });

  it('dev --port abc is a usage error (exit 1) naming the range', async () => {
    expect(() => parsePort('abc', '--port')).toThrow('--port must be a whole number from 1 to 65535');
  });

  it('maps errors to exit codes: not found 5 says there is no such call, unknown namespace 6', async () => {
    const { NamespaceNotFoundError, WorkflowNotFoundError } = await import('@temporalio/client');
    expect(
      describeCliError(new WorkflowNotFoundError('workflow not found for ID: nope', 'nope', undefined)),
    ).toEqual({
      exitCode: 5,
      message: 'There is no call nope.',
    });
    const namespace = describeCliError(new NamespaceNotFoundError('nope'));
    expect(namespace.exitCode).toBe(6);
    expect(namespace.message).toMatch(/namespace "nope" does not exist/);
  });
});
