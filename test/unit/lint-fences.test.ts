/**
 * The folder fences of biome.json, shown to fail: files that cross a fence are written into a
 * scratch copy of the layout, beside files that do not, and biome must flag exactly the crossings.
 */
import { execFile } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../..', import.meta.url));
const biome = join(root, 'node_modules', '.bin', 'biome');

/** Each file imports one module; `crosses` says whether that import crosses its folder's fence. */
const cases: ReadonlyArray<{ file: string; from: string; crosses: boolean }> = [
  // The workflow sandbox and the workflow-safe folders.
  { file: 'workflows/node.ts', from: 'node:fs', crosses: true },
  { file: 'workflows/client-package.ts', from: '@temporalio/client', crosses: true },
  { file: 'workflows/activity.ts', from: '../activities/create-activities.ts', crosses: true },
  { file: 'workflows/contract.ts', from: '../src/contracts/tier.ts', crosses: false },
  { file: 'workflows/sdk.ts', from: '@temporalio/workflow', crosses: false },
  { file: 'src/contracts/client.ts', from: '../client/toolgate-client.ts', crosses: true },
  { file: 'src/policy/undici.ts', from: 'undici', crosses: true },
  { file: 'src/policy/contract.ts', from: '../contracts/tier.ts', crosses: false },
  // Activities run on the worker, outside the sandbox.
  { file: 'activities/workflow-api.ts', from: '@temporalio/workflow', crosses: true },
  { file: 'activities/workflow-code.ts', from: '../workflows/tool-call.ts', crosses: true },
  { file: 'activities/client.ts', from: '../src/client/toolgate-client.ts', crosses: false },
  // The caller's side loads no worker.
  { file: 'src/client/worker-package.ts', from: '@temporalio/worker', crosses: true },
  { file: 'src/client/workflow-code.ts', from: '../../workflows/tool-call.ts', crosses: true },
  { file: 'src/client/messages.ts', from: '../../workflows/messages.ts', crosses: false },
  { file: 'src/agent/activities.ts', from: '../../activities/lookup-tool-call.ts', crosses: true },
  { file: 'src/index.ts', from: './worker/create-worker.ts', crosses: true },
  { file: 'src/inbox/cli.ts', from: '../cli/output.ts', crosses: true },
  { file: 'src/worker/cli.ts', from: '../cli/output.ts', crosses: true },
  { file: 'src/worker/activities.ts', from: '../../activities/create-activities.ts', crosses: false },
  { file: 'src/dev/inbox.ts', from: '../inbox/inbox-app.ts', crosses: true },
  { file: 'src/support/contracts.ts', from: '../contracts/tier.ts', crosses: true },
  // The config module loads and checks a file; clients and workers are built from it elsewhere.
  { file: 'src/config/client.ts', from: '../client/toolgate-client.ts', crosses: true },
  { file: 'src/config/temporal.ts', from: '@temporalio/client', crosses: true },
  { file: 'src/config/contracts.ts', from: '../contracts/tier.ts', crosses: false },
  // No product code imports the examples: --example loads their config file by path.
  { file: 'src/cli/commands/examples.ts', from: '../../../examples/tool-set.ts', crosses: true },
  { file: 'src/cli/command-config.ts', from: '../../examples/toolgate.config.ts', crosses: true },
  { file: 'src/dev/examples.ts', from: '../../examples/tool-set.ts', crosses: true },
  { file: 'activities/examples.ts', from: '../examples/tools.ts', crosses: true },
];

describe('the folder fences in biome.json', () => {
  let scratch: string;
  let flagged: Map<string, string>;

  beforeAll(async () => {
    scratch = await mkdtemp(join(tmpdir(), 'toolgate-fences-'));
    await copyFile(join(root, 'biome.json'), join(scratch, 'biome.json'));
    for (const { file, from } of cases) {
      await mkdir(dirname(join(scratch, file)), { recursive: true });
      await writeFile(join(scratch, file), `import { value } from '${from}';\n\nexport { value };\n`);
    }
    // biome exits non-zero when it finds errors; the report is on stdout either way.
    const { stdout } = await run(biome, ['lint', '--reporter=json', '.'], { cwd: scratch }).catch(
      (error: { stdout?: string }) => ({ stdout: error.stdout ?? '' }),
    );
    const report = JSON.parse(stdout) as {
      diagnostics: Array<{ category: string; location: { path: string }; message?: unknown }>;
    };
    flagged = new Map(
      report.diagnostics
        .filter((diagnostic) => diagnostic.category === 'lint/style/noRestrictedImports')
        .map((diagnostic) => [diagnostic.location.path, JSON.stringify(diagnostic)]),
    );
  });

  afterAll(async () => {
    if (scratch) await rm(scratch, { recursive: true, force: true });
  });

  it('flags every import that crosses a fence, and none that does not', () => {
    const crossing = cases.filter((entry) => entry.crosses).map((entry) => entry.file);
    expect([...flagged.keys()].sort()).toEqual(crossing.sort());
  });

  it('says what to do instead', () => {
    expect(flagged.get('src/dev/examples.ts')).toContain('takes tools from a config');
    expect(flagged.get('workflows/node.ts')).toContain('Do the I/O in an activity');
  });

  it('has no exception: no file of the product turns the fence off', async () => {
    const config = JSON.parse(await readFile(join(root, 'biome.json'), 'utf8')) as {
      overrides: Array<{ includes: string[]; linter?: { rules?: { style?: Record<string, unknown> } } }>;
    };
    const off = config.overrides.filter(
      (override) => override.linter?.rules?.style?.['noRestrictedImports'] === 'off',
    );
    expect(off).toEqual([]);
  });
});
