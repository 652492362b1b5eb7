import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { exampleCatalog, readConfig } from '../../../examples/contracts.ts';
import packageJson from '../../../package.json' with { type: 'json' };
import { McpErrorCode, type McpServer, type McpServerOptions, serveMcp } from '../../../src/agent/mcp.ts';
import { strictInputSchema } from '../../../src/agent/tool-definitions.ts';
import type { CancelReceipt } from '../../../src/client/toolgate-client.ts';
import type { CallContext } from '../../../src/contracts/call-record.ts';
import { createFakeClient, type FakeBehaviour, type FakeClient } from './fake-client.ts';

const context: CallContext = { tenant: 'acme', principal: 'agent-7', principalKind: 'agent' };
const transfer = { reference: 'INV-7', from: 'AA', to: 'BB', amountCents: 100, currency: 'EUR', memo: null };

type Message = Record<string, unknown> & { id?: unknown; result?: unknown; error?: { code: number } };

/** An MCP server on a pair of in-memory streams, and the client's end of them. */
interface Peer {
  readonly server: McpServer;
  readonly client: FakeClient & { readonly cancelled: string[] };
  /** Writes one message (an object is sent as one JSON line; a string as is). */
  send(message: unknown): void;
  /** The next message the server writes; fails after `timeoutMs`. */
  next(timeoutMs?: number): Promise<Message>;
  /** Every message written so far and not yet taken by next(). */
  readonly unread: Message[];
  /** Every line written to the output, parsed or not. */
  readonly rawLines: string[];
  end(): void;
}

const peers: Peer[] = [];
afterEach(async () => {
  for (const peer of peers.splice(0)) await peer.server.close();
});

function createPeer(
  behaviours: Record<string, FakeBehaviour>,
  options: Partial<Omit<McpServerOptions, 'client' | 'input' | 'output'>> = {},
): Peer {
  const input = new PassThrough();
  const output = new PassThrough();
  const fake = createFakeClient(behaviours);
  const cancelled: string[] = [];
  const client = Object.assign(fake, {
    cancelled,
    async cancel(callId: string): Promise<CancelReceipt> {
      cancelled.push(callId);
      return { callId };
    },
  });
  const server = serveMcp({ catalog: exampleCatalog, context, ...options, client, input, output });
  const unread: Message[] = [];
  const rawLines: string[] = [];
  const waiters: Array<(message: Message) => void> = [];
  let buffered = '';
  output.on('data', (chunk: Buffer) => {
    buffered += chunk.toString('utf8');
    let newline = buffered.indexOf('\n');
    while (newline !== -1) {
      const line = buffered.slice(0, newline);
      buffered = buffered.slice(newline + 1);
      rawLines.push(line);
      const message = JSON.parse(line) as Message;
      const waiter = waiters.shift();
      if (waiter) waiter(message);
      else unread.push(message);
      newline = buffered.indexOf('\n');
    }
  });
  const peer: Peer = {
    server,
    client,
    unread,
    rawLines,
    send: (message) => input.write(typeof message === 'string' ? message : `${JSON.stringify(message)}\n`),
    next: (timeoutMs = 2_000) => {
      const ready = unread.shift();
      if (ready) return Promise.resolve(ready);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.splice(waiters.indexOf(settle), 1);
          reject(new Error(`no message within ${timeoutMs} ms`));
        }, timeoutMs);
        const settle = (message: Message): void => {
          clearTimeout(timer);
          resolve(message);
        };
        waiters.push(settle);
      });
    },
    end: () => input.end(),
  };
  peers.push(peer);
  return peer;
}

const request = (id: unknown, method: string, params?: unknown) => ({
  jsonrpc: '2.0',
  id,
  method,
  ...(params === undefined ? {} : { params }),
});

/** [id, error code] of each answer, in a fixed order. */
const sortedPairs = (answers: readonly Message[]) =>
  answers
    .map((answer) => [answer.id, answer.error?.code])
    .sort((left, right) => JSON.stringify(left).localeCompare(JSON.stringify(right)));

const call = (id: unknown, name: unknown, args?: unknown) =>
  request(id, 'tools/call', { name, ...(args === undefined ? {} : { arguments: args }) });

