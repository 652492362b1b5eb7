import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createApprovalSigner, loadOrCreateApprovalKeys } from '../../src/client/approval-signer.ts';
import { ToolgateClient } from '../../src/client/toolgate-client.ts';
import type { CallRecord } from '../../src/contracts/call-record.ts';
import { type DevServer, findFreePort, findTemporalCli, startDevServer } from '../../src/dev/index.ts';
import { exampleCatalog } from '../../src/tools/example-contracts.ts';
import { installRuntimeLogging } from '../../src/worker/runtime-logging.ts';
import { type ChildHandle, spawnWorker } from '../support/child-processes.ts';
import { agent } from '../support/harness.ts';

const callCount = 100;

async function mapLimited<T, R>(items: readonly T[], limit: number, work: (item: T) => Promise<R>) {
  const results: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < items.length) {
        const index = next++;
        results[index] = await work(items[index]!);
      }
    }),
  );
  return results;
}

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
    const waiting = async (target: ToolgateClient) =>
      (await mapLimited(callIds, 20, (id) => target.get(id))).filter(
        (record) => record?.status === 'awaiting_approval',
      ).length;
    const deadline = Date.now() + 60_000;
    while ((await waiting(client)) < callCount && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    expect(await waiting(client)).toBe(callCount);

    // The crash: the server dies without a chance to flush anything; its worker goes with it.
    await first.kill();
    await firstWorker.kill();

    const second = await start();
    expect(second.address).toBe(first.address);
    client = await connectClient(second.address);
    await startWorker(second.address);
    const statuses = await mapLimited(
      callIds,
      20,
      async (id) => (await client.temporal.workflow.getHandle(id).describe()).status.name,
    );
    expect(statuses.filter((status) => status === 'RUNNING')).toHaveLength(callCount);
    expect(await waiting(client)).toBe(callCount);
    expect(await ledger()).toHaveLength(0);

    const decisions = await mapLimited(callIds, 10, (id) => client.approve(id, { approver: 'alice' }));
    expect(decisions.filter((decision) => decision.accepted)).toHaveLength(callCount);
    const records: CallRecord[] = await mapLimited(callIds, 20, (id) => client.result(id));
    expect(records.filter((record) => record.status === 'succeeded')).toHaveLength(callCount);
    const entries = await ledger();
    expect(entries).toHaveLength(callCount);
    expect(new Set(entries.map((entry) => entry.key)).size).toBe(callCount);
    console.info(
      `server SIGKILL: ${callCount} calls waited across the crash; ${entries.length} transfers, each once`,
    );
  });
});
