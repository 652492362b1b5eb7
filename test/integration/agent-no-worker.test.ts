import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { exampleCatalog } from '../../examples/contracts.ts';
import { awaitPendingCall, runOneToolCall } from '../../src/agent/run-tool-calls.ts';
import { NoWorkerAnsweredError } from '../../src/client/toolgate-client.ts';
import { exampleEnv } from '../support/cli-runner.ts';
import { agent, createHarness, type Harness } from '../support/harness.ts';
import { waitFor } from '../support/wait.ts';

const binary = fileURLToPath(new URL('../../bin/toolgate.js', import.meta.url));

/**
 * The agent adapters and the MCP server on a task queue that no worker polls: with a bound they
 * answer the model "pending, no worker yet" instead of hanging, and the call stays open and runs
 * once a worker starts.
 */
describe('agent adapters when no worker serves the task queue', () => {
  let harness: Harness;
  const children: ChildProcessWithoutNullStreams[] = [];

  beforeAll(async () => {
    harness = await createHarness({ startWorker: false });
  }, 120_000);
  afterAll(async () => {
    for (const child of children) {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        process.kill(child.pid!, 'SIGKILL');
        await exited;
      }
    }
    await harness?.close();
  });

  it('runOneToolCall answers pending within noWorkerAfterMs; the call stays open and runs when a worker starts', async () => {
    const errors: unknown[] = [];
    const startedAt = Date.now();
    const outcome = await runOneToolCall(
      { id: 'toolu_orphan', name: 'read_config', input: { name: 'region' } },
      {
        client: harness.client,
        context: agent,
        catalog: exampleCatalog,
        noWorkerAfterMs: 1_500,
        onError: (error) => errors.push(error),
      },
    );
    expect(Date.now() - startedAt).toBeLessThan(15_000);
    expect(outcome).toMatchObject({ id: 'toolu_orphan', state: 'pending', isError: false });
    expect(outcome.text).toMatch(/^Pending: this call was accepted, but no worker is running it yet\./);
    expect(outcome.text).toContain(`Call ID: ${outcome.callId}.`);
    expect(outcome.callId).toMatch(/^toolgate\/acme\/read_config\//);
    expect(outcome.runId).toBeTruthy();
    expect(errors).toHaveLength(1);
    expect(errors[0]).toBeInstanceOf(NoWorkerAnsweredError);
    const handle = harness.temporal.workflow.getHandle(outcome.callId!, outcome.runId);
    expect((await handle.describe()).status.name).toBe('RUNNING');

    // Once a worker polls the queue, the same call (not a new one) runs and closes.
    await harness.startWorker();
    try {
      const final = await awaitPendingCall(harness.client, outcome);
      expect(final).toMatchObject({ state: 'closed', callId: outcome.callId, runId: outcome.runId });
      expect(final.text).toBe('{"name":"region","value":"eu-west"}');
    } finally {
      await harness.stopWorker();
    }
  }, 90_000);

  it('return-pending for an approval tool: the poll is bounded too, and answers pending rather than a retryable failure', async () => {
    // The worker of the previous test polled this queue lately: use a queue none ever polled.
    const orphan = await createHarness({ startWorker: false });
    try {
      const startedAt = Date.now();
      const outcome = await runOneToolCall(
        {
          id: 'toolu_transfer',
          name: 'transfer_funds',
          input: {
            reference: `orphan-${randomUUID().slice(0, 8)}`,
            from: 'ACC-1',
            to: 'ACC-2',
            amountCents: 100,
            currency: 'EUR',
            memo: null,
          },
        },
        { client: orphan.client, context: agent, catalog: exampleCatalog, noWorkerAfterMs: 2_000 },
      );
      const elapsedMs = Date.now() - startedAt;
      expect(elapsedMs).toBeGreaterThanOrEqual(2_000);
      expect(elapsedMs).toBeLessThan(15_000);
      expect(outcome).toMatchObject({ state: 'pending', isError: false });
      expect(outcome.record).toBeUndefined();
      expect(outcome.text).toContain('no worker is running it yet');
      expect(outcome.text).toContain('Do not call the tool again');
      const description = await orphan.temporal.workflow.getHandle(outcome.callId!, outcome.runId).describe();
      expect(description.status.name).toBe('RUNNING');
      await orphan.temporal.workflow.getHandle(outcome.callId!).terminate('test cleanup');
    } finally {
      await orphan.close();
    }
  }, 60_000);

  it('toolgate mcp --worker-wait: tools/call is answered pending within the bound, with a warning, and the call stays open', async () => {
    const orphan = await createHarness({ startWorker: false });
    try {
      const child = spawn(process.execPath, [binary, 'mcp', '--tenant', 'mcp-orphan', '--worker-wait', '2'], {
        env: {
          ...exampleEnv(),
          TEMPORAL_ADDRESS: inject('temporalAddress'),
          TOOLGATE_TASK_QUEUE: orphan.taskQueue,
          TOOLGATE_DATA_DIR: orphan.dataDir,
        },
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      children.push(child);
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => {
        stdout += chunk.toString('utf8');
      });
      child.stderr.on('data', (chunk: Buffer) => {
        stderr += chunk.toString('utf8');
      });
      const startedAt = Date.now();
      child.stdin.write(
        `${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'read_config', arguments: { name: 'region' } } })}\n`,
      );
      await waitFor(() => stdout.includes('\n') || undefined, { timeoutMs: 30_000 });
      expect(Date.now() - startedAt).toBeLessThan(30_000);
      const answer = JSON.parse(stdout.slice(0, stdout.indexOf('\n'))) as {
        id: number;
        result: { isError: boolean; content: Array<{ text: string }>; _meta: Record<string, string> };
      };
      expect(answer.id).toBe(1);
      expect(answer.result.isError).toBe(false);
      expect(answer.result.content[0]!.text).toMatch(/^Pending: this call was accepted, but no worker/);
      expect(answer.result._meta['toolgate/state']).toBe('pending');
      const callId = answer.result._meta['toolgate/callId']!;
      const runId = answer.result._meta['toolgate/runId']!;
      expect(callId).toMatch(/^toolgate\/mcp-orphan\/read_config\//);
      expect(runId).toBeTruthy();
      await waitFor(() => stderr.includes(`No worker picked up ${callId} within 2 s`) || undefined, {
        timeoutMs: 5_000,
      });
      expect(stderr).not.toContain('could not run');
      const handle = orphan.temporal.workflow.getHandle(callId, runId);
      expect((await handle.describe()).status.name).toBe('RUNNING');
      child.stdin.end();
      await waitFor(() => child.exitCode !== null || undefined, { timeoutMs: 10_000 });
      expect(child.exitCode).toBe(0);
      await handle.terminate('test cleanup');
    } finally {
      await orphan.close();
    }
  }, 60_000);

  it('toolgate mcp refuses a --worker-wait that is not a whole number of seconds from 1 to 86400', async () => {
    for (const value of ['0', '1.5', 'soon']) {
      const child = spawn(process.execPath, [binary, 'mcp', '--worker-wait', value], {
        env: exampleEnv({ TEMPORAL_ADDRESS: inject('temporalAddress') }),
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      children.push(child);
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => {
        stderr += chunk.toString('utf8');
      });
      const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
      expect(code, stderr).not.toBe(0);
      expect(stderr).toContain('--worker-wait must be a whole number of seconds from 1 to 86400.');
    }
  }, 60_000);
});
