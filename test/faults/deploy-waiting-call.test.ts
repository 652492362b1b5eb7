import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { bundleToolgateWorkflows } from '../../src/worker/create-worker.ts';
import { faultSetup, useFaultRun } from '../support/fault-run.ts';
import { agent } from '../support/harness.ts';
import { waitFor } from '../support/wait.ts';
import { releaseTwoPatch } from '../support/workflows/release-two.ts';

/**
 * A deploy while a call waits for a human: the worker that started the call is stopped and a
 * worker with changed workflow code takes over. The change is guarded by `patched()`, the rule of
 * docs/operators.md "Deploys", so the waiting call replays its recorded steps on the new code and
 * finishes there, taking the new branch only after the point it had reached.
 */
const run = useFaultRun('toolgate-deploy-');

describe('a call waiting for approval across a worker code change', () => {
  it('starts on release one, is approved and runs on release two, which records its patch', async () => {
    const { client, startWorker, lines } = await faultSetup(run, 'deploy');
    const releaseTwoBundle = join(run.workDir, 'release-two-bundle.js');
    const bundle = await bundleToolgateWorkflows(
      fileURLToPath(new URL('../support/workflows/release-two.ts', import.meta.url)),
    );
    await writeFile(releaseTwoBundle, bundle.code);

    const releaseOne = await startWorker({ identity: 'release-one' });
    const started = await client.start(
      {
        tool: 'transfer_funds',
        input: {
          reference: 'deploy-1',
          from: 'ACC-1',
          to: 'ACC-2',
          amountCents: 1250,
          currency: 'EUR',
          memo: null,
        },
        key: 'deploy-1',
      },
      agent,
    );
    await waitFor(
      async () => ((await client.get(started.callId))?.status === 'awaiting_approval' ? true : undefined),
      { timeoutMs: 30_000, what: 'the call to wait for approval' },
    );
    // The deploy: release one drains and exits; release two, with other workflow code, takes over.
    await releaseOne.stop();
    await startWorker({ identity: 'release-two', bundleFile: releaseTwoBundle });

    const decision = await client.approve(started.callId, { approver: 'alice' });
    expect(decision.accepted).toBe(true);
    const record = await client.result(started.callId);
    expect(record).toMatchObject({ status: 'succeeded', effect: 'applied', attempts: 1 });
    expect(record.approval).toMatchObject({ decidedBy: 'alice', decision: 'approve' });
    expect(await lines('ledger.jsonl')).toHaveLength(1);

    // The history shows both releases: the first workflow task on release one, the rest on release
    // two, with its patch marker and memo after the steps release one had recorded.
    const handle = run.temporal.workflow.getHandle(started.callId);
    const events = (await handle.fetchHistory()).events ?? [];
    const identities = new Set(
      events.map((event) => event.workflowTaskCompletedEventAttributes?.identity).filter(Boolean),
    );
    expect([...identities]).toEqual(['release-one', 'release-two']);
    const patchData = (event: (typeof events)[number]) => {
      const data = event.markerRecordedEventAttributes?.details?.['patch-data']?.payloads?.[0]?.data;
      return data ? Buffer.from(data).toString('utf8') : '';
    };
    const markerAt = events.findIndex((event) => patchData(event).includes(releaseTwoPatch));
    const waitedAt = events.findIndex((event) => event.workflowExecutionSignaledEventAttributes);
    expect(markerAt).toBeGreaterThan(waitedAt);
    expect((await handle.describe()).memo).toMatchObject({ closedByRelease: 'two' });
  });
});
