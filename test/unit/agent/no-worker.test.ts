import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { exampleCatalog } from '../../../examples/contracts.ts';
import { defaultMcpNoWorkerAfterMs, type McpLogEvent, serveMcp } from '../../../src/agent/mcp.ts';
import { modelResultForNoWorker } from '../../../src/agent/model-messages.ts';
import {
  awaitPendingCall,
  type RunToolCallsOptions,
  runOneToolCall,
  type ToolgateCaller,
} from '../../../src/agent/run-tool-calls.ts';
import { NoWorkerAnsweredError, type ResultOptions } from '../../../src/client/toolgate-client.ts';
import type { CallContext, CallRecord, CallStatus } from '../../../src/contracts/call-record.ts';
import { lookupTool } from '../../../src/contracts/define-tool.ts';
import { createRecord } from './fake-client.ts';

const context: CallContext = { tenant: 'acme', principal: 'agent-7', principalKind: 'agent' };
const transfer = { reference: 'INV-7', from: 'AA', to: 'BB', amountCents: 100, currency: 'EUR', memo: null };
const boundMs = 120;

/**
 * A toolgate with no worker on the call's task queue: the call starts (the server takes it) but
 * nothing runs it. `result` never settles unless it is given `noWorkerAfterMs`, after which it
 * rejects as ToolgateClient.result does; `get` cannot be answered by a worker and throws, unless the
 * record is set to a status a closed or waiting call would show. `workerStarts` lets the call close.
 */
function createWorkerlessClient(options: { withLiveWorkerCheck?: boolean; liveWorker?: () => boolean } = {}) {
  const callId = 'toolgate/acme/transfer_funds/k/INV-7';
  const runId = 'run-42';
  const resultCalls: Array<{
    callId: string;
    runId: string | undefined;
    options: ResultOptions | undefined;
  }> = [];
  const getCalls: Array<{ queryTimeoutMs?: number; runId?: string }> = [];
  let closeCall: (record: CallRecord) => void = () => undefined;
  const closed = new Promise<CallRecord>((resolve) => {
    closeCall = resolve;
  });
  let liveStatus: CallStatus | undefined;
  const client: ToolgateCaller & {
    readonly resultCalls: typeof resultCalls;
    readonly getCalls: typeof getCalls;
    starts: number;
    workerStarts(record: CallRecord): void;
    answerGetWith(status: CallStatus | undefined): void;
  } = {
    resultCalls,
    getCalls,
    starts: 0,
    workerStarts: (record) => closeCall(record),
    answerGetWith: (status) => {
      liveStatus = status;
    },
    async start(request, _context, options = {}) {
      client.starts++;
      // The tier from the contracts the call is prepared with, as the real client reports it.
      const tier = options.catalog ? lookupTool(options.catalog, request.tool)?.tier : undefined;
      return { callId, runId, disposition: 'started', ...(tier ? { tier } : {}) };
    },
    async result(id, run, resultOptions) {
      resultCalls.push({ callId: id, runId: run, options: resultOptions });
      const afterMs = resultOptions?.noWorkerAfterMs;
      if (afterMs === undefined) return closed;
      return Promise.race([
        closed,
        new Promise<never>((_, reject) =>
          setTimeout(
            () => reject(new NoWorkerAnsweredError(`No worker has polled for ${afterMs} ms`)),
            afterMs,
          ),
        ),
      ]);
    },
    async get(_id, getOptions = {}) {
      getCalls.push(getOptions);
      await new Promise((resolve) => setTimeout(resolve, 5));
      if (liveStatus) return createRecord({ callId, runId, tool: 'transfer_funds', status: liveStatus });
      throw new NoWorkerAnsweredError('No worker answered the record query');
    },
    ...(options.withLiveWorkerCheck === false
      ? {}
      : { hasLiveWorker: async () => options.liveWorker?.() ?? false }),
  };
  return { client, callId, runId };
}

function baseOptions(client: ToolgateCaller, extra: Partial<RunToolCallsOptions> = {}): RunToolCallsOptions {
  return { client, context, catalog: exampleCatalog, pendingPollIntervalMs: 10, ...extra };
}

async function timed<T>(work: Promise<T>): Promise<{ value: T; elapsedMs: number }> {
  const startedAt = performance.now();
  const value = await work;
  return { value, elapsedMs: performance.now() - startedAt };
}

