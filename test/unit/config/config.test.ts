import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { implementCompensation, implementTool } from '../../../activities/tool-implementation.ts';
import { configuredTools } from '../../../src/config/config-tools.ts';
import { defineConfig } from '../../../src/config/define-config.ts';
import {
  checkConfig,
  findConfigFile,
  type LoadedConfig,
  noConfigMessage,
} from '../../../src/config/load-config.ts';
import { createCatalog, defineTool } from '../../../src/contracts/define-tool.ts';

const addNote = defineTool({
  name: 'add_note',
  description: 'Add a note.',
  input: () => z.strictObject({ text: z.string() }),
  tier: 'irreversible',
  timeoutMs: 1_000,
});
const tagNote = defineTool({
  name: 'tag_note',
  description: 'Tag a note.',
  input: () => z.strictObject({ tag: z.string() }),
  tier: 'reversible',
  timeoutMs: 1_000,
  compensation: 'untag_note',
});
const catalog = createCatalog([addNote, tagNote]);
const run = async () => ({ ok: true });

let directory: string;
let file: string;
const valid = () =>
  defineConfig({
    catalog,
    tools: [implementTool(addNote, run), implementTool(tagNote, run)],
    compensations: [implementCompensation(tagNote, run)],
    workflows: './src/workflows.ts',
    allow: ['add_note'],
    approvers: [{ name: 'Erin', roles: ['editor'], publicKey: './keys/erin.pem' }],
    taskQueue: 'notes',
    connection: { address: 'temporal.internal:7233', namespace: 'notes' },
    dataDir: './state',
  });

beforeAll(async () => {
  directory = await mkdtemp(join(tmpdir(), 'toolgate-config-'));
  await mkdir(join(directory, 'src'));
  await writeFile(join(directory, 'src', 'workflows.ts'), 'export {};\n');
  file = join(directory, 'toolgate.config.ts');
});

afterAll(async () => {
  await rm(directory, { recursive: true, force: true });
});

