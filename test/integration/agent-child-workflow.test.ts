import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, type Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createToolCallLookupActivities } from '../../activities/lookup-tool-call.ts';
import { exampleCatalog } from '../../examples/contracts.ts';
import { createExampleActivities, createExampleTools, type ExampleTools } from '../../examples/tools.ts';
import { createApprovalSigner, loadOrCreateApprovalKeys } from '../../src/client/approval-signer.ts';
import { type CallRequest, ToolgateClient } from '../../src/client/toolgate-client.ts';
import type { CallContext } from '../../src/contracts/call-record.ts';
import { bundleToolgateWorkflows, createWorker } from '../../src/worker/create-worker.ts';
import { installRuntimeLogging } from '../../src/worker/runtime-logging.ts';
import type { ChildCallOptions, ChildCallOutcome } from '../../workflows/child-call.ts';

const agent: CallContext = { tenant: 'acme', principal: 'agent-7', principalKind: 'agent' };
const workflowsPath = fileURLToPath(new URL('../../examples/agent/workflows.ts', import.meta.url));

describe('tool calls as child workflows (toolgate/workflow)', () => {
  let connection: Connection;
  let nativeConnection: NativeConnection;
  let temporal: Client;
  let client: ToolgateClient;
  let worker: Worker;
  let running: Promise<void>;
  let tools: ExampleTools;
  let dataDir: string;
  const taskQueue = `agent-child-${randomUUID()}`;

  beforeAll(async () => {
    installRuntimeLogging();
    const address = inject('temporalAddress');
    dataDir = await mkdtemp(join(tmpdir(), 'toolgate-child-'));
    tools = createExampleTools(dataDir);
    await writeFile(tools.paths.configFile, JSON.stringify({ region: 'eu-west' }));
    const keys = await loadOrCreateApprovalKeys(join(dataDir, 'keys'));
    connection = await Connection.connect({ address });
    temporal = new Client({ connection });
    client = new ToolgateClient({
      client: temporal,
      taskQueue,
      catalog: exampleCatalog,
      signer: createApprovalSigner(keys.privateKey),
    });
    nativeConnection = await NativeConnection.connect({ address });
    const activities = {
      ...createExampleActivities(tools, {
        approvalPublicKeys: [keys.publicKey],
      }),
      ...createToolCallLookupActivities(temporal),
    };
    worker = await createWorker({
      connection: nativeConnection,
      taskQueue,
      activities,
      workflowBundle: await bundleToolgateWorkflows(workflowsPath),
    });
    running = worker.run();
  });

  afterAll(async () => {
    if (worker?.getState() === 'RUNNING') worker.shutdown();
    await running;
    await nativeConnection?.close();
    await connection?.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  const viaChild = (
    request: CallRequest,
    options: Pick<ChildCallOptions, 'duplicates' | 'duplicatePollMs'> = {},
  ) =>
    temporal.workflow.execute('toolCallChild', {
      workflowId: `agent-${randomUUID()}`,
      taskQueue,
      args: [request, agent, { duplicatePollMs: { initial: 200, maximum: 500 }, ...options }],
    }) as Promise<ChildCallOutcome>;

  it('runs a readonly call with the same record as call()', async () => {
    const request = { tool: 'read_config', input: { name: 'region' } };
    const [child, direct] = await Promise.all([viaChild(request), client.call(request, agent)]);
    expect(child.disposition).toBe('started');
    expect(child.record).toMatchObject({ status: 'succeeded', output: { name: 'region', value: 'eu-west' } });
    expect(child.record?.output).toEqual(direct.output);
    // The child is a real toolgate call: the client can read its record under the same ID.
    expect((await client.get(child.callId))?.status).toBe('succeeded');
  });

  it.each([
    ['an unknown tool', { tool: 'shell_exec', input: { command: 'ls' } }, 'NOT_ALLOWED'],
    [
      'an irreversible tool without a key',
      { tool: 'write_report', input: { path: 'a.md', content: 'x' } },
      'KEY_REQUIRED',
    ],
    ['invalid arguments', { tool: 'read_config', input: { name: '../etc' } }, 'INVALID_INPUT'],
  ] as const)('denies %s exactly like call()', async (_label, request, reason) => {
    const [child, direct] = await Promise.all([viaChild(request), client.call(request, agent)]);
    expect(direct).toMatchObject({ status: 'denied', reason, effect: 'none' });
    expect(child.record).toMatchObject({ status: 'denied', reason, effect: 'none', message: direct.message });
  });

  it('refuses a tool name longer than any tool, like call(), without starting a child', async () => {
    const request = { tool: `read_config_${'x'.repeat(5_000)}`, input: { name: 'region' } };
    const workflowId = `agent-${randomUUID()}`;
    const child = (await temporal.workflow.execute('toolCallChild', {
      workflowId,
      taskQueue,
      args: [request, agent],
    })) as ChildCallOutcome;
    const direct = await client.call(request, agent);
    expect(direct).toMatchObject({ status: 'denied', reason: 'NOT_ALLOWED', effect: 'none' });
    expect(child).toMatchObject({ callId: '', disposition: 'refused' });
    expect(child.record).toMatchObject({
      status: 'denied',
      reason: 'NOT_ALLOWED',
      effect: 'none',
      message: direct.message,
      tool: direct.tool,
    });
    expect(child.record?.message).toMatch(/^No tool has a name this long \(5012 characters/);
    const { events } = await temporal.workflow.getHandle(workflowId).fetchHistory();
    expect(events?.filter((event) => event.startChildWorkflowExecutionInitiatedEventAttributes)).toEqual([]);
  });

  it('returns the stored record for a closed duplicate, and KEY_MISMATCH for other arguments', async () => {
    const key = `report-${randomUUID().slice(0, 8)}`;
    const request = { tool: 'write_report', input: { path: `${key}.md`, content: 'first' }, key };
    const first = await client.call(request, agent);
    expect(first.status).toBe('succeeded');

    const again = await viaChild(request);
    expect(again.disposition).toBe('existing');
    expect(again.callId).toBe(first.callId);
    expect(again.record?.runId).toBe(first.runId);

    const mismatch = await viaChild({ ...request, input: { ...request.input, content: 'second' } });
    const directMismatch = await client.start(
      { ...request, input: { ...request.input, content: 'second' } },
      agent,
    );
    expect(mismatch.disposition).toBe('refused');
    expect(mismatch.record?.reason).toBe('KEY_MISMATCH');
    expect(directMismatch.record?.reason).toBe('KEY_MISMATCH');

    const writes = (await readLines(tools.paths.executionsFile)).filter(
      (line) => line['tool'] === 'write_report',
    );
    expect(writes.filter((line) => line['callId'] === first.callId)).toHaveLength(1);
  });

  it('waits on a running duplicate and ends with one side effect, like USE_EXISTING does for call()', async () => {
    const reference = `R-${randomUUID().slice(0, 8)}`;
    const input = { reference, from: 'AA', to: 'BB', amountCents: 700, currency: 'EUR', memo: null };
    const started = await client.start({ tool: 'transfer_funds', input }, agent);
    expect(started.disposition).toBe('started');
    const children = [
      viaChild({ tool: 'transfer_funds', input }),
      viaChild({ tool: 'transfer_funds', input }),
    ];
    const reported = await viaChild({ tool: 'transfer_funds', input }, { duplicates: 'report' });
    expect(reported).toMatchObject({ disposition: 'duplicate', callId: started.callId });
    expect(reported.record).toBeUndefined();

    await waitUntil(async () => (await client.get(started.callId))?.status === 'awaiting_approval');
    const decision = await client.approve(started.callId, { approver: 'alice' });
    expect(decision.accepted).toBe(true);

    const outcomes = await Promise.all(children);
    for (const outcome of outcomes) {
      expect(outcome.disposition).toBe('attached');
      expect(outcome.callId).toBe(started.callId);
      expect(outcome.record).toMatchObject({ status: 'succeeded', effect: 'applied' });
    }
    const ledger = (await readLines(tools.paths.ledgerFile)).filter(
      (line) => line['reference'] === reference,
    );
    expect(ledger).toHaveLength(1);
  });

  it('stays with the run it attached to: a rejected call restarted with new arguments is not its outcome', async () => {
    const reference = `R-${randomUUID().slice(0, 8)}`;
    const input = (amountCents: number) => ({
      reference,
      from: 'AA',
      to: 'BB',
      amountCents,
      currency: 'EUR',
      memo: null,
    });
    const first = await client.start({ tool: 'transfer_funds', input: input(700) }, agent);
    await waitUntil(async () => (await client.get(first.callId))?.status === 'awaiting_approval');
    const firstRun = (await client.get(first.callId))!.runId;
    // The agent attaches, then polls every 4 s: long enough for the run to change in between.
    const agentId = `agent-${randomUUID()}`;
    const child = await temporal.workflow.start('toolCallChild', {
      workflowId: agentId,
      taskQueue,
      args: [
        { tool: 'transfer_funds', input: input(700) },
        agent,
        { duplicatePollMs: { initial: 4_000, maximum: 4_000 } },
      ],
    });
    // Attached: the lookup that matched the fingerprint is in the agent's history.
    await waitUntil(async () =>
      ((await child.fetchHistory()).events ?? []).some((event) => event.markerRecordedEventAttributes),
    );

    // The call is rejected, which frees its key, and the same key asks for 100 times the amount.
    expect((await client.reject(first.callId, { approver: 'alice', comment: 'wrong amount' })).accepted).toBe(
      true,
    );
    const second = await client.start({ tool: 'transfer_funds', input: input(70_000) }, agent);
    expect(second).toMatchObject({ callId: first.callId, disposition: 'started' });
    expect(second.runId).not.toBe(firstRun);
    try {
      // The attached run closed at the rejection: the next poll, 4 s on, ends the wait. An agent
      // that followed the new run instead would still be waiting.
      const outcome = (await Promise.race([
        child.result(),
        new Promise((_, reject) =>
          setTimeout(() => reject(new Error('the agent is still waiting after 20 s')), 20_000),
        ),
      ])) as ChildCallOutcome;
      expect(outcome.disposition).toBe('attached');
      expect(outcome.record).toMatchObject({
        runId: firstRun,
        status: 'denied',
        reason: 'APPROVAL_REJECTED',
        effect: 'none',
        input: { amountCents: 700 },
      });
    } finally {
      await client.reject(first.callId, { approver: 'alice', comment: 'not this either' });
    }
    const ledger = (await readLines(tools.paths.ledgerFile)).filter(
      (line) => line['reference'] === reference,
    );
    expect(ledger).toHaveLength(0);
  });
});

async function waitUntil(probe: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await probe().catch(() => false)) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error('condition not reached in time');
}

async function readLines(file: string): Promise<Array<Record<string, unknown>>> {
  const { readFile } = await import('node:fs/promises');
  try {
    return (await readFile(file, 'utf8'))
      .split('\n')
      .filter((line) => line.length > 0)
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  } catch {
    return [];
  }
}