describe('a call no worker picks up, with noWorkerAfterMs', () => {
  it('in wait mode answers pending with the call and run IDs once the bound passes, and reports it to onError', async () => {
    const { client, callId, runId } = createWorkerlessClient();
    const errors: unknown[] = [];
    const { value: outcome, elapsedMs } = await timed(
      runOneToolCall(
        { id: 'toolu_1', name: 'transfer_funds', input: transfer },
        baseOptions(client, {
          approvalMode: 'wait',
          noWorkerAfterMs: boundMs,
          onError: (error) => errors.push(error),
        }),
      ),
    );
    expect(elapsedMs).toBeGreaterThanOrEqual(boundMs - 5);
    expect(elapsedMs).toBeLessThan(boundMs + 1_000);
    expect(client.resultCalls).toEqual([{ callId, runId, options: { noWorkerAfterMs: boundMs } }]);
    expect(outcome).toMatchObject({ id: 'toolu_1', state: 'pending', callId, runId, isError: false });
    expect(outcome.record).toBeUndefined();
    expect(outcome.text).toBe(modelResultForNoWorker(callId).text);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toBeInstanceOf(NoWorkerAnsweredError);
    expect(client.starts).toBe(1);
  });

  it('for a tool that never waits for approval, bounds the result wait the same way', async () => {
    const { client, callId } = createWorkerlessClient();
    const outcome = await runOneToolCall(
      { id: 'c1', name: 'read_config', input: { name: 'x' } },
      baseOptions(client, { noWorkerAfterMs: boundMs }),
    );
    expect(outcome).toMatchObject({ state: 'pending', callId, isError: false });
    expect(client.resultCalls[0]?.options).toEqual({ noWorkerAfterMs: boundMs });
  });

  it('in return-pending mode, stops polling a call that never reaches approval once no worker polls for the bound', async () => {
    const { client, callId, runId } = createWorkerlessClient();
    // The record never reaches awaiting_approval: the poll used to go on for ever.
    client.answerGetWith('pending');
    const errors: unknown[] = [];
    const { value: outcome, elapsedMs } = await timed(
      runOneToolCall(
        { id: 'toolu_2', name: 'transfer_funds', input: transfer },
        baseOptions(client, { noWorkerAfterMs: boundMs, onError: (error) => errors.push(error) }),
      ),
    );
    expect(elapsedMs).toBeGreaterThanOrEqual(boundMs - 5);
    expect(elapsedMs).toBeLessThan(boundMs + 1_000);
    expect(outcome).toMatchObject({ state: 'pending', callId, runId, isError: false });
    expect(outcome.text).toContain('no worker is running it yet');
    expect(errors).toHaveLength(1);
    // The poll's own give-up is a NoWorkerAnsweredError of its own name, so it is handled like the client's.
    expect(errors[0]).toBeInstanceOf(NoWorkerAnsweredError);
    expect((errors[0] as Error).name).toBe('NoWorkerBoundError');
    // With no worker, the record query is asked briefly (to see a call that closed meanwhile).
    expect(client.getCalls.every((call) => call.runId === runId && call.queryTimeoutMs === 1_000)).toBe(true);
  });

  it('in return-pending mode, answers pending instead of a retryable failure when no worker answers the record query', async () => {
    const { client, callId } = createWorkerlessClient({ withLiveWorkerCheck: false });
    const outcome = await runOneToolCall(
      { id: 'toolu_3', name: 'transfer_funds', input: transfer },
      baseOptions(client, { noWorkerAfterMs: boundMs }),
    );
    expect(outcome).toMatchObject({ state: 'pending', callId, isError: false });
    expect(outcome.text).not.toMatch(/^Error/);
    expect(outcome.text).toContain('Do not call the tool again');
  });

  it('keeps polling while a worker is live, however long it takes to reach approval', async () => {
    const { client } = createWorkerlessClient({ liveWorker: () => true });
    client.answerGetWith('running');
    setTimeout(() => client.answerGetWith('awaiting_approval'), boundMs * 3);
    const { value: outcome, elapsedMs } = await timed(
      runOneToolCall(
        { id: 'toolu_4', name: 'transfer_funds', input: transfer },
        baseOptions(client, { noWorkerAfterMs: boundMs }),
      ),
    );
    expect(elapsedMs).toBeGreaterThanOrEqual(boundMs * 3 - 5);
    expect(outcome.state).toBe('pending');
    expect(outcome.record?.status).toBe('awaiting_approval');
    expect(outcome.text).toContain('waiting for a human');
  });

  it('lets the application follow the call with awaitPendingCall once a worker runs it', async () => {
    const { client, callId, runId } = createWorkerlessClient();
    const outcome = await runOneToolCall(
      { id: 'toolu_5', name: 'transfer_funds', input: transfer },
      baseOptions(client, { approvalMode: 'wait', noWorkerAfterMs: boundMs }),
    );
    expect(outcome.state).toBe('pending');
    const later = awaitPendingCall(client, outcome);
    client.workerStarts(
      createRecord({ callId, runId, tool: 'transfer_funds', status: 'succeeded', output: { ok: true } }),
    );
    const final = await later;
    expect(final).toMatchObject({ state: 'closed', callId, runId, isError: false, text: '{"ok":true}' });
    expect(client.resultCalls.at(-1)).toEqual({ callId, runId, options: undefined });
    expect(client.starts).toBe(1);
  });

  it('without noWorkerAfterMs keeps the durable wait: result is asked with no bound', async () => {
    const { client, callId, runId } = createWorkerlessClient();
    const running = runOneToolCall(
      { id: 'toolu_6', name: 'transfer_funds', input: transfer },
      baseOptions(client, { approvalMode: 'wait' }),
    );
    const early = await Promise.race([
      running.then(() => 'answered'),
      new Promise((resolve) => setTimeout(() => resolve('still waiting'), boundMs * 2)),
    ]);
    expect(early).toBe('still waiting');
    expect(client.resultCalls).toEqual([{ callId, runId, options: undefined }]);
    client.workerStarts(
      createRecord({ callId, runId, tool: 'transfer_funds', status: 'succeeded', output: 1 }),
    );
    expect((await running).state).toBe('closed');
  });
});