describe('MCP server: lifecycle and tools/list', () => {
  it('answers initialize with the version asked for when supported, else its latest', async () => {
    const peer = createPeer({});
    for (const [id, asked, expected] of [
      [1, '2024-11-05', '2024-11-05'],
      [2, '2025-03-26', '2025-03-26'],
      [3, '2025-06-18', '2025-06-18'],
      [4, '1999-01-01', '2025-06-18'],
    ] as const) {
      peer.send(
        request(id, 'initialize', {
          protocolVersion: asked,
          capabilities: {},
          clientInfo: { name: 'test', version: '0' },
        }),
      );
      const answer = await peer.next();
      expect(answer).toMatchObject({
        jsonrpc: '2.0',
        id,
        result: {
          protocolVersion: expected,
          capabilities: { tools: { listChanged: false } },
          serverInfo: { name: 'toolgate', version: packageJson.version },
        },
      });
    }
    peer.send(request(5, 'initialize', { capabilities: {} }));
    expect((await peer.next()).error).toMatchObject({ code: McpErrorCode.invalidParams });
  });

  it('lists the served tools with the same strict schema the other adapters send', async () => {
    const peer = createPeer({}, { include: ['read_config', 'transfer_funds'] });
    peer.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    peer.send(request('list', 'tools/list'));
    const answer = await peer.next();
    expect(answer.id).toBe('list');
    const tools = (answer.result as { tools: Array<Record<string, unknown>> }).tools;
    expect(tools.map((tool) => tool['name'])).toEqual(['read_config', 'transfer_funds']);
    expect(tools[0]!['inputSchema']).toEqual(strictInputSchema(readConfig));
    expect(tools[0]!['annotations']).toEqual({ readOnlyHint: true, destructiveHint: false });
    expect(String(tools[1]!['description'])).toContain('A human must approve each call');
    expect(tools[1]!['annotations']).toEqual({ readOnlyHint: false, destructiveHint: true });
    expect((answer.result as Record<string, unknown>)['nextCursor']).toBeUndefined();
  });

  it('answers ping with an empty result and an unknown method with -32601', async () => {
    const peer = createPeer({});
    peer.send(request(7, 'ping'));
    expect(await peer.next()).toEqual({ jsonrpc: '2.0', id: 7, result: {} });
    peer.send(request(8, 'resources/list'));
    expect(await peer.next()).toMatchObject({ id: 8, error: { code: McpErrorCode.methodNotFound } });
  });
});

