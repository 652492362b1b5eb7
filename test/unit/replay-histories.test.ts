import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils.js';
import { Worker } from '@temporalio/worker';
import { beforeAll, describe, expect, it } from 'vitest';
import { bundleToolgateWorkflows } from '../../src/worker/create-worker.ts';
import { installRuntimeLogging } from '../../src/worker/runtime-logging.ts';

const directory = fileURLToPath(new URL('../fixtures/histories/', import.meta.url));
const requiredPaths = [
  'succeeded',
  'denied-not-allowed',
  'denied-invalid-input',
  'approved',
  'rejected',
  'expired',
  'timeout',
  'cancelled',
];

describe('recorded histories replay against the current workflow code', () => {
  let code: string;
  beforeAll(async () => {
    installRuntimeLogging();
    code = (await bundleToolgateWorkflows()).code;
  }, 120_000);

  it('has a fixture for every path through the gates', async () => {
    const names = (await readdir(directory))
      .filter((name) => name.endsWith('.json'))
      .map((name) => name.replace(/\.json$/, ''));
    expect(names.sort()).toEqual([...requiredPaths].sort());
  });

  it('replays every fixture without a nondeterminism error', async () => {
    const histories = await Promise.all(
      requiredPaths.map(async (name) => ({
        workflowId: name,
        history: historyFromJSON(JSON.parse(await readFile(`${directory}${name}.json`, 'utf8'))),
      })),
    );
    const results: Array<{ workflowId: string; error: unknown }> = [];
    for await (const result of Worker.runReplayHistories({ workflowBundle: { code } }, histories)) {
      results.push({ workflowId: result.workflowId, error: result.error });
    }
    expect(results.map((result) => result.workflowId)).toEqual(requiredPaths);
    expect(
      results
        .filter((result) => result.error)
        .map((result) => `${result.workflowId}: ${String(result.error)}`),
    ).toEqual([]);
  }, 120_000);
});