describe('modelResultForNoWorker', () => {
  it('is not an error, names the call, says it stays open and must not be made again', () => {
    const result = modelResultForNoWorker('toolgate/acme/transfer_funds/k/INV-7');
    expect(result.isError).toBe(false);
    expect(result.text).toMatch(/^Pending: /);
    expect(result.text).toContain('Call ID: toolgate/acme/transfer_funds/k/INV-7.');
    expect(result.text).toContain('stays open and will run when a worker starts');
    expect(result.text).toContain('Do not call the tool again');
  });
});

describe('MCP tools/call with no worker', () => {
  async function callOnce(
    client: ToolgateCaller,
    options: { noWorkerAfterMs?: number },
  ): Promise<{ answer: Record<string, unknown>; logs: McpLogEvent[] }> {
    const input = new PassThrough();
    const output = new PassThrough();
    const logs: McpLogEvent[] = [];
    const server = serveMcp({
      client,
      context,
      catalog: exampleCatalog,
      approvalMode: 'wait',
      input,
      output,
      log: (event) => logs.push(event),
      ...options,
    });
    try {
      const line = new Promise<string>((resolve) => {
        let buffered = '';
        output.on('data', (chunk: Buffer) => {
          buffered += chunk.toString('utf8');
          const newline = buffered.indexOf('\n');
          if (newline !== -1) resolve(buffered.slice(0, newline));
        });
      });
      input.write(
        `${JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'transfer_funds', arguments: transfer } })}\n`,
      );
      return { answer: JSON.parse(await line) as Record<string, unknown>, logs };
    } finally {
      await server.close();
    }
  }

  it('answers pending within the bound, with the call and run IDs in _meta, and logs a warning', async () => {
    const { client, callId, runId } = createWorkerlessClient();
    const { answer, logs } = await callOnce(client, { noWorkerAfterMs: boundMs });
    expect(answer).toMatchObject({
      id: 7,
      result: {
        isError: false,
        content: [{ type: 'text', text: modelResultForNoWorker(callId).text }],
        _meta: { 'toolgate/callId': callId, 'toolgate/runId': runId, 'toolgate/state': 'pending' },
      },
    });
    expect(logs.filter((event) => event.level === 'warn').map((event) => event.message)).toEqual([
      expect.stringContaining(`No worker picked up ${callId}`),
    ]);
  });

  it('bounds the wait by default, at 30 s', () => {
    expect(defaultMcpNoWorkerAfterMs).toBe(30_000);
  });

  it('passes the default bound to the result wait when none is given', async () => {
    const { client, callId, runId } = createWorkerlessClient();
    const answered = callOnce(client, {});
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(client.resultCalls).toEqual([{ callId, runId, options: { noWorkerAfterMs: 30_000 } }]);
    client.workerStarts(
      createRecord({ callId, runId, tool: 'transfer_funds', status: 'succeeded', output: 2 }),
    );
    expect((await answered).answer).toMatchObject({ result: { isError: false, content: [{ text: '2' }] } });
  });
});
