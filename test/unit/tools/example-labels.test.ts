import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createExampleTools } from '../../../examples/tools.ts';

// The label store is keyed by a model-chosen item name; names that an object inherits must be
// plain keys like any other.
describe('add_label and its compensation', () => {
  let dataDir: string;
  beforeEach(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'toolgate-labels-'));
  });
  afterEach(async () => {
    await rm(dataDir, { recursive: true, force: true });
  });

  const execution = (input: { item: string; label: string }, output?: unknown) => ({
    input,
    output,
    signal: new AbortController().signal,
    key: 'toolgate/test/add_label/~1',
    callId: 'toolgate/test/add_label/~1',
    context: { tenant: 'test', principal: 'p', principalKind: 'agent' as const },
    attempt: 1,
  });

  it.each(['__proto__', 'constructor', 'toString', 'hasOwnProperty'])(
    'stores, reads back and removes a label on the item %s',
    async (item) => {
      const { tools, compensations } = createExampleTools(dataDir);
      const add = tools.find((tool) => tool.contract.name === 'add_label')!;
      const undo = compensations.find((compensation) => compensation.name === 'remove_label')!;

      const first = await add.execute(execution({ item, label: 'urgent' }));
      expect(first).toEqual({ item, label: 'urgent', added: true });
      const again = await add.execute(execution({ item, label: 'urgent' }));
      expect(again).toEqual({ item, label: 'urgent', added: false });
      const stored = JSON.parse(await readFile(join(dataDir, 'labels.json'), 'utf8'));
      expect(Object.hasOwn(stored, item)).toBe(true);
      expect(stored[item]).toEqual(['urgent']);
      // Nothing leaked onto prototypes.
      expect(({} as Record<string, unknown>)['urgent']).toBeUndefined();

      await undo.execute(execution({ item, label: 'urgent' }, first));
      const after = JSON.parse(await readFile(join(dataDir, 'labels.json'), 'utf8'));
      expect(after[item]).toEqual([]);
    },
  );

  it('keeps every label when 40 calls and two workers add them at once', async () => {
    // Two sets of tools on one data directory, as two workers of one process have.
    const adders = [createExampleTools(dataDir), createExampleTools(dataDir)].map(
      ({ tools }) => tools.find((tool) => tool.contract.name === 'add_label')!,
    );
    const labels = Array.from({ length: 40 }, (_, index) => `label-${String(index).padStart(2, '0')}`);
    // Before, each read the file, added its label and wrote it back, so most labels were lost (and
    // writes in one millisecond shared a temporary file, so some renames failed with ENOENT).
    const results = await Promise.all(
      labels.map((label, index) => adders[index % 2]!.execute(execution({ item: 'ticket-9', label }))),
    );
    expect(results.every((result) => (result as { added: boolean }).added)).toBe(true);
    const stored = JSON.parse(await readFile(join(dataDir, 'labels.json'), 'utf8'));
    expect(stored['ticket-9']).toEqual(labels);
  });
});
