import { randomUUID } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ToolgateClient } from '../src/client/toolgate-client.ts';
import type { CallContext, CallRecord } from '../src/contracts/call-record.ts';
import { startEmbedded } from '../src/dev/embedded.ts';
import { exampleAllowlist } from './contracts.ts';
import { createExampleToolSet, exampleDataDir } from './tool-set.ts';
import { exampleToolPaths } from './tools.ts';

/**
 * `npm run demo`: every path through the gates against the embedded default, printed as a
 * transcript. Each case checks its final status, reason and effect, and the run exits non-zero if
 * any case ends otherwise.
 */
interface Expected {
  readonly status: CallRecord['status'];
  readonly reason?: CallRecord['reason'];
  readonly effect: CallRecord['effect'];
}

interface DemoCase {
  readonly title: string;
  readonly expected: Expected;
  run(client: ToolgateClient): Promise<{ record: CallRecord; notes?: string[] }>;
}

const agent: CallContext = { tenant: 'demo', principal: 'agent-42', principalKind: 'agent' };
const transfer = (reference: string, amountCents = 4200) => ({
  tool: 'transfer_funds',
  input: { reference, from: 'ACC-100', to: 'ACC-200', amountCents, currency: 'EUR' as const, memo: 'demo' },
});

async function waitForStatus(
  client: ToolgateClient,
  callId: string,
  status: CallRecord['status'],
): Promise<CallRecord> {
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline) {
    const record = await client.get(callId).catch(() => undefined);
    if (record?.status === status) return record;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`call ${callId} did not reach ${status} within 15 s`);
}

const cases: DemoCase[] = [
  {
    title: 'A normal readonly call (read_config)',
    expected: { status: 'succeeded', effect: 'none' },
    run: async (client) => ({
      record: await client.call({ tool: 'read_config', input: { name: 'region' } }, agent),
    }),
  },
  {
    title: 'A timeout: stubborn_search ignores its signal, the executor ends it at 1 s',
    expected: { status: 'timeout', reason: 'TIMEOUT', effect: 'none' },
    run: async (client) => ({
      record: await client.call(
        { tool: 'stubborn_search', input: { query: 'legacy', delayMs: 5_000 } },
        agent,
      ),
    }),
  },
  {
    title: 'A caller cancel: slow_search is cancelled while it runs',
    expected: { status: 'cancelled', reason: 'CANCELLED', effect: 'none' },
    run: async (client) => {
      const started = await client.start(
        { tool: 'slow_search', input: { query: 'archive', delayMs: 30_000 } },
        agent,
      );
      await waitForStatus(client, started.callId, 'running');
      await new Promise((resolve) => setTimeout(resolve, 300));
      return { record: await client.cancelAndWait(started.callId) };
    },
  },
  {
    title: 'An allowlist denial: delete_everything is registered but not allowed',
    expected: { status: 'denied', reason: 'NOT_ALLOWED', effect: 'none' },
    run: async (client) => ({
      record: await client.call(
        { tool: 'delete_everything', input: { confirm: true }, key: 'wipe-1' },
        agent,
      ),
    }),
  },
  {
    title: 'Idempotent dedup: the same write_report sent twice with one key',
    expected: { status: 'succeeded', effect: 'applied' },
    run: async (client) => {
      const request = {
        tool: 'write_report',
        input: { path: 'weekly/2026-48.md', content: '# Week 48\nAll green.\n' },
        key: 'weekly-48',
      };
      const first = await client.call(request, agent);
      const second = await client.start(request, agent);
      const sameRecord = JSON.stringify(second.record) === JSON.stringify(first);
      return {
        record: first,
        notes: [
          `second send: disposition=${second.disposition}, same record returned: ${sameRecord ? 'yes' : 'NO'}`,
          ...(second.disposition === 'existing' && sameRecord
            ? []
            : ['UNEXPECTED: the duplicate was not deduplicated']),
        ],
      };
    },
  },
  {
    title: 'A path-escape denial: write_report to ../../etc/passwd',
    expected: { status: 'denied', reason: 'INVALID_INPUT', effect: 'none' },
    run: async (client) => ({
      record: await client.call(
        { tool: 'write_report', input: { path: '../../etc/passwd', content: 'x' }, key: 'escape-1' },
        agent,
      ),
    }),
  },
  {
    title: 'Approval granted: alice approves a transfer',
    expected: { status: 'succeeded', effect: 'applied' },
    run: async (client) => {
      const started = await client.start(transfer('DEMO-APPROVE'), agent);
      const waiting = await waitForStatus(client, started.callId, 'awaiting_approval');
      const outcome = await client.approve(started.callId, { approver: 'alice', comment: 'looks right' });
      return {
        record: await client.result(started.callId),
        notes: [
          `preview shown to the approver: ${waiting.approval?.preview}`,
          `approve() accepted: ${outcome.accepted}`,
        ],
      };
    },
  },
  {
    title: 'Approval rejected: alice rejects a transfer',
    expected: { status: 'denied', reason: 'APPROVAL_REJECTED', effect: 'none' },
    run: async (client) => {
      const started = await client.start(transfer('DEMO-REJECT', 990_000), agent);
      await waitForStatus(client, started.callId, 'awaiting_approval');
      const outcome = await client.reject(started.callId, { approver: 'alice', comment: 'amount too high' });
      return {
        record: await client.result(started.callId),
        notes: [`reject() accepted: ${outcome.accepted}`],
      };
    },
  },
  {
    title: 'Approval expired: nobody answers within the (demo-shortened) 3 s window',
    expected: { status: 'denied', reason: 'APPROVAL_EXPIRED', effect: 'none' },
    run: async (client) => ({ record: await client.call(transfer('DEMO-EXPIRE'), agent) }),
  },
  {
    title: 'KEY_MISMATCH: a reused key with different arguments',
    expected: { status: 'denied', reason: 'KEY_MISMATCH', effect: 'none' },
    run: async (client) => {
      await client.call(
        { tool: 'write_report', input: { path: 'memo.md', content: 'first' }, key: 'memo-1' },
        agent,
      );
      return {
        record: await client.call(
          { tool: 'write_report', input: { path: 'memo.md', content: 'second' }, key: 'memo-1' },
          agent,
        ),
      };
    },
  },
  {
    title: 'An irreversible call without a key',
    expected: { status: 'denied', reason: 'KEY_REQUIRED', effect: 'none' },
    run: async (client) => ({
      record: await client.call({ tool: 'write_report', input: { path: 'nokey.md', content: 'x' } }, agent),
    }),
  },
];

