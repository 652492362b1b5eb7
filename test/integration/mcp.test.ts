import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import packageJson from '../../package.json' with { type: 'json' };
import { exampleEnv } from '../support/cli-runner.ts';
import { createHarness, type Harness } from '../support/harness.ts';
import { waitFor } from '../support/wait.ts';

const binary = fileURLToPath(new URL('../../bin/toolgate.js', import.meta.url));

type Message = {
  readonly jsonrpc: string;
  readonly id?: unknown;
  readonly result?: Record<string, unknown>;
  readonly error?: { readonly code: number; readonly message: string };
};
type ToolResult = {
  readonly content: Array<{ readonly type: string; readonly text: string }>;
  readonly isError: boolean;
  readonly _meta?: Record<string, string>;
};

/** `toolgate mcp` as a child process, spoken to over its stdin and stdout. */
class McpProcess {
  readonly child: ChildProcessWithoutNullStreams;
  readonly stdoutLines: string[] = [];
  stderr = '';
  readonly exited: Promise<number | null>;
  readonly #answers = new Map<unknown, Message>();
  readonly #waiters = new Map<unknown, (message: Message) => void>();

  constructor(args: readonly string[], env: Readonly<Record<string, string>>) {
    this.child = spawn(process.execPath, [binary, 'mcp', ...args], {
      env: exampleEnv(env),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    this.exited = new Promise((resolve) => this.child.once('exit', (code) => resolve(code)));
    let buffered = '';
    this.child.stdout.on('data', (chunk: Buffer) => {
      buffered += chunk.toString('utf8');
      for (let newline = buffered.indexOf('\n'); newline !== -1; newline = buffered.indexOf('\n')) {
        const line = buffered.slice(0, newline);
        buffered = buffered.slice(newline + 1);
        this.stdoutLines.push(line);
        // Anything on stdout that is not a JSON-RPC message breaks the client: the test says so.
        const message = JSON.parse(line) as Message;
        const waiter = this.#waiters.get(message.id);
        if (waiter) {
          this.#waiters.delete(message.id);
          waiter(message);
        } else {
          this.#answers.set(message.id, message);
        }
      }
    });
    this.child.stderr.on('data', (chunk: Buffer) => {
      this.stderr = (this.stderr + chunk.toString('utf8')).slice(-8_000);
    });
  }

  send(message: Record<string, unknown>): void {
    this.child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', ...message })}\n`);
  }

  /** Sends a request and waits for the answer with its id. */
  request(id: string | number, method: string, params?: unknown, timeoutMs = 60_000): Promise<Message> {
    const answer = this.answer(id, timeoutMs);
    this.send({ id, method, ...(params === undefined ? {} : { params }) });
    return answer;
  }

  answer(id: unknown, timeoutMs = 60_000): Promise<Message> {
    const ready = this.#answers.get(id);
    if (ready) {
      this.#answers.delete(id);
      return Promise.resolve(ready);
    }
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiters.delete(id);
        reject(new Error(`no answer to ${String(id)} within ${timeoutMs} ms; stderr: ${this.stderr}`));
      }, timeoutMs);
      this.#waiters.set(id, (message) => {
        clearTimeout(timer);
        resolve(message);
      });
    });
  }

  async callTool(id: string | number, name: string, args: unknown): Promise<ToolResult> {
    const answer = await this.request(id, 'tools/call', { name, arguments: args });
    expect(answer.error).toBeUndefined();
    return answer.result as unknown as ToolResult;
  }

  /** SIGTERM by PID, then SIGKILL after 5 s. */
  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    process.kill(this.child.pid!, 'SIGTERM');
    const timer = setTimeout(() => {
      if (this.child.exitCode === null && this.child.signalCode === null)
        process.kill(this.child.pid!, 'SIGKILL');
    }, 5_000);
    await this.exited;
    clearTimeout(timer);
  }
}

/**
 * A harness (worker on its own task queue, config region eu-west) and `toolgate mcp` for it, with
 * these extra flags, for the tests of one describe block.
 */