describe('MCP server: tools/call', () => {
  it('runs a call through toolgate with the trusted context and answers with the model text', async () => {
    const peer = createPeer({
      read_config: { kind: 'closed', status: 'succeeded', output: { name: 'region', value: 'eu-west' } },
    });
    peer.send(call(1, 'read_config', { name: 'region' }));
    const answer = await peer.next();
    expect(answer).toMatchObject({
      id: 1,
      result: {
        content: [{ type: 'text', text: '{"name":"region","value":"eu-west"}' }],
        isError: false,
        _meta: { 'toolgate/state': 'closed', 'toolgate/callId': 'toolgate/acme/read_config/~1' },
      },
    });
    expect(peer.client.starts).toEqual([
      { request: { tool: 'read_config', input: { name: 'region' } }, context },
    ]);
  });

  it('gives an unknown tool to toolgate and answers its NOT_ALLOWED denial as a tool error', async () => {
    const peer = createPeer({ no_such_tool: { kind: 'closed', status: 'denied', reason: 'NOT_ALLOWED' } });
    peer.send(call(1, 'no_such_tool', {}));
    const answer = await peer.next();
    expect(answer.error).toBeUndefined();
    expect(answer.result).toMatchObject({ isError: true });
    const text = (answer.result as { content: Array<{ text: string }> }).content[0]!.text;
    expect(text).toMatch(/^Error NOT_ALLOWED: /);
    expect(peer.client.starts.map((start) => start.request.tool)).toEqual(['no_such_tool']);
  });

  it('refuses a catalog tool the server does not serve, without starting it', async () => {
    const peer = createPeer(
      { delete_everything: { kind: 'closed', status: 'succeeded', output: 'gone' } },
      { include: ['read_config'] },
    );
    peer.send(call(1, 'delete_everything', { confirm: true }));
    const answer = await peer.next();
    expect(answer.result).toMatchObject({ isError: true });
    expect((answer.result as { content: Array<{ text: string }> }).content[0]!.text).toMatch(
      /^Error NOT_ALLOWED: This server does not offer a tool named "delete_everything"/,
    );
    expect(peer.client.starts).toEqual([]);
  });

  it('answers a denial for invalid arguments as a tool error with the INVALID_INPUT text', async () => {
    const peer = createPeer({
      read_config: {
        kind: 'closed',
        status: 'denied',
        reason: 'INVALID_INPUT',
        message: 'Unrecognized key: "extra".',
      },
    });
    peer.send(call(1, 'read_config', { name: 'region', extra: 1 }));
    const answer = await peer.next();
    expect(answer.result).toMatchObject({ isError: true });
    expect((answer.result as { content: Array<{ text: string }> }).content[0]!.text).toMatch(
      /^Error INVALID_INPUT: Unrecognized key: "extra"\. Retrying the same call unchanged will not help\./,
    );
  });

  it('answers a call that waits for approval at once as pending, not as an error, with the contract key', async () => {
    const peer = createPeer({ transfer_funds: { kind: 'awaiting_approval' } }, { pendingPollIntervalMs: 5 });
    peer.send(call('t', 'transfer_funds', transfer));
    const answer = await peer.next();
    const result = answer.result as { content: Array<{ text: string }>; isError: boolean; _meta: unknown };
    expect(result.isError).toBe(false);
    expect(result.content[0]!.text).toMatch(/^Pending: /);
    expect(result.content[0]!.text).toContain('Call ID: toolgate/acme/transfer_funds/k/transfer-INV-7');
    expect(result._meta).toMatchObject({
      'toolgate/state': 'pending',
      'toolgate/callId': 'toolgate/acme/transfer_funds/k/transfer-INV-7',
    });
    expect(peer.client.starts[0]!.request.key).toBe('transfer-INV-7');
  });

  it('asks the caller key function when the contract has none', async () => {
    const peer = createPeer(
      { write_report: { kind: 'closed', status: 'succeeded', output: 1 } },
      { keyFor: (tool, input) => `${tool}-${(input as { path: string }).path.replace(/\W/g, '-')}` },
    );
    peer.send(call(1, 'write_report', { path: 'q3/a.md', content: 'x' }));
    await peer.next();
    expect(peer.client.starts[0]!.request.key).toBe('write_report-q3-a-md');
  });

  it('treats left-out arguments as {} and refuses a missing name or non-object arguments with -32602', async () => {
    const peer = createPeer({ read_config: { kind: 'closed', status: 'denied', reason: 'INVALID_INPUT' } });
    peer.send(call(1, 'read_config'));
    expect((await peer.next()).result).toMatchObject({ isError: true });
    expect(peer.client.starts[0]!.request.input).toEqual({});
    const invalid = [
      call(2, undefined, {}),
      call(3, 42, {}),
      call(4, 'read_config', ['region']),
      call(5, 'read_config', 'name=region'),
      call(6, 'read_config', null),
      request(7, 'tools/call', ['read_config', {}]),
    ];
    for (const message of invalid) peer.send(message);
    const answers = await Promise.all(invalid.map(() => peer.next()));
    // Answers may come in any order; JSON-RPC matches them by id.
    expect(sortedPairs(answers)).toEqual([2, 3, 4, 5, 6, 7].map((id) => [id, McpErrorCode.invalidParams]));
    expect(peer.client.starts).toHaveLength(1);
  });
});

