/**
 * `toolgate init` end to end: a new folder, its own test, a typecheck, `toolgate dev` with the
 * project's config against the test cluster, and the project's tool called through the CLI. The
 * folder gets toolgate and its peers by symlink to this checkout, where npm install would put them.
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type ChildHandle, spawnNode } from '../support/child-processes.ts';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../..', import.meta.url));
const binary = join(root, 'bin', 'toolgate.js');

/** Runs the binary in `cwd`; resolves with its exit code and output whatever the code. */
function toolgate(cwd: string, env: NodeJS.ProcessEnv, ...args: string[]) {
  return run(process.execPath, [binary, ...args], { cwd, env, timeout: 60_000 }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code?: number; stdout?: string; stderr?: string }) => ({
      code: typeof error.code === 'number' ? error.code : 1,
      stdout: error.stdout ?? '',
      stderr: error.stderr ?? '',
    }),
  );
}

describe('toolgate init, then the project it made', () => {
  let parent: string;
  let project: string;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    parent = await mkdtemp(join(tmpdir(), 'toolgate-init-'));
    project = join(parent, `notes-${Date.now()}`);
    env = {
      ...process.env,
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TOOLGATE_CONFIG: '',
      TOOLGATE_TASK_QUEUE: '',
      TOOLGATE_DATA_DIR: '',
    };
  });

  afterAll(async () => {
    if (parent) await rm(parent, { recursive: true, force: true });
  });

  it('writes the project into an empty folder, and refuses to overwrite it', async () => {
    const created = await toolgate(parent, env, 'init', project);
    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout).toContain(`Created a toolgate project in ${project}`);
    expect(created.stdout).toMatch(/npm install && npm test\n {2}npm start/);
    const files = (await readdir(project, { recursive: true })).sort();
    expect(files).toEqual(
      [
        '.gitignore',
        'package.json',
        'src',
        'src/contracts.ts',
        'src/tools.ts',
        'src/workflows.ts',
        'test',
        'test/tools.test.ts',
        'toolgate.config.ts',
        'tsconfig.json',
      ].sort(),
    );
    const before = await readFile(join(project, 'toolgate.config.ts'), 'utf8');
    await writeFile(join(project, 'src', 'contracts.ts'), '// edited by hand\n', { flag: 'a' });
    const again = await toolgate(parent, env, 'init', project);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('already has package.json, tsconfig.json');
    expect(again.stderr).toContain('overwrites nothing');
    expect(await readFile(join(project, 'toolgate.config.ts'), 'utf8')).toBe(before);
    expect(await readFile(join(project, 'src', 'contracts.ts'), 'utf8')).toContain('// edited by hand');
    // Where npm install would put them: toolgate (this checkout), its peers and the TypeScript tools.
    await mkdir(join(project, 'node_modules', '@types'), { recursive: true });
    const links: Array<[string, string]> = [
      ['toolgate', root],
      ['zod', join(root, 'node_modules', 'zod')],
      ['typescript', join(root, 'node_modules', 'typescript')],
      ['@types/node', join(root, 'node_modules', '@types', 'node')],
      // npm puts toolgate's peers (Temporal's workflow, activity and common packages) beside these.
      ['@temporalio', join(root, 'node_modules', '@temporalio')],
    ];
    for (const [name, target] of links) await symlink(target, join(project, 'node_modules', name), 'dir');
  });

  it('passes its own test (node --test) and typechecks (tsc)', async () => {
    const tested = await run(process.execPath, ['--test'], { cwd: project });
    expect(tested.stdout).toMatch(/\bpass 2\b/);
    expect(tested.stdout).toMatch(/\bfail 0\b/);
    const typecheck = await run(
      process.execPath,
      [join(project, 'node_modules', 'typescript', 'bin', 'tsc')],
      {
        cwd: project,
      },
    );
    expect(`${typecheck.stdout}${typecheck.stderr}`).toBe('');
  });

  it('serves its tool with toolgate dev, and toolgate call reaches it through the config', async () => {
    let dev: ChildHandle | undefined;
    try {
      const started = await spawnNode([binary, 'dev', '--json'], '{"address"', {
        cwd: project,
        env,
        timeoutMs: 120_000,
      });
      dev = started;
      const line = started.lines.find((text) => text.startsWith('{"address"')) ?? '{}';
      const summary = JSON.parse(line) as Record<string, string | null>;
      expect(summary['config']).toBe(join(project, 'toolgate.config.ts'));
      expect(summary['taskQueue']).toBe(project.split('/').at(-1));
      // It joined the cluster TEMPORAL_ADDRESS names: no server of its own.
      expect(summary['dbFile']).toBeNull();

      const input = JSON.stringify({ id: 'n1', text: 'hello from the CLI' });
      const first = await toolgate(project, env, 'call', 'add_note', '--input', input, '--json');
      expect(first.code, first.stderr).toBe(0);
      const record = JSON.parse(first.stdout) as Record<string, unknown>;
      expect(record).toMatchObject({
        status: 'succeeded',
        effect: 'applied',
        key: 'note-n1',
        output: { saved: 'n1' },
      });
      const second = await toolgate(project, env, 'call', 'add_note', '--input', input, '--json');
      // The same note id is the same key: the stored record, nothing runs again.
      expect(JSON.parse(second.stdout)).toMatchObject({
        callId: record['callId'],
        disposition: 'existing',
        record: { status: 'succeeded' },
      });
      expect(await readFile(join(project, '.toolgate', 'notes.txt'), 'utf8')).toBe(
        'note-n1\thello from the CLI\n',
      );

      const missing = await toolgate(
        project,
        env,
        'get',
        'toolgate/default/add_note/k/no-such-note',
        '--json',
      );
      expect(missing.code).toBe(5);
      let listed: Array<Record<string, unknown>> = [];
      for (let attempt = 0; attempt < 50 && listed.length === 0; attempt++) {
        const lines = await toolgate(project, env, 'list', '--tool', 'add_note', '--jsonl');
        listed = lines.stdout
          .split('\n')
          .filter((line) => line !== '')
          .map((line) => JSON.parse(line) as Record<string, unknown>);
        if (listed.length === 0) await new Promise((resolve) => setTimeout(resolve, 200));
      }
      expect(listed.map((call) => call['callId'])).toContain(record['callId']);
    } finally {
      await dev?.stop();
    }
    expect(dev?.process.exitCode).toBe(0);
  });
});
