import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { copyFile, mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { exampleCatalog } from '../../examples/contracts.ts';
import { exampleDataDir } from '../../examples/tool-set.ts';
import { exampleToolPaths } from '../../examples/tools.ts';
import { createApprovalSigner, loadOrCreateApprovalKeys } from '../../src/client/approval-signer.ts';
import { ToolgateClient } from '../../src/client/toolgate-client.ts';
import type { CallRecord } from '../../src/contracts/call-record.ts';
import { findFreePort } from '../../src/dev/index.ts';
import { type SpawnedChild, spawnNode } from '../support/child-processes.ts';
import { repositoryRoot, serviceProcess } from '../support/cluster-stack.ts';
import { agent } from '../support/harness.ts';
import { mapLimited } from '../support/map-limited.ts';
import { cancelRound, heartbeatRequests, quantile } from '../support/mass-cancel.ts';
import { waitFor } from '../support/wait.ts';

/**
 * The compose stack as real processes (test/support/cluster-stack.ts): Temporal built from Go
 * modules on PostgreSQL, the deploy scripts unchanged, and the worker replicas compose describes,
 * each a `toolgate worker` process with the compose environment, sharing one data folder.
 */
const address = inject('clusterAddress');
const workDir = inject('clusterWorkDir');
const dataDir = join(workDir, 'toolgate-data');
const workers: Array<{ child: SpawnedChild; metricsUrl: string; identity: string }> = [];
let connection: Connection;
let client: ToolgateClient;
let startWorker: () => Promise<(typeof workers)[number]>;
let privateKeyFile: string;

const runDemo = promisify(execFile);

beforeAll(async () => {
  console.info(inject('clusterReport'));
  await mkdir(dataDir, { recursive: true });
  const keys = await loadOrCreateApprovalKeys(join(workDir, 'approval-keys'));
  privateKeyFile = keys.privateKeyFile;
  const replica = await serviceProcess(
    'toolgate-worker',
    { address },
    { dataDir, publicKeyFile: keys.publicKeyFile },
  );
  startWorker = async () => {
    // Each replica serves metrics on 9464 in its own container; here they share one host.
    const port = await findFreePort(0, '127.0.0.1');
    const child = await spawnNode([...replica.args, '--metrics-port', String(port), '--json'], '{', {
      env: replica.env,
      timeoutMs: 120_000,
    });
    const summary = JSON.parse(child.lines.find((line) => line.startsWith('{'))!) as { metricsUrl: string };
    const worker = { child, metricsUrl: summary.metricsUrl, identity: `${child.pid}@` };
    workers.push(worker);
    return worker;
  };
  for (let index = 0; index < replica.replicas; index++) await startWorker();
  expect(workers).toHaveLength(2);
  connection = await Connection.connect({ address });
  client = new ToolgateClient({
    client: new Client({ connection, namespace: inject('clusterNamespace') }),
    taskQueue: String(replica.env['TOOLGATE_TASK_QUEUE']),
    catalog: exampleCatalog,
    signer: createApprovalSigner(keys.privateKey),
  });
}, 300_000);

afterAll(async () => {
  for (const worker of workers) await worker.child.stop();
  await connection?.close();
});

async function wroteLines(): Promise<Map<string, number>> {
  const text = await readFile(exampleToolPaths(exampleDataDir(dataDir)).executionsFile, 'utf8').catch(
    () => '',
  );
  const counts = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line) continue;
    const entry = JSON.parse(line) as { tool?: string; callId?: string; event?: string };
    if (entry.tool === 'write_report' && entry.event === 'wrote') {
      counts.set(entry.callId!, (counts.get(entry.callId!) ?? 0) + 1);
    }
  }
  return counts;
}

/** The identities of the workers that ran these calls' tools, from their histories. */
async function workersThatRan(callIds: readonly string[]): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  await mapLimited(callIds, 10, async (callId) => {
    const history = await client.temporal.workflow.getHandle(callId).fetchHistory();
    for (const event of history.events ?? []) {
      const identity = event.activityTaskStartedEventAttributes?.identity;
      if (identity) counts.set(identity, (counts.get(identity) ?? 0) + 1);
    }
  });
  return counts;
}

const metricTotal = async (url: string, name: string) => {
  const text = await (await fetch(url)).text();
  return text
    .split('\n')
    .filter((line) => line.startsWith(`${name}{`) || line.startsWith(`${name} `))
    .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
};

