import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils.js';
import { Worker } from '@temporalio/worker';
import { beforeAll, describe, expect, it } from 'vitest';
import { bundleToolgateWorkflows } from '../../src/worker/create-worker.ts';
import { installRuntimeLogging } from '../../src/worker/runtime-logging.ts';

const root = fileURLToPath(new URL('../fixtures/histories/', import.meta.url));
const firstProtocolPaths = [
  'succeeded',
  'denied-not-allowed',
  'denied-invalid-input',
  'approved',
  'rejected',
  'expired',
  'timeout',
  'cancelled',
];
/**
 * Every gate protocol keeps its histories: a worker must replay calls started under any protocol
 * it still serves. Protocol 2 adds the readonly refusal that its execution activity now decides.
 */
const requiredPaths: Record<string, readonly string[]> = {
  'protocol-1': firstProtocolPaths,
  'protocol-2': [...firstProtocolPaths, 'readonly-denied-not-allowed'],
};
const fixtures = Object.entries(requiredPaths).flatMap(([protocol, names]) =>
  names.map((name) => ({ protocol, name, id: `${protocol}/${name}` })),
);

describe('recorded histories replay against the current workflow code', () => {
  let code: string;
  beforeAll(async () => {
    installRuntimeLogging();
    code = (await bundleToolgateWorkflows()).code;
  }, 120_000);

  it('has a fixture for every path through the gates, for every protocol', async () => {
    expect((await readdir(root)).sort()).toEqual(Object.keys(requiredPaths).sort());
    for (const [protocol, expected] of Object.entries(requiredPaths)) {
      const names = (await readdir(`${root}${protocol}`))
        .filter((name) => name.endsWith('.json'))
        .map((name) => name.replace(/\.json$/, ''));
      expect(names.sort()).toEqual([...expected].sort());
    }
  });

  it('replays every fixture without a nondeterminism error', async () => {
    const histories = await Promise.all(
      fixtures.map(async ({ protocol, name, id }) => ({
        workflowId: id,
        history: historyFromJSON(JSON.parse(await readFile(`${root}${protocol}/${name}.json`, 'utf8'))),
      })),
    );
    const results: Array<{ workflowId: string; error: unknown }> = [];
    for await (const result of Worker.runReplayHistories({ workflowBundle: { code } }, histories)) {
      results.push({ workflowId: result.workflowId, error: result.error });
    }
    expect(results.map((result) => result.workflowId)).toEqual(fixtures.map((fixture) => fixture.id));
    expect(
      results
        .filter((result) => result.error)
        .map((result) => `${result.workflowId}: ${String(result.error)}`),
    ).toEqual([]);
  }, 120_000);
});

describe('a tightened tool schema and the calls recorded before it', () => {
  // This pins a limitation, documented for operators: validation runs in the workflow and is not
  // recorded, so a release whose schema refuses what an open call was validated with breaks that
  // call's replay. Recording the validation (docs/benchmarks.md, proposal 5) would protect calls
  // started under the new protocol only: these histories follow protocol 2 and would still fail,
  // so the fix needs a test of its own, with histories recorded under it.
  it('fails the replay of an approval-tier call that passed the older schema', async () => {
    const { code } = await bundleToolgateWorkflows(
      fileURLToPath(new URL('../support/workflows/tightened-transfer.ts', import.meta.url)),
    );
    for (const name of ['approved', 'expired']) {
      const history = historyFromJSON(JSON.parse(await readFile(`${root}protocol-2/${name}.json`, 'utf8')));
      await expect(Worker.runReplayHistory({ workflowBundle: { code } }, history, name)).rejects.toThrow(
        /Nondeterminism|TMPRL1100/,
      );
    }
    // The readonly call recorded with the same catalog does not use the tightened tool: it replays.
    const readonly = historyFromJSON(JSON.parse(await readFile(`${root}protocol-2/succeeded.json`, 'utf8')));
    await Worker.runReplayHistory({ workflowBundle: { code } }, readonly, 'succeeded');
  }, 120_000);
});
