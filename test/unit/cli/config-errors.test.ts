/**
 * What the binary says about a missing or broken config, before it connects to anything: the file,
 * the field, and what to do. No cluster is reachable from these tests, so a check that came after
 * connecting would end "unreachable" instead.
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../..', import.meta.url));
const binary = join(root, 'bin', 'toolgate.js');

let project: string;

/** The binary in `project` with no cluster, config or data dir from this process's environment. */
async function toolgate(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (!name.startsWith('TEMPORAL_') && !name.startsWith('TOOLGATE_')) env[name] = value;
  }
  return promisify(execFile)(process.execPath, [binary, ...args], {
    cwd: project,
    env,
    timeout: 30_000,
  }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code?: number; stdout?: string; stderr?: string }) => ({
      code: typeof error.code === 'number' ? error.code : 1,
      stdout: error.stdout ?? '',
      stderr: error.stderr ?? '',
    }),
  );
}

const contracts = `import { createCatalog, defineTool } from 'toolgate/contracts';
import { z } from 'zod';
export const ping = defineTool({ name: 'ping', description: 'Ping.', input: () => z.strictObject({}), tier: 'readonly', timeoutMs: 1000 });
export const pong = defineTool({ name: 'pong', description: 'Pong.', input: () => z.strictObject({}), tier: 'readonly', timeoutMs: 1000 });
export const catalog = createCatalog([ping, pong]);
`;

beforeAll(async () => {
  project = await mkdtemp(join(tmpdir(), 'toolgate-config-errors-'));
  await writeFile(join(project, 'package.json'), '{ "type": "module" }\n');
  await mkdir(join(project, 'node_modules'));
  await symlink(root, join(project, 'node_modules', 'toolgate'), 'dir');
  await symlink(join(root, 'node_modules', 'zod'), join(project, 'node_modules', 'zod'), 'dir');
  await writeFile(join(project, 'contracts.ts'), contracts);
  await writeFile(join(project, 'workflows.ts'), 'export {};\n');
});

afterAll(async () => {
  if (project) await rm(project, { recursive: true, force: true });
});

describe('a command without a usable config', () => {
  it('with none, says so and names toolgate init, --config and --example', async () => {
    const result = await toolgate('get', 'toolgate/default/ping/~x', '--json');
    expect(result.code).toBe(1);
    const error = String((JSON.parse(result.stdout) as { error: string }).error);
    expect(error).toContain(`No toolgate config in ${project}`);
    expect(error).toMatch(/toolgate init.*--config <file>.*--example/);
  });

  it('names the file and the field, for a .ts config loaded by type stripping', async () => {
    const cases: Array<[string, string, RegExp]> = [
      [
        'no-default.config.ts',
        'export const config = {};\n',
        /no-default\.config\.ts has no default export: end it with `export default defineConfig/,
      ],
      [
        'enum.config.ts',
        'enum Tier { A }\nexport default { tier: Tier.A };\n',
        /enum\.config\.ts: .*erasable syntax \(no enums, namespaces or parameter properties\)/,
      ],
      [
        'missing-import.config.ts',
        "import { catalog } from './nowhere.ts';\nexport default { catalog };\n",
        /missing-import\.config\.ts: .*nowhere\.ts.*Check the import paths/,
      ],
      [
        'unknown-tool.config.ts',
        "import { defineConfig } from 'toolgate/config';\nimport { catalog } from './contracts.ts';\nexport default defineConfig({ catalog, workflows: './workflows.ts', allow: ['ping', 'pnog'] });\n",
        /unknown-tool\.config\.ts is not a valid toolgate config:\n {2}allow\[1\]: "pnog" is not a tool of the catalog \(its tools: ping, pong\)/,
      ],
      [
        'typo.config.ts',
        "import { catalog } from './contracts.ts';\nexport default { catalog, workflows: './workflows.ts', allow: [], taskQeue: 'x' };\n",
        /typo\.config\.ts is not a valid toolgate config:\n {2}\(the default export\): unknown field taskQeue/,
      ],
    ];
    for (const [file, text, expected] of cases) {
      await writeFile(join(project, file), text);
      const result = await toolgate('list', '--config', file);
      expect(result.code, file).toBe(1);
      expect(result.stderr, file).toMatch(expected);
    }
  });

  it('refuses to start a worker for a tool without an implementation, by name, before any server starts', async () => {
    await writeFile(
      join(project, 'half.config.ts'),
      [
        "import { defineConfig } from 'toolgate/config';",
        "import { implementTool } from 'toolgate/worker';",
        "import { catalog, ping } from './contracts.ts';",
        'export default defineConfig({',
        '  catalog,',
        '  tools: [implementTool(ping, async () => "pong")],',
        "  workflows: './workflows.ts',",
        "  allow: ['ping', 'pong'],",
        '});',
        '',
      ].join('\n'),
    );
    const dataDir = join(project, 'state');
    const started = performance.now();
    const result = await toolgate('dev', '--config', 'half.config.ts', '--data-dir', dataDir);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('half.config.ts: no implementation for pong: add it to `tools`.');
    expect(performance.now() - started).toBeLessThan(10_000);
    // Refused before anything started: no database, no keys, no endpoint file.
    expect(await readdir(dataDir).catch(() => [])).toEqual([]);
  });

  it('takes --config or --example, not both, and names a --config that does not exist', async () => {
    const both = await toolgate('list', '--example', '--config', 'x.ts');
    expect(both.code).toBe(1);
    expect(both.stderr).toContain('Give --config or --example, not both.');
    const missing = await toolgate('list', '--config', 'nope.config.ts');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain(`The config file ${join(project, 'nope.config.ts')} does not exist.`);
  });
});
