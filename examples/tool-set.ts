import { access, mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { ToolPolicy } from '../activities/create-activities.ts';
import type { EmbeddedToolSet } from '../src/dev/embedded.ts';
import { modulePath } from '../src/support/module-path.ts';
import { exampleCatalog } from './contracts.ts';
import { createExampleActivities, createExampleTools, exampleToolPaths } from './tools.ts';

/** The example tools keep their files in `<data dir>/data`. */
export function exampleDataDir(dataDir: string): string {
  return join(dataDir, 'data');
}

/**
 * The example tools as an embedded tool set: what `toolgate dev`, the demo and the example agent
 * serve. Their files live in `<data dir>/data`, and read_config finds a settings file there.
 * `policy` replaces the example allowlist (the demo shortens the approval window with it).
 */
export function createExampleToolSet(options: { readonly policy?: ToolPolicy } = {}): EmbeddedToolSet {
  return {
    catalog: exampleCatalog,
    workflowsPath: modulePath('./workflows', import.meta.url),
    async activities({ dataDir, approvalPublicKeys }) {
      await prepareExampleData(dataDir);
      const tools = createExampleTools(exampleDataDir(dataDir));
      return createExampleActivities(tools, {
        approvalPublicKeys,
        ...(options.policy ? { policy: options.policy } : {}),
      });
    },
  };
}

/** The example tools with the example allowlist. */
export const exampleToolSet: EmbeddedToolSet = createExampleToolSet();

/** Gives read_config a settings file in `<data dir>/data`, unless it has one. */
export async function prepareExampleData(dataDir: string): Promise<void> {
  await ensureExampleConfig(exampleToolPaths(exampleDataDir(dataDir)).configFile);
}

async function ensureExampleConfig(file: string): Promise<void> {
  try {
    await access(file);
  } catch {
    await mkdir(dirname(file), { recursive: true });
    await writeFile(
      file,
      `${JSON.stringify({ region: 'eu-west', retries: 3, greeting: 'hello' }, null, 2)}\n`,
      { flag: 'wx' },
    ).catch(() => undefined);
  }
}