function matches(record: CallRecord, expected: Expected): boolean {
  return (
    record.status === expected.status &&
    record.effect === expected.effect &&
    record.reason === expected.reason
  );
}

function describeRecord(record: CallRecord): string[] {
  const startedAt = Date.parse(record.transitions[0]?.at ?? new Date().toISOString());
  const path = record.transitions
    .map((transition) => `${transition.status} (+${Date.parse(transition.at) - startedAt} ms)`)
    .join(' → ');
  return [
    `  call     ${record.callId || '(refused before a workflow started)'}`,
    `  path     ${path}`,
    `  result   status=${record.status} reason=${record.reason ?? '-'} effect=${record.effect} attempts=${record.attempts}`,
    ...(record.message ? [`  message  ${record.message}`] : []),
  ];
}

/**
 * `--address host:port` joins that cluster (on a task queue of its own) instead of starting a dev
 * server: `npm run test:cluster` runs the demo against the compose stack this way.
 */
function clusterAddress(): string | undefined {
  const at = process.argv.indexOf('--address');
  if (at < 0) return undefined;
  const address = process.argv[at + 1];
  if (!address?.includes(':')) throw new Error('--address needs host:port, e.g. --address 127.0.0.1:7233');
  return address;
}

function startDemo(address: string | undefined, dataDir: string, json: boolean) {
  return startEmbedded({
    // Only the demo shortens the approval window, so the expiry case finishes quickly.
    tools: createExampleToolSet({
      policy: { allow: exampleAllowlist, approvals: { transfer_funds: { expiresAfterMs: 3_000 } } },
    }),
    dataDir,
    ...(address
      ? { cluster: { address, namespace: 'default' }, taskQueue: `toolgate-demo-${randomUUID()}` }
      : { grpcPort: 0, uiPort: 0, headless: true }),
    onProgress: (line) => {
      if (!json) process.stderr.write(`${line}\n`);
    },
  });
}

async function main(): Promise<number> {
  const json = process.argv.includes('--json');
  const keep = process.argv.includes('--keep');
  const address = clusterAddress();
  const dataDir = await mkdtemp(join(tmpdir(), 'toolgate-demo-'));
  const say = (line = '') => {
    if (!json) process.stdout.write(`${line}\n`);
  };
  say(
    address
      ? `toolgate demo: joining ${address} with a worker…`
      : 'toolgate demo: starting the embedded Temporal dev server and a worker…',
  );
  const embedded = await startDemo(address, dataDir, json);
  const results: Array<{ title: string; ok: boolean; expected: Expected; record: CallRecord }> = [];
  try {
    say(`Temporal at ${embedded.address}; data in ${dataDir}\n`);
    for (const [index, demoCase] of cases.entries()) {
      say(`${index + 1}. ${demoCase.title}`);
      let ok = false;
      try {
        const { record, notes = [] } = await demoCase.run(embedded.client);
        ok = matches(record, demoCase.expected) && !notes.some((note) => note.startsWith('UNEXPECTED'));
        for (const line of describeRecord(record)) say(line);
        for (const note of notes) say(`  note     ${note}`);
        results.push({ title: demoCase.title, ok, expected: demoCase.expected, record });
      } catch (error) {
        say(`  error    ${error instanceof Error ? error.message : String(error)}`);
      }
      const expected = demoCase.expected;
      say(
        `  ${ok ? '✓ as expected' : '✗ NOT as expected'} (expected status=${expected.status} reason=${expected.reason ?? '-'} effect=${expected.effect})\n`,
      );
    }
    const reports = await readdir(exampleToolPaths(exampleDataDir(dataDir)).reportsDir, {
      recursive: true,
    }).catch(() => []);
    const ledger = await readFile(exampleToolPaths(exampleDataDir(dataDir)).ledgerFile, 'utf8').catch(
      () => '',
    );
    const transfers = ledger.split('\n').filter((line) => line.length > 0).length;
    say(
      `Side effects on disk: ${reports.filter((name) => String(name).endsWith('.md')).length} report files, ${transfers} ledger line(s).`,
    );
  } finally {
    await embedded.stop();
    if (!keep) await rm(dataDir, { recursive: true, force: true });
  }
  const passed = results.filter((result) => result.ok).length;
  if (json) {
    process.stdout.write(
      `${JSON.stringify({ passed, total: cases.length, results: results.map(({ title, ok, record }) => ({ title, ok, status: record.status, reason: record.reason ?? null, effect: record.effect })) })}\n`,
    );
  } else {
    say(`Summary: ${passed}/${cases.length} cases ended as expected.`);
  }
  return passed === cases.length ? 0 : 1;
}

process.exitCode = await main();
