/**
 * toolgate as another project uses it: the packed tarball installed into an empty folder, code
 * written the way the README and docs teach it (their TypeScript blocks are that project's files),
 * compiled with tsc, its workflows bundled by the SDK's bundler, its worker run against the dev
 * server, and its own tool called.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type ChildHandle, spawnCommand, spawnNode } from '../support/child-processes.ts';
import { type DocBlock, docProject } from '../support/doc-blocks.ts';
import { type LoopbackServer, startLoopbackServer } from '../support/loopback-server.ts';
import { stepTimer } from '../support/step-timer.ts';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../..', import.meta.url));
const documents = ['README.md', 'docs/agents.md', 'docs/mcp.md', 'docs/operators.md'];

/** The versions the repository locks, so the consumer installs what CI tested (and npm has cached). */
async function lockedVersions(names: readonly string[]): Promise<string[]> {
  const lock = JSON.parse(await readFile(join(root, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, { version?: string }>;
  };
  return names.map((name) => {
    const version = lock.packages[`node_modules/${name}`]?.version;
    if (!version) throw new Error(`${name} is not in package-lock.json`);
    return `${name}@${version}`;
  });
}

describe('the packed package in a new project, as the README teaches', () => {
  let project: string;
  let blocks: DocBlock[];
  let payments: LoopbackServer;
  let tarball: string;
  const refunds: Array<{ key: string | undefined; body: string }> = [];
  const { timings, timed } = stepTimer();
  const npm = (args: readonly string[], cwd: string) =>
    run('npm', [...args], { cwd, maxBuffer: 16 * 1024 * 1024, timeout: 300_000 });

  beforeAll(async () => {
    project = await mkdtemp(join(tmpdir(), 'toolgate-consumer-'));
    blocks = docProject(
      await Promise.all(
        documents.map(async (name) => ({ name, markdown: await readFile(join(root, name), 'utf8') })),
      ),
    );
    // The run's global set-up compiled dist/ from this checkout (test/support/build-setup.ts), so the
    // tarball holds a fresh build without `prepare`. Running it here would rewrite dist/ while other
    // test files, running beside this one, start the compiled binary from it.
    const packed = await timed('npm pack', () =>
      npm(['pack', '--silent', '--ignore-scripts', '--pack-destination', project], root),
    );
    tarball = join(project, packed.stdout.trim().split('\n').at(-1) ?? '');
    await writeFile(
      join(project, 'package.json'),
      `${JSON.stringify({ name: 'toolgate-consumer', private: true, type: 'module' }, null, 2)}\n`,
    );
    const dependencies = await lockedVersions([
      '@temporalio/client',
      '@temporalio/worker',
      'zod',
      'ai',
      '@anthropic-ai/sdk',
      'openai',
    ]);
    const tools = await lockedVersions(['typescript', '@types/node']);
    await timed('npm install', () =>
      npm(
        ['install', '--no-audit', '--no-fund', '--prefer-offline', tarball, ...dependencies, ...tools],
        project,
      ),
    );
    for (const block of blocks) {
      await mkdir(dirname(join(project, block.path)), { recursive: true });
      await writeFile(join(project, block.path), block.code);
    }
    payments = await startLoopbackServer((request, response) => {
      let body = '';
      request.on('data', (chunk: Buffer) => {
        body += chunk.toString();
      });
      request.on('end', () => {
        const key = request.headers['idempotency-key'];
        refunds.push({ key: Array.isArray(key) ? key[0] : key, body });
        response.setHeader('content-type', 'application/json');
        response.end(JSON.stringify({ refundId: `re_${refunds.length}` }));
      });
    });
  }, 600_000);

  afterAll(async () => {
    await payments?.close();
    if (project) await rm(project, { recursive: true, force: true });
    process.stdout.write(`consumer test steps (ms): ${JSON.stringify(timings)}\n`);
  });

  it('takes its files from the docs: a tsconfig and one file per entry, each importing that entry', () => {
    const byPath = new Map(blocks.map((block) => [block.path, block.code]));
    expect(byPath.get('tsconfig.json')).toContain('"moduleResolution": "nodenext"');
    expect(byPath.get('src/contracts.ts')).toContain("from 'toolgate/contracts'");
    expect(byPath.get('src/workflows.ts')).toContain("from 'toolgate/workflow'");
    expect(byPath.get('src/worker.ts')).toContain("from 'toolgate/worker'");
    expect(byPath.get('src/call.ts')).toContain("from 'toolgate'");
    expect(byPath.get('src/ai-sdk.ts')).toContain("from 'toolgate/ai-sdk'");
    // The contract file is imported by the workflow bundle: it must not reach the caller's entry.
    expect(byPath.get('src/contracts.ts')).not.toMatch(/from 'toolgate'/);
  });

  it('installs only compiled JavaScript with types, and no tsx', async () => {
    const installed = join(project, 'node_modules', 'toolgate');
    const manifest = JSON.parse(await readFile(join(installed, 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
    };
    expect(Object.keys(manifest.dependencies)).not.toContain('tsx');
    const files = await readdir(installed, { recursive: true });
    expect(files.filter((file) => /\.ts$/.test(file) && !file.endsWith('.d.ts'))).toEqual([]);
    for (const entry of ['src/index', 'src/contracts/index', 'workflows/index', 'src/worker/index']) {
      expect(files).toContain(`dist/${entry}.js`);
      expect(files).toContain(`dist/${entry}.d.ts`);
    }
  });

  it('typechecks every block of the README and docs with tsc (module nodenext)', async () => {
    const { stdout, stderr } = await timed('tsc', () =>
      run(join(project, 'node_modules', '.bin', 'tsc'), ['-p', '.'], { cwd: project }).catch(
        (error: { stdout?: string; stderr?: string }) => {
          throw new Error(`tsc failed:\n${error.stdout ?? ''}${error.stderr ?? ''}`);
        },
      ),
    );
    expect(`${stdout}${stderr}`).toBe('');
  });

  it("bundles its workflows with the SDK's bundler and toolgate's options, and its worker calls its own tool", async () => {
    // Node.js runs the project's TypeScript itself, by erasing the types.
    await timed('bundle', () => run(process.execPath, ['src/bundle.ts'], { cwd: project }));
    const bundle = await readFile(join(project, 'src', 'workflow-bundle.js'), 'utf8');
    expect(bundle).toContain('refund_order');
    const env = {
      ...process.env,
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TASK_QUEUE: `consumer-${Date.now()}`,
      PAYMENTS_API: payments.url,
    };
    let worker: ChildHandle | undefined;
    try {
      worker = await timed('worker start', () =>
        spawnNode(['src/worker.ts'], 'worker polling', { cwd: project, env }),
      );
      const call = () => run(process.execPath, ['src/call.ts'], { cwd: project, env });
      const first = await timed('first call', call);
      const second = await timed('second call', call);
      const expected = { status: 'succeeded', effect: 'applied', output: { refundId: 're_1' } };
      expect(JSON.parse(first.stdout)).toEqual(expected);
      // The same key: the stored record, and no second refund.
      expect(JSON.parse(second.stdout)).toEqual(expected);
      expect(refunds).toEqual([
        { key: 'refund-ord_123', body: JSON.stringify({ order: 'ord_123', reason: 'damaged in transit' }) },
      ]);
    } finally {
      await worker?.stop();
    }
    // SIGTERM drains the worker and ends the process cleanly.
    expect(worker?.process.exitCode).toBe(0);
  });

  it('serves and calls its tool through npx toolgate dev and npx toolgate call, with its config', async () => {
    const env = {
      ...process.env,
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TOOLGATE_TASK_QUEUE: `consumer-cli-${Date.now()}`,
      TOOLGATE_CONFIG: '',
      TOOLGATE_DATA_DIR: '',
      PAYMENTS_API: payments.url,
    };
    const npx = (...args: string[]) =>
      run('npx', ['--no-install', 'toolgate', ...args], { cwd: project, env, timeout: 60_000 });
    let dev: (ChildHandle & { lines: string[] }) | undefined;
    try {
      dev = await timed('npx toolgate dev', () =>
        spawnCommand('npx', ['--no-install', 'toolgate', 'dev', '--json'], '{"address"', {
          cwd: project,
          env,
          timeoutMs: 120_000,
          group: true,
        }),
      );
      const summary = JSON.parse(dev.lines.find((line) => line.startsWith('{"address"')) ?? '{}') as Record<
        string,
        unknown
      >;
      expect(summary['config']).toBe(join(project, 'toolgate.config.ts'));
      const input = JSON.stringify({ orderId: 'ord_456', reason: null });
      const called = await timed('npx toolgate call', () =>
        npx('call', 'refund_order', '--input', input, '--json'),
      );
      expect(JSON.parse(called.stdout)).toMatchObject({
        status: 'succeeded',
        effect: 'applied',
        key: 'refund-ord_456',
        output: { refundId: 're_2' },
      });
      expect(refunds.at(-1)).toEqual({
        key: 'refund-ord_456',
        body: JSON.stringify({ order: 'ord_456', reason: null }),
      });
      expect(refunds).toHaveLength(2);
    } finally {
      await dev?.stop();
    }
    // SIGTERM to the group, as Ctrl-C in a terminal: every process of it is gone, and toolgate dev
    // stopped cleanly (it removes its endpoint file only once the worker has drained).
    expect(existsSync(join(project, '.toolgate', 'endpoint.json'))).toBe(false);
  });

  it('scaffolds a new project with toolgate init, which installs and passes its own test', async () => {
    const scaffold = join(project, 'scaffolded');
    const created = await timed('toolgate init', () =>
      run('npx', ['--no-install', 'toolgate', 'init', scaffold, '--package', tarball, '--json'], {
        cwd: project,
      }),
    );
    expect((JSON.parse(created.stdout) as { files: string[] }).files).toContain('toolgate.config.ts');
    await timed('scaffold npm install', () =>
      npm(['install', '--no-audit', '--no-fund', '--prefer-offline'], scaffold),
    );
    const tested = await timed('scaffold npm test', () => npm(['test'], scaffold));
    expect(tested.stdout).toMatch(/\bpass 2\b/);
    expect(tested.stdout).toMatch(/\bfail 0\b/);
    const typecheck = await npm(['run', 'typecheck'], scaffold);
    expect(typecheck.stderr).toBe('');
  });

  it('runs the installed toolgate command from compiled JavaScript', async () => {
    const { stdout } = await run(join(project, 'node_modules', '.bin', 'toolgate'), ['--help'], {
      cwd: project,
    });
    expect(stdout).toContain('Usage: toolgate');
    expect(stdout).toMatch(/\bdev\b.*\n(?:.*\n)*.*\bworker\b/);
  });
});