describe('MCP server: framing and protocol errors', () => {
  it('answers -32700 for a line that is not JSON and -32600 for a message that is not a request', async () => {
    const peer = createPeer({});
    peer.send('{"jsonrpc":"2.0","id":1,"method":"ping"\n');
    expect(await peer.next()).toMatchObject({ id: null, error: { code: McpErrorCode.parseError } });
    const cases: Array<[unknown, unknown]> = [
      [{ id: 2, method: 'ping' }, 2], // no jsonrpc
      [{ jsonrpc: '1.0', id: 3, method: 'ping' }, 3],
      [{ jsonrpc: '2.0', id: 4, method: 7 }, 4],
      [{ jsonrpc: '2.0', id: { nested: true }, method: 'ping' }, null],
      [{ jsonrpc: '2.0', id: 5, method: 'ping', params: 'x' }, 5],
      [42, null],
      [[], null],
    ];
    for (const [message] of cases) peer.send(message);
    const answers = await Promise.all(cases.map(() => peer.next()));
    expect(sortedPairs(answers)).toEqual(
      sortedPairs(cases.map(([, id]) => ({ id, error: { code: McpErrorCode.invalidRequest } }))),
    );
  });

  it('reads messages split across chunks, several per chunk, with CRLF, and skips blank lines', async () => {
    const peer = createPeer({});
    const text = `${JSON.stringify(request(1, 'ping'))}\r\n\n${JSON.stringify(request(2, 'ping'))}\n`;
    for (const character of text.slice(0, 20)) peer.send(character);
    peer.send(text.slice(20));
    expect([(await peer.next()).id, (await peer.next()).id]).toEqual([1, 2]);
  });

  it('never answers notifications, well-formed or not, and never runs a tools/call sent as one', async () => {
    const peer = createPeer({ read_config: { kind: 'closed', status: 'succeeded', output: 1 } });
    peer.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    peer.send({ jsonrpc: '2.0', method: 'notifications/no_such_thing', params: 'odd' });
    peer.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'never-sent' } });
    peer.send({ jsonrpc: '2.0', method: 'tools/call', params: { name: 'read_config', arguments: {} } });
    peer.send({ jsonrpc: '2.0', method: 'no/such/method' });
    peer.send({ method: 'notifications/initialized' }); // no jsonrpc
    peer.send({ jsonrpc: '2.0', method: 42 });
    peer.send({ jsonrpc: '2.0' });
    // A response from the client: the server sends no requests, so it is ignored too.
    peer.send({ jsonrpc: '2.0', id: 99, result: {} });
    peer.send(request('last', 'ping'));
    expect(await peer.next()).toMatchObject({ id: 'last', result: {} });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(peer.rawLines).toHaveLength(1);
    expect(peer.client.starts).toEqual([]);
  });

  it('refuses a line over the limit as soon as it is too long, keeps none of it, and reads on', async () => {
    const peer = createPeer({});
    const chunk = 'x'.repeat(1024 * 1024);
    // 40 MiB with no newline: refused once, after 4 MiB, while the line has not even ended.
    for (let index = 0; index < 5; index++) peer.send(chunk);
    const refusal = await peer.next();
    expect(refusal).toMatchObject({
      id: null,
      error: { code: McpErrorCode.invalidRequest, data: { maximumMessageBytes: 4 * 1024 * 1024 } },
    });
    for (let index = 0; index < 35; index++) peer.send(chunk);
    // The rest of the long line is skipped; the next line is a request like any other.
    peer.send(`${chunk}"}\n${JSON.stringify(request(2, 'ping'))}\n`);
    expect(await peer.next()).toEqual({ jsonrpc: '2.0', id: 2, result: {} });
    expect(peer.rawLines).toHaveLength(2);
  });

  it('applies the byte limit to a whole request, just over and just under it', async () => {
    const limit = 200;
    const peer = createPeer(
      { read_config: { kind: 'closed', status: 'succeeded', output: 1 } },
      { maximumMessageBytes: limit },
    );
    const fitting = (id: number, size: number) => {
      const skeleton = JSON.stringify(call(id, 'read_config', { name: '' }));
      return JSON.stringify(call(id, 'read_config', { name: 'é'.repeat((size - skeleton.length) / 2) }));
    };
    const exactly = fitting(1, limit);
    expect(Buffer.byteLength(exactly)).toBe(limit);
    const over = fitting(2, limit + 2);
    peer.send(`${exactly}\n${over}\n`);
    const answers = [await peer.next(), await peer.next()];
    expect(answers.find((answer) => answer.id === 1)?.result).toMatchObject({ isError: false });
    expect(answers.find((answer) => answer.id === null)?.error?.code).toBe(McpErrorCode.invalidRequest);
    expect(peer.client.starts).toHaveLength(1);
  });

  it('answers a batch with one array, leaving out its notifications', async () => {
    const peer = createPeer({ read_config: { kind: 'closed', status: 'succeeded', output: 1 } });
    peer.send([
      call(1, 'read_config', { name: 'a' }),
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      request(2, 'ping'),
      request(3, 'nope'),
    ]);
    const answer = (await peer.next()) as unknown as Message[];
    expect(Array.isArray(answer)).toBe(true);
    expect(answer.map((item) => [item.id, item.error?.code ?? 'ok'])).toEqual([
      [1, 'ok'],
      [2, 'ok'],
      [3, McpErrorCode.methodNotFound],
    ]);
  });
});