function useMcpServer(
  tenant: string,
  flags: readonly string[],
  started: (parts: { harness: Harness; server: McpProcess }) => void,
): void {
  let parts: { harness: Harness; server: McpProcess } | undefined;
  beforeAll(async () => {
    const harness = await createHarness({ config: { region: 'eu-west' } });
    const server = new McpProcess(['--tenant', tenant, '--principal', 'mcp-test-agent', ...flags], {
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TOOLGATE_TASK_QUEUE: harness.taskQueue,
      TOOLGATE_DATA_DIR: harness.dataDir,
    });
    parts = { harness, server };
    started(parts);
  });
  afterAll(async () => {
    await parts?.server.stop();
    await parts?.harness.close();
  });
}

describe('toolgate mcp (the real binary, as an MCP stdio server)', () => {
  let harness: Harness;
  let server: McpProcess;
  const tenant = `mcp-${randomUUID().slice(0, 8)}`;
  useMcpServer(tenant, [], (started) => ({ harness, server } = started));

  it('initialize → tools/list → tools/call: success, unknown tool, invalid arguments, pending approval', async () => {
    const initialized = await server.request(1, 'initialize', {
      protocolVersion: '2025-03-26',
      capabilities: {},
      clientInfo: { name: 'toolgate-test', version: '1' },
    });
    expect(initialized.result).toMatchObject({
      protocolVersion: '2025-03-26',
      capabilities: { tools: { listChanged: false } },
      serverInfo: { name: 'toolgate', version: packageJson.version },
    });
    server.send({ method: 'notifications/initialized' });

    const listed = await server.request(2, 'tools/list', {});
    const tools = (listed.result as { tools: Array<{ name: string; inputSchema: Record<string, unknown> }> })
      .tools;
    expect(tools.map((tool) => tool.name)).toEqual(
      expect.arrayContaining(['read_config', 'slow_search', 'transfer_funds']),
    );
    expect(tools.find((tool) => tool.name === 'read_config')!.inputSchema).toMatchObject({
      type: 'object',
      properties: { name: { type: 'string' } },
      required: ['name'],
      additionalProperties: false,
    });

    const succeeded = await server.callTool(3, 'read_config', { name: 'region' });
    expect(succeeded.isError).toBe(false);
    expect(succeeded.content).toEqual([{ type: 'text', text: '{"name":"region","value":"eu-west"}' }]);
    // It really went through toolgate: a closed call with the server's trusted context.
    const callId = succeeded._meta?.['toolgate/callId'];
    expect(callId).toMatch(new RegExp(`^toolgate/${tenant}/read_config/~`));
    const record = await harness.client.get(callId!);
    expect(record).toMatchObject({
      status: 'succeeded',
      tenant,
      principal: 'mcp-test-agent',
      principalKind: 'agent',
    });

    const unknown = await server.callTool(4, 'no_such_tool', {});
    expect(unknown.isError).toBe(true);
    expect(unknown.content[0]!.text).toMatch(/^Error NOT_ALLOWED: There is no tool named "no_such_tool"\./);

    const invalid = await server.callTool(5, 'read_config', { name: 'region', extra: 1 });
    expect(invalid.isError).toBe(true);
    expect(invalid.content[0]!.text).toMatch(/^Error INVALID_INPUT: /);
    expect(invalid.content[0]!.text).toContain('Retrying the same call unchanged will not help.');

    const pending = await server.callTool(6, 'transfer_funds', {
      reference: `mcp-${randomUUID().slice(0, 8)}`,
      from: 'ACC-1',
      to: 'ACC-2',
      amountCents: 1250,
      currency: 'EUR',
      memo: null,
    });
    expect(pending.isError).toBe(false);
    expect(pending.content[0]!.text).toMatch(/^Pending: this call is waiting for a human to approve it\./);
    expect((await harness.client.get(pending._meta!['toolgate/callId']!))?.status).toBe('awaiting_approval');

    // A protocol error is a JSON-RPC error, not a tool result.
    const noName = await server.request(7, 'tools/call', { arguments: {} });
    expect(noName.error?.code).toBe(-32602);
    // Every line on stdout was a protocol message (each was parsed as JSON above).
    expect(server.stdoutLines.every((line) => (JSON.parse(line) as Message).jsonrpc === '2.0')).toBe(true);
  });

  it('notifications/cancelled for an open tools/call cancels its toolgate call, which is never answered', async () => {
    // The request ID carries a C1 control (CSI): the operator's log names the request, and must not
    // pass the control on to the terminal.
    const requestId = 'slow\u009b2J';
    server.send({
      id: requestId,
      method: 'tools/call',
      params: { name: 'slow_search', arguments: { query: 'q', delayMs: 30_000 } },
    });
    const query = `ToolName = "slow_search" AND Tenant = "${tenant}"`;
    const callId = await waitFor(
      async () => {
        for await (const execution of harness.temporal.workflow.list({ query })) return execution.workflowId;
        return undefined;
      },
      { what: 'the slow_search call in visibility', timeoutMs: 20_000, intervalMs: 200 },
    );
    server.send({
      method: 'notifications/cancelled',
      params: { requestId, reason: 'user pressed stop' },
    });
    const record = await harness.client.result(callId);
    expect(record.status).toBe('cancelled');
    expect(record.reason).toBe('CANCELLED');
    // Still serving, and the cancelled request got no answer.
    expect((await server.request('after', 'ping')).result).toEqual({});
    await expect(server.answer(requestId, 500)).rejects.toThrow(/no answer/);
    const logged = server.stderr.split('\n').find((line) => line.includes('cancelled by the client'));
    expect(logged).toBe('toolgate mcp: Request "slow?2J" cancelled by the client.');
  });

  it('exits 0 when the client closes stdin', async () => {
    server.child.stdin.end();
    const startedAt = Date.now();
    expect(await server.exited).toBe(0);
    expect(Date.now() - startedAt).toBeLessThan(10_000);
  });
});