describe('the compose stack, as real processes', () => {
  it('runs the demo: every case ends as expected', async () => {
    const { stdout } = await runDemo(
      process.execPath,
      ['--import', 'tsx', join(repositoryRoot, 'examples/demo.ts'), '--json', '--address', address],
      { cwd: repositoryRoot, timeout: 240_000, maxBuffer: 16 * 1024 * 1024 },
    );
    const summary = JSON.parse(stdout.trim().split('\n').at(-1)!) as {
      passed: number;
      total: number;
      results: Array<{ title: string; ok: boolean; status: string; reason: string | null }>;
    };
    expect(summary.results.filter((result) => !result.ok)).toEqual([]);
    expect(summary.passed).toBe(summary.total);
    console.info(`demo on the cluster: ${summary.passed}/${summary.total} cases as expected`);
  });

  it('serves 200 calls with both workers, each written once, and both count them on /metrics', async () => {
    const started = Date.now();
    const records = await mapLimited(
      Array.from({ length: 200 }, (_, index) => index),
      20,
      (index) =>
        client.call(
          {
            tool: 'write_report',
            input: { path: `load/${index}.md`, content: `report ${index}` },
            key: `load-${index}`,
          },
          agent,
        ),
    );
    const seconds = (Date.now() - started) / 1000;
    expect(records.filter((record) => record.status !== 'succeeded').map((record) => record.message)).toEqual(
      [],
    );
    const wrote = await wroteLines();
    expect(records.map((record) => wrote.get(record.callId) ?? 0)).toEqual(records.map(() => 1));
    const ran = await workersThatRan(records.map((record) => record.callId));
    for (const worker of workers) {
      expect([...ran.keys()].some((identity) => identity.startsWith(worker.identity))).toBe(true);
    }
    const counted = await waitFor(
      async () => {
        const totals = await Promise.all(
          workers.map((worker) => metricTotal(worker.metricsUrl, 'toolgate_calls_total')),
        );
        return totals.reduce((sum, value) => sum + value, 0) >= 200 ? totals : undefined;
      },
      { timeoutMs: 20_000, what: '200 calls counted on the workers’ /metrics' },
    );
    expect(counted.every((value) => value > 0)).toBe(true);
    console.info(
      `200 calls in ${seconds.toFixed(1)} s (${(200 / seconds).toFixed(0)}/s); tools run per worker ${JSON.stringify(Object.fromEntries(ran))}; toolgate_calls_total per worker ${JSON.stringify(counted)}`,
    );
  });

  it('keeps all of 100 labels added at once through both replicas on the shared volume', async () => {
    const labels = Array.from({ length: 100 }, (_, index) => `label-${index}`);
    const records = await mapLimited(labels, labels.length, (label) =>
      client.call(
        { tool: 'add_label', input: { item: 'shared-item', label }, key: `labels-${label}` },
        agent,
      ),
    );
    expect(records.filter((record) => record.status !== 'succeeded').map((record) => record.message)).toEqual(
      [],
    );
    const ran = await workersThatRan(records.map((record) => record.callId));
    expect(ran.size).toBe(2);
    const stored = JSON.parse(
      await readFile(exampleToolPaths(exampleDataDir(dataDir)).labelsFile, 'utf8'),
    ) as Record<string, string[]>;
    expect(stored['shared-item']).toEqual([...labels].sort());
    console.info(
      `labels on one volume: 100 of 100 kept; added per worker ${JSON.stringify(Object.fromEntries(ran))}`,
    );
  });

  it('loses nothing and runs nothing twice when a worker is SIGKILLed under load', async () => {
    const before = await wroteLines();
    const calls = Array.from({ length: 150 }, (_, index) => index);
    const running = mapLimited(calls, 30, (index) =>
      client.call(
        {
          tool: 'write_report',
          input: { path: `kill/${index}.md`, content: `report ${index}` },
          key: `kill-${index}`,
        },
        agent,
      ),
    );
    await waitFor(async () => ((await wroteLines()).size - before.size >= 40 ? true : undefined), {
      timeoutMs: 60_000,
      what: '40 writes before the kill',
    });
    const victim = workers.shift()!;
    await victim.child.kill();
    const killedAt = Date.now();
    // compose's `restart: unless-stopped` brings the replica back.
    await startWorker();
    const records: CallRecord[] = await running;
    const settledSeconds = (Date.now() - killedAt) / 1000;
    const wrote = await wroteLines();
    const outcomes = new Map<string, number>();
    for (const record of records) {
      const key = `${record.status}/${record.effect}/${record.reason ?? '-'}`;
      outcomes.set(key, (outcomes.get(key) ?? 0) + 1);
      const times = wrote.get(record.callId) ?? 0;
      // Nothing twice, ever; an applied effect was written once; a call that did nothing wrote nothing.
      expect(times).toBeLessThanOrEqual(1);
      if (record.effect === 'applied') expect(times).toBe(1);
      if (record.effect === 'none') expect(times).toBe(0);
    }
    // Nothing lost: every call closed, and only the ones the killed worker held can be in doubt.
    expect(records).toHaveLength(150);
    const inDoubt = records.filter((record) => record.status !== 'succeeded');
    for (const record of inDoubt) {
      expect(record).toMatchObject({ status: 'timeout', reason: 'OUTCOME_UNKNOWN', effect: 'unknown' });
    }
    console.info(
      `worker SIGKILL under load: 150 calls closed ${settledSeconds.toFixed(1)} s after the kill; outcomes ${JSON.stringify(Object.fromEntries(outcomes))}; written once where applied, never twice`,
    );
  });

  it('runs the inbox service, the one holder of the private key: a signed-in approver decides, a worker runs the transfer', async () => {
    // The inbox's own volume, with the private key mounted into it as compose does; the workers'
    // data folder has no private key at all.
    const inboxData = join(workDir, 'inbox-data');
    await mkdir(join(inboxData, 'keys'), { recursive: true });
    await copyFile(privateKeyFile, join(inboxData, 'keys', 'approval-private.pem'));
    expect(existsSync(join(dataDir, 'keys', 'approval-private.pem'))).toBe(false);
    const service = await serviceProcess('toolgate-inbox', { address }, { dataDir: inboxData });
    const port = await findFreePort(0, '127.0.0.1');
    const args = service.args.map((arg, index, all) => (all[index - 1] === '--port' ? String(port) : arg));
    const inbox = await spawnNode([...args, '--json'], '{', { env: service.env, timeoutMs: 60_000 });
    try {
      const started = JSON.parse(inbox.lines.find((line) => line.startsWith('{'))!) as {
        url: string;
        created?: { name: string; token: string };
      };
      expect(started.created?.name).toBe('alice');
      const transfer = await client.start(
        {
          tool: 'transfer_funds',
          input: {
            reference: 'CLUSTER-1',
            from: 'ACC-1',
            to: 'ACC-2',
            amountCents: 4200,
            currency: 'EUR',
            memo: null,
          },
          key: 'cluster-transfer-1',
        },
        agent,
      );
      const waiting = await waitFor(
        async () => {
          const record = await client.get(transfer.callId);
          return record?.status === 'awaiting_approval' ? record : undefined;
        },
        { what: 'the transfer to wait for approval' },
      );
      const signIn = await fetch(`${started.url}/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', origin: started.url },
        body: new URLSearchParams({ token: started.created!.token }),
        redirect: 'manual',
      });
      expect(signIn.status).toBe(303);
      const cookie = signIn.headers.get('set-cookie')!.split(';')[0]!;
      const session = (await (await fetch(`${started.url}/api/session`, { headers: { cookie } })).json()) as {
        approver: string;
        csrfToken: string;
      };
      expect(session.approver).toBe('alice');
      const decided = await fetch(`${started.url}/api/decisions`, {
        method: 'POST',
        headers: {
          cookie,
          origin: started.url,
          'content-type': 'application/json',
          'x-csrf-token': session.csrfToken,
        },
        body: JSON.stringify({ callId: transfer.callId, runId: waiting.runId, decision: 'approve' }),
      });
      expect(decided.status).toBe(200);
      const record = await client.result(transfer.callId);
      expect(record).toMatchObject({ status: 'succeeded', effect: 'applied' });
      const ledger = await readFile(exampleToolPaths(exampleDataDir(dataDir)).ledgerFile, 'utf8');
      expect(ledger.split('\n').filter((line) => line.includes('CLUSTER-1'))).toHaveLength(1);
      console.info(
        `inbox service: alice approved ${transfer.callId} through ${started.url}; the worker ran it once`,
      );
    } finally {
      await inbox.stop();
    }
  });

  it('cancels 100 running tools at once: each cancel() answers within 2 s, no tool runs on', async () => {
    const executionLines = async () =>
      (await readFile(exampleToolPaths(exampleDataDir(dataDir)).executionsFile, 'utf8'))
        .split('\n')
        .filter((line) => line.length > 0)
        .map((line) => JSON.parse(line) as Record<string, unknown>);
    const p99s: number[] = [];
    for (const round of ['round A', 'round B']) {
      const result = await cancelRound(
        {
          client,
          lines: executionLines,
          countHeartbeats: () => heartbeatRequests(inject('clusterMetricsUrl')),
        },
        `on the cluster, ${round}`,
      );
      expect(Math.max(...result.returned)).toBeLessThanOrEqual(2_000);
      expect(result.toAbort.filter((delay) => Number.isNaN(delay))).toEqual([]);
      expect(result.finished).toEqual([]);
      expect(result.records.map((record) => `${record.status}/${record.effect}`)).toEqual(
        result.records.map(() => 'cancelled/none'),
      );
      p99s.push(quantile(result.toAbort, 0.99));
    }
    console.info(
      `mass cancel on the cluster: cancel() → tool abort p99 ${p99s.map((ms) => `${ms.toFixed(0)} ms`).join(', ')}`,
    );
  });
});