describe('MCP server: concurrency and cancellation', () => {
  it('answers as each request finishes, so a fast call overtakes a slow one; ids keep them apart', async () => {
    const peer = createPeer({
      slow_search: { kind: 'closed', status: 'succeeded', output: 'slow', delayMs: 300 },
      read_config: { kind: 'closed', status: 'succeeded', output: 'fast', delayMs: 10 },
    });
    peer.send(call(1, 'slow_search', { query: 'q', delayMs: 300 }));
    peer.send(call('1', 'read_config', { name: 'x' }));
    peer.send(request(2, 'ping'));
    const answers = [await peer.next(), await peer.next(), await peer.next()];
    expect(answers.map((answer) => answer.id)).toEqual([2, '1', 1]);
    expect(answers[1]!.result).toMatchObject({ content: [{ text: '"fast"' }] });
    expect(answers[2]!.result).toMatchObject({ content: [{ text: '"slow"' }] });
  });

  it('runs at most maxConcurrency tool calls at once and answers every one', async () => {
    const peer = createPeer(
      { slow_search: { kind: 'closed', status: 'succeeded', output: 'ok', delayMs: 100 } },
      { maxConcurrency: 2 },
    );
    for (let id = 1; id <= 5; id++) peer.send(call(id, 'slow_search', { query: `q${id}`, delayMs: 100 }));
    const answers = await Promise.all([1, 2, 3, 4, 5].map(() => peer.next()));
    expect(answers.map((answer) => answer.id).sort()).toEqual([1, 2, 3, 4, 5]);
    expect(peer.client.maxConcurrent).toBe(2);
  });

  it('refuses a second request with the id of one still open', async () => {
    const peer = createPeer({
      slow_search: { kind: 'closed', status: 'succeeded', output: 'ok', delayMs: 200 },
    });
    peer.send(call(1, 'slow_search', { query: 'q', delayMs: 200 }));
    peer.send(call(1, 'slow_search', { query: 'other', delayMs: 200 }));
    expect(await peer.next()).toMatchObject({ id: 1, error: { code: McpErrorCode.invalidRequest } });
    expect(await peer.next()).toMatchObject({ id: 1, result: { isError: false } });
    expect(peer.client.starts).toHaveLength(1);
  });

  it('on notifications/cancelled stops answering, cancels the call it started, and never starts a queued one', async () => {
    const peer = createPeer(
      { slow_search: { kind: 'closed', status: 'succeeded', output: 'ok', delayMs: 500 } },
      { maxConcurrency: 1 },
    );
    peer.send(call('running', 'slow_search', { query: 'a', delayMs: 500 }));
    peer.send(call('queued', 'slow_search', { query: 'b', delayMs: 500 }));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(peer.client.starts).toHaveLength(1);
    peer.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'queued' } });
    peer.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'running' } });
    // The slot is free at once: a new call runs without waiting for the cancelled one.
    const startedAt = performance.now();
    peer.send(call('after', 'slow_search', { query: 'c', delayMs: 1 }));
    peer.send(request('ping', 'ping'));
    expect(await peer.next()).toMatchObject({ id: 'ping' });
    expect(await peer.next(2_000)).toMatchObject({ id: 'after', result: { isError: false } });
    expect(performance.now() - startedAt).toBeLessThan(900);
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect(peer.rawLines).toHaveLength(2);
    expect(peer.client.cancelled).toEqual(['toolgate/acme/slow_search/~1']);
    expect(peer.client.starts.map((start) => (start.request.input as { query: string }).query)).toEqual([
      'a',
      'c',
    ]);
  });

  it('after the input ends, writes the answers in progress and then reports done', async () => {
    const peer = createPeer({
      slow_search: { kind: 'closed', status: 'succeeded', output: 'late', delayMs: 200 },
    });
    peer.send(call(1, 'slow_search', { query: 'q', delayMs: 200 }));
    peer.send(JSON.stringify(request(2, 'ping'))); // the last line may lack its newline
    peer.end();
    let done = false;
    void peer.server.done.then(() => {
      done = true;
    });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(done).toBe(false);
    await peer.server.done;
    expect(peer.unread.map((answer) => answer.id)).toEqual([2, 1]);
  });
});
