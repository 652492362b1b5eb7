/**
 * The files `toolgate init` writes: a project that runs as it is, on Node's own type stripping.
 * Each file is one tool's worth of what a real project needs, commented where a reader decides
 * something.
 */

export interface InitVersions {
  /** How package.json names toolgate: a version range, a tarball path, a git URL. */
  readonly toolgate: string;
  /** Version ranges of toolgate's peer dependencies and the TypeScript tools. */
  readonly peers: Readonly<Record<string, string>>;
  readonly typescript: string;
  readonly nodeTypes: string;
}

export function initFiles(projectName: string, versions: InitVersions): Record<string, string> {
  const packageJson = {
    name: projectName,
    private: true,
    type: 'module',
    engines: { node: '>=22.18' },
    scripts: {
      start: 'toolgate dev',
      test: 'node --test',
      typecheck: 'tsc',
    },
    dependencies: {
      '@temporalio/client': versions.peers['@temporalio/client'],
      '@temporalio/worker': versions.peers['@temporalio/worker'],
      toolgate: versions.toolgate,
      zod: versions.peers['zod'],
    },
    devDependencies: {
      '@types/node': versions.nodeTypes,
      typescript: versions.typescript,
    },
  };
  return {
    'package.json': `${JSON.stringify(packageJson, null, 2)}\n`,
    'tsconfig.json': `${JSON.stringify(
      {
        compilerOptions: {
          target: 'ES2022',
          module: 'nodenext',
          moduleResolution: 'nodenext',
          strict: true,
          skipLibCheck: true,
          types: ['node'],
          // Node.js runs these files by erasing their types: no emit, .ts imports, erasable syntax.
          noEmit: true,
          allowImportingTsExtensions: true,
          erasableSyntaxOnly: true,
          verbatimModuleSyntax: true,
        },
        include: ['src', 'test', 'toolgate.config.ts'],
      },
      null,
      2,
    )}\n`,
    '.gitignore': 'node_modules/\n.toolgate/\n',
    'toolgate.config.ts': `// Every toolgate command reads this file: toolgate dev, worker, call, get, list, approve…
import { defineConfig } from 'toolgate/config';
import { catalog } from './src/contracts.ts';
import { createTools } from './src/tools.ts';

export default defineConfig({
  catalog,
  // Built when a worker starts, for its data directory (.toolgate by default).
  tools: ({ dataDir }) => createTools(dataDir),
  workflows: './src/workflows.ts',
  // Deny by default: only the tools listed here run.
  allow: ['add_note'],
  // Who may approve approval-tier tools, and their roles (none here yet).
  approvers: [],
  taskQueue: '${projectName.replace(/'/g, '')}',
});
`,
    'src/contracts.ts': `// The contracts: zod and pure code only. Workflows, workers and callers all import this file.
import { createCatalog, defineTool } from 'toolgate/contracts';
import { z } from 'zod';

export const addNote = defineTool({
  name: 'add_note',
  description: 'Append a note to the notebook. A note id is used once: the same id never adds twice.',
  input: () =>
    z.strictObject({
      id: z.string().regex(/^[a-z0-9-]{1,40}$/),
      text: z.string().min(1).max(500),
    }),
  tier: 'irreversible', // one attempt; an unclear ending is reported, never re-run
  timeoutMs: 5_000,
  idempotencyKey: (input) => \`note-\${input.id}\`,
});

export const catalog = createCatalog([addNote]);
`,
    'src/tools.ts': `// The implementations: the I/O, run by the worker with a deadline and an AbortSignal.
import { appendFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { implementTool } from 'toolgate/worker';
import { addNote } from './contracts.ts';

/** The tools, keeping their files in \`dataDir\`. */
export function createTools(dataDir: string) {
  return [
    implementTool(addNote, async ({ input, key, signal }) => {
      signal.throwIfAborted();
      await mkdir(dataDir, { recursive: true });
      await appendFile(join(dataDir, 'notes.txt'), \`\${key}\\t\${input.text}\\n\`);
      return { saved: input.id };
    }),
  ];
}
`,
    'src/workflows.ts': `// The workflows module the worker bundles into Temporal's workflow sandbox.
import { createToolCallWorkflow } from 'toolgate/workflow';
import { catalog } from './contracts.ts';

export const toolCall = createToolCallWorkflow(catalog);
`,
    'test/tools.test.ts': `import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { addNote } from '../src/contracts.ts';
import { createTools } from '../src/tools.ts';

test('add_note takes a valid note and refuses a bad id', () => {
  assert.equal(addNote.input.safeParse({ id: 'n1', text: 'hello' }).success, true);
  assert.equal(addNote.input.safeParse({ id: 'No Spaces', text: 'hello' }).success, false);
});

test('add_note appends the note under its key', async () => {
  const dataDir = await mkdtemp(join(tmpdir(), 'notes-'));
  try {
    const [tool] = createTools(dataDir);
    await tool!.execute({
      input: { id: 'n1', text: 'hello' },
      key: 'note-n1',
      signal: AbortSignal.timeout(5_000),
      callId: 'test',
      context: { tenant: 'test', principal: 'tester', principalKind: 'human' },
      attempt: 1,
    });
    assert.equal(await readFile(join(dataDir, 'notes.txt'), 'utf8'), 'note-n1\\thello\\n');
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
});
`,
  };
}
