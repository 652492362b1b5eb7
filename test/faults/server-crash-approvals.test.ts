import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { exampleCatalog } from '../../examples/contracts.ts';
import { createApprovalSigner, loadOrCreateApprovalKeys } from '../../src/client/approval-signer.ts';
import { ToolgateClient } from '../../src/client/toolgate-client.ts';
import type { CallRecord } from '../../src/contracts/call-record.ts';
import { type DevServer, findFreePort, findTemporalCli, startDevServer } from '../../src/dev/index.ts';
import { installRuntimeLogging } from '../../src/worker/runtime-logging.ts';
import { type ChildHandle, spawnWorker } from '../support/child-processes.ts';
import { agent } from '../support/harness.ts';
import { mapLimited } from '../support/map-limited.ts';
import { waitFor } from '../support/wait.ts';

const callCount = 100;

let workDir: string;
const servers: DevServer[] = [];
const workers: ChildHandle[] = [];
const connections: Connection[] = [];

beforeAll(async () => {
  installRuntimeLogging();
  workDir = await mkdtemp(join(tmpdir(), 'toolgate-server-crash-'));
});
afterAll(async () => {
  await Promise.all(workers.map((worker) => worker.kill()));
  await Promise.all(connections.map((connection) => connection.close().catch(() => undefined)));
  await Promise.all(servers.map((server) => server.stop()));
  await rm(workDir, { recursive: true, force: true });
});

describe('dev server SIGKILL while approval calls wait', () => {
  it(`keeps ${callCount} waiting calls across a crash; approving runs each exactly once`, async () => {
    const cli = await findTemporalCli({ onProgress: () => undefined });
    const dbFile = join(workDir, 'temporal.db');
    const grpcPort = await findFreePort(0);
    const start = async () => {
      const server = await startDevServer({
        cli,
        dbFile,
        grpcPort,
        headless: true,
        onProgress: () => undefined,
      });
      servers.push(server);
      return server;
    };
    const bundleFile = join(workDir, 'bundle.js');
    await writeFile(bundleFile, inject('workflowBundle'));
    const dataDir = join(workDir, 'data');
    const keysDir = join(dataDir, 'keys');
    const keys = await loadOrCreateApprovalKeys(keysDir);
    const taskQueue = 'server-crash';
    const connectClient = async (address: string) => {
      const connection = await Connection.connect({ address });
      connections.push(connection);
      return new ToolgateClient({
        client: new Client({ connection }),
        taskQueue,
        catalog: exampleCatalog,
        signer: createApprovalSigner(keys.privateKey),
      });
    };
    const startWorker = async (address: string) => {
      const worker = await spawnWorker({ address, taskQueue, dataDir, keysDir, bundleFile });
      workers.push(worker);
      return worker;
    };
    const ledger = async () =>
      (await readFile(join(dataDir, 'ledger.jsonl'), 'utf8').catch(() => ''))
        .split('\n')
        .filter((line) => line.length > 0)
        .map((line) => JSON.parse(line) as { key: string });

    const testStart = Date.now();
    const seconds = () => `${((Date.now() - testStart) / 1000).toFixed(1)} s`;
    // Printed as they happen, so that a failure's output shows how far the test got and when.
    const phase = (name: string) => console.info(`server SIGKILL test: ${name} at ${seconds()}`);
    const first = await start();
    const firstWorker = await startWorker(first.address);
    let client = await connectClient(first.address);
    const references = Array.from({ length: callCount }, (_, index) => `CRASH-${index}`);
    const started = await mapLimited(references, 20, (reference) =>
      client.start(
        {
          tool: 'transfer_funds',
          input: { reference, from: 'ACC-1', to: 'ACC-2', amountCents: 100, currency: 'EUR', memo: null },
        },
        agent,
      ),
    );
    const callIds = started.map((call) => call.callId);
    expect(new Set(callIds).size).toBe(callCount);
    // Every call's live record, read from its workflow, until all of them wait for approval. A
    // read that fails (a busy or cold worker can miss the query's timeout) counts as not yet
    // waiting; the last failure is quoted if the deadline passes.
    const allWaiting = (target: ToolgateClient) =>
      waitFor(
        async () => {
          let lastFailure = 'none';
          const records = await mapLimited(callIds, 20, (id) =>
            target.get(id).catch((error: unknown) => {
              lastFailure = String(error);
              return undefined;
            }),
          );
          const count = records.filter((record) => record?.status === 'awaiting_approval').length;
          if (count === callCount) return { count, lastFailure };
          throw new Error(`${count} of ${callCount} calls waiting; last failed read: ${lastFailure}`);
        },
        { timeoutMs: 90_000, intervalMs: 250, what: `all ${callCount} calls awaiting approval` },
      );
    expect(await allWaiting(client)).toEqual({ count: callCount, lastFailure: 'none' });
    phase(`${callCount} waiting`);

    // The crash: the server dies without a chance to flush anything; its worker goes with it.
    await first.kill();
    await firstWorker.kill();

    const second = await start();
    expect(second.address).toBe(first.address);
    client = await connectClient(second.address);
    phase('server restarted');
    await startWorker(second.address);
    phase('worker ready');
    const statuses = await mapLimited(
      callIds,
      20,
      async (id) => (await client.temporal.workflow.getHandle(id).describe()).status.name,
    );
    expect(statuses.filter((status) => status === 'RUNNING')).toHaveLength(callCount);
    phase('all described');
    expect(await allWaiting(client)).toEqual({ count: callCount, lastFailure: 'none' });
    expect(await ledger()).toHaveLength(0);
    phase('all queried');

    const approvalMs: number[] = [];
    const decisions = await mapLimited(callIds, 10, async (id) => {
      const sent = Date.now();
      const outcome = await client.approve(id, { approver: 'alice' });
      approvalMs.push(Date.now() - sent);
      return outcome;
    });
    // Each decision goes by Update, which answers once the worker has checked it: every one must
    // be accepted, none refused or finding the call closed; the records below show each call
    // approved by alice and run once.
    expect(
      decisions.flatMap((decision, index) =>
        decision.accepted ? [] : [`${callIds[index]}: ${decision.state}: ${decision.reason}`],
      ),
    ).toEqual([]);
    const confirmed = decisions.filter((decision) => decision.accepted).length;
    approvalMs.sort((a, b) => a - b);
    phase(
      `all approved (${confirmed} accepted; an approval returned after ` +
        `${approvalMs[Math.floor(callCount / 2)]} ms at the median, ${approvalMs[callCount - 1]} ms at most)`,
    );
    // Bounded: a call whose decision never counted would wait for a human for a day, and the test
    // would end in a bare timeout instead of naming it.
    const resultsDeadline = Date.now() + 120_000;
    const records: CallRecord[] = await mapLimited(callIds, 20, (id) =>
      client.temporal.connection.withDeadline(resultsDeadline, () => client.result(id)),
    );
    expect(
      records.flatMap((record) =>
        record.status === 'succeeded' && record.approval?.decidedBy === 'alice'
          ? []
          : [
              `${record.callId}: ${record.status} ${record.reason ?? ''} decided by ${record.approval?.decidedBy}`,
            ],
      ),
    ).toEqual([]);
    const entries = await ledger();
    expect(entries).toHaveLength(callCount);
    expect(new Set(entries.map((entry) => entry.key)).size).toBe(callCount);
    console.info(
      `server SIGKILL: ${callCount} calls waited across the crash; ${entries.length} transfers, each once; ` +
        `done at ${seconds()}`,
    );
  });
});