describe('toolgate mcp --wait-for-approval, when the client stops waiting', () => {
  let harness: Harness;
  let server: McpProcess;
  const tenant = `mcp-wait-${randomUUID().slice(0, 8)}`;
  useMcpServer(tenant, ['--wait-for-approval'], (started) => ({ harness, server } = started));

  it('leaves a call that waits for a human waiting: a client cancel is not a rejection', async () => {
    const requestId = 'transfer-1';
    server.send({
      id: requestId,
      method: 'tools/call',
      params: {
        name: 'transfer_funds',
        arguments: {
          reference: 'MCP-WAIT-1',
          from: 'ACC-1',
          to: 'ACC-2',
          amountCents: 100,
          currency: 'EUR',
          memo: null,
        },
      },
    });
    const callId = `toolgate/${tenant}/transfer_funds/k/transfer-MCP-WAIT-1`;
    await waitFor(
      async () => ((await harness.client.get(callId))?.status === 'awaiting_approval' ? true : undefined),
      {
        what: 'the transfer to wait for approval',
        timeoutMs: 20_000,
      },
    );
    // What an SDK client's own request timeout sends while the call waits for a human.
    server.send({ method: 'notifications/cancelled', params: { requestId, reason: 'Request timed out' } });
    await waitFor(() => (server.stderr.includes('stays waiting') ? true : undefined), {
      what: 'the server to say the call stays waiting',
    });
    expect((await harness.client.get(callId))?.status).toBe('awaiting_approval');
    // A human decides, later: the transfer runs once.
    expect(await harness.client.approve(callId, { approver: 'alice' })).toMatchObject({ state: 'accepted' });
    expect(await harness.client.result(callId)).toMatchObject({ status: 'succeeded', effect: 'applied' });
    const ledger = await harness.readLines(harness.tools.paths.ledgerFile);
    expect(ledger.filter((line) => line['reference'] === 'MCP-WAIT-1')).toHaveLength(1);
  });
});