/** The message of what checkConfig throws for this config. */
function refusal(config: unknown): string {
  try {
    checkConfig(config, file);
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
  throw new Error('the config was accepted');
}

describe('the config file', () => {
  it('accepts a whole config and makes its paths absolute, relative to the file', () => {
    const loaded = checkConfig(valid(), file);
    expect(loaded.workflowsPath).toBe(join(directory, 'src', 'workflows.ts'));
    expect(loaded.dataDir).toBe(join(directory, 'state'));
    expect(loaded.policy).toEqual({ allow: ['add_note'] });
    expect(loaded.approvers).toEqual([
      { name: 'Erin', roles: ['editor'], publicKey: join(directory, 'keys', 'erin.pem') },
    ]);
    expect(loaded.taskQueue).toBe('notes');
    expect(checkConfig({ ...valid(), drainGraceMs: 90_000 }, file).drainGraceMs).toBe(90_000);
    const limited = checkConfig(
      { ...valid(), quotas: { perTool: { add_note: { maxConcurrent: 2 } } }, breakers: { tag_note: {} } },
      file,
    );
    expect(limited.quotas).toEqual({ perTool: { add_note: { maxConcurrent: 2 } } });
    expect(limited.breakers).toEqual({ tag_note: {} });
  });

  it('names the file and the field of each mistake', () => {
    const cases: Array<[unknown, string]> = [
      [
        { ...valid(), catalog: undefined },
        'catalog: must be the catalog: createCatalog([...]) from toolgate/contracts',
      ],
      [{ ...valid(), tools: [implementTool(addNote, run), { contract: addNote, execute: 'run' }] }, 'tools'],
      [{ ...valid(), workflows: 42 }, 'workflows: must name the workflows module'],
      [{ ...valid(), alow: ['add_note'] }, 'unknown field alow'],
      [
        { ...valid(), allow: ['add_not'] },
        'allow[0]: "add_not" is not a tool of the catalog (its tools: add_note, tag_note)',
      ],
      [
        { ...valid(), allow: { allow: [], tenants: { acme: ['nope'] } } },
        'allow.tenants.acme[0]: "nope" is not a tool',
      ],
      [
        { ...valid(), workflows: './src/missing.ts' },
        `workflows: ${join(directory, 'src', 'missing.ts')} does not exist`,
      ],
      [{ ...valid(), connection: { address: 'temporal.internal' } }, 'connection.address: must be host:port'],
      [
        { ...valid(), approvers: [{ name: 'Erin' }, { name: ' erin ' }] },
        'approvers[1].name: " erin " is approvers[0] again',
      ],
      [{ ...valid(), approvers: [{ name: '' }] }, 'approvers[0].name'],
      [{ ...valid(), taskQueue: '' }, 'taskQueue'],
      [{ ...valid(), drainGraceMs: 10 }, 'drainGraceMs'],
      [{ ...valid(), catalog: { add_note: tagNote } }, 'catalog.add_note: holds the contract of tag_note'],
      [
        { ...valid(), quotas: { perTool: { add_nots: { maxConcurrent: 1 } } } },
        'quotas.perTool.add_nots: "add_nots" is not a tool of the catalog',
      ],
      [
        { ...valid(), quotas: { perTenant: { acme: { maxConcurrent: -1 } } } },
        'quotas.perTenant.acme.maxConcurrent',
      ],
      [{ ...valid(), breakers: { tag_nte: {} } }, 'breakers.tag_nte: "tag_nte" is not a tool of the catalog'],
      [{ ...valid(), breakers: { tag_note: { cooldownMs: 5 } } }, 'breakers.tag_note.cooldownMs'],
    ];
    for (const [config, expected] of cases) {
      const message = refusal(config);
      expect(message, expected).toContain(`${file} is not a valid toolgate config`);
      expect(message, expected).toContain(expected);
    }
  });

  it('is found by --config, else toolgate.config.* in the folder; without one the message names toolgate init', async () => {
    const empty = await mkdtemp(join(tmpdir(), 'toolgate-no-config-'));
    try {
      expect(findConfigFile(undefined, empty)).toBeUndefined();
      expect(noConfigMessage(empty)).toMatch(/toolgate init.*--config <file>.*--example/);
      await writeFile(join(empty, 'toolgate.config.mjs'), 'export default {};\n');
      expect(findConfigFile(undefined, empty)).toBe(join(empty, 'toolgate.config.mjs'));
      await writeFile(join(empty, 'toolgate.config.ts'), 'export default {};\n');
      expect(findConfigFile(undefined, empty)).toBe(join(empty, 'toolgate.config.ts'));
      expect(() => findConfigFile('other.ts', empty)).toThrow(
        `The config file ${join(empty, 'other.ts')} does not exist.`,
      );
    } finally {
      await rm(empty, { recursive: true, force: true });
    }
  });
});

describe("a worker's implementations, checked at start", () => {
  const loaded = (overrides: Partial<Parameters<typeof defineConfig>[0]>): LoadedConfig =>
    checkConfig({ ...valid(), ...overrides }, file);

  it('builds them for the data directory when they are a function', async () => {
    const seen: string[] = [];
    const tools = await configuredTools(
      loaded({
        tools: ({ dataDir }) => {
          seen.push(dataDir);
          return [implementTool(addNote, run), implementTool(tagNote, run)];
        },
      }),
      '/data/here',
    );
    expect(seen).toEqual(['/data/here']);
    expect(tools.tools.map((tool) => tool.contract.name)).toEqual(['add_note', 'tag_note']);
  });

  it('refuses a tool without an implementation, and an implementation without a contract, by name', async () => {
    const stray = defineTool({
      name: 'stray_tool',
      description: 'Not in the catalog.',
      input: () => z.strictObject({}),
      tier: 'readonly',
      timeoutMs: 1_000,
    });
    const twin = defineTool({
      name: 'add_note',
      description: 'Another contract under the same name.',
      input: () => z.strictObject({ text: z.string() }),
      tier: 'irreversible',
      timeoutMs: 1_000,
    });
    const cases: Array<[Partial<Parameters<typeof defineConfig>[0]>, string]> = [
      [{ tools: [implementTool(addNote, run)] }, 'no implementation for tag_note: add it to `tools`.'],
      [{ tools: undefined }, '`tools` is missing'],
      [
        { tools: [implementTool(addNote, run), implementTool(tagNote, run), implementTool(stray, run)] },
        'the implementation of stray_tool has no contract in the catalog',
      ],
      [
        { tools: [implementTool(twin, run), implementTool(tagNote, run)] },
        'the implementation of add_note was built from another contract than the catalog',
      ],
      [{ compensations: [] }, 'tag_note names the compensation untag_note, which is not in `compensations`.'],
      [
        {
          tools: () => {
            throw new Error('no database');
          },
        },
        '`tools` failed: no database',
      ],
    ];
    for (const [overrides, expected] of cases) {
      await expect(configuredTools(loaded(overrides), '/data'), expected).rejects.toThrow(expected);
    }
  });
});
