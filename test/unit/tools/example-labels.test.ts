import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createExampleTools } from '../../../activities/tools/example-tools.ts';

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
});
