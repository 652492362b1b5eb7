import type { ToolgateClient } from '../client/toolgate-client.ts';
import { createCatalog, lookupTool, type ToolCatalog, type ToolContract } from '../contracts/define-tool.ts';
import { toolgateVersion } from '../support/package-version.ts';
import { untilAborted } from '../support/until-aborted.ts';
import { modelErrorText } from './model-messages.ts';
import {
  concurrencyLimit,
  type RunToolCallsOptions,
  runOneToolCall,
  type ToolCallOutcome,
  type ToolgateCaller,
} from './run-tool-calls.ts';
import { type JsonSchema, modelDescription, selectContracts, strictInputSchema } from './tool-definitions.ts';

/** The MCP protocol versions this server speaks, newest first. */
export const mcpProtocolVersions = ['2025-06-18', '2025-03-26', '2024-11-05'] as const;
export type McpProtocolVersion = (typeof mcpProtocolVersions)[number];

/** The JSON-RPC 2.0 error codes the server answers with. */
export const McpErrorCode = {
  parseError: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internalError: -32603,
} as const;
export type McpErrorCode = (typeof McpErrorCode)[keyof typeof McpErrorCode];

/** The largest message (one line) read by default: 4 MiB. Longer lines are refused and skipped. */
export const defaultMaximumMessageBytes = 4 * 1024 * 1024;

/**
 * How long a `tools/call` waits, by default, while no worker polls the call's task queue, before it
 * is answered as pending: an MCP client waits for its answer, so it is bounded unlike the library.
 */
export const defaultMcpNoWorkerAfterMs = 30_000;

/** One line for the operator's log (stderr in the CLI); never written to the protocol stream. */
export interface McpLogEvent {
  readonly level: 'info' | 'warn' | 'error';
  readonly message: string;
  readonly error?: unknown;
}

export interface McpServerOptions extends Omit<RunToolCallsOptions, 'client' | 'catalog'> {
  /**
   * The toolgate client. With a `cancel` method (ToolgateClient has one), `notifications/cancelled`
   * for a `tools/call` cancels the toolgate call that request started, unless it is an
   * approval-tier call that has not run: that one belongs to its approvers, and keeps waiting.
   */
  readonly client: ToolgateCaller & Partial<Pick<ToolgateClient, 'cancel'>>;
  /** The tools to serve: `tools/list` lists them, with JSON Schema built from their contracts. */
  readonly catalog: ToolCatalog | readonly ToolContract[];
  /** Serve only these tools. A `tools/call` of another catalog tool is refused `NOT_ALLOWED`. */
  readonly include?: readonly string[];
  /** Where requests come from. Default `process.stdin`. */
  readonly input?: NodeJS.ReadableStream;
  /** Where answers go: protocol messages only. Default `process.stdout`. */
  readonly output?: NodeJS.WritableStream;
  /** Refuse messages longer than this many bytes. Default 4 MiB. */
  readonly maximumMessageBytes?: number;
  /** Operator diagnostics. Never written to `output`. */
  readonly log?: (event: McpLogEvent) => void;
  /** Sent to the client in the `initialize` answer. Default: how to read toolgate's results. */
  readonly instructions?: string;
  /**
   * As in the other adapters, but bounded by default: 30 s ({@link defaultMcpNoWorkerAfterMs}).
   * A call no worker picks up within it is answered pending (`_meta` has its call and run IDs) and
   * a `warn` line is logged; the call stays open. `Infinity` waits without a bound.
   */
  readonly noWorkerAfterMs?: number;
}

/** A running MCP server; see {@link serveMcp}. */
export interface McpServer {
  /**
   * Settles once the input has ended (the client closed the stream) and every request in progress
   * has been answered, or once {@link McpServer.close} is called.
   */
  readonly done: Promise<void>;
  /**
   * Stops at once: no more reading, and no answers for requests still open. Their toolgate calls
   * are not cancelled; they are durable and finish on their own, and their records stay readable.
   */
  close(): Promise<void>;
}

type RequestId = string | number;

interface JsonRpcError {
  readonly code: McpErrorCode;
  readonly message: string;
  readonly data?: unknown;
}

type JsonRpcResponse =
  | { readonly jsonrpc: '2.0'; readonly id: RequestId; readonly result: unknown }
  | { readonly jsonrpc: '2.0'; readonly id: RequestId | null; readonly error: JsonRpcError };

/**
 * What `tools/call` answers. `_meta` carries the toolgate call ID and run (when a call started) and
 * the outcome's state, so an application can follow a pending call with `awaitPendingCall`.
 */
export interface McpToolResult {
  readonly content: Array<{ readonly type: 'text'; readonly text: string }>;
  readonly isError: boolean;
  readonly _meta?: {
    readonly 'toolgate/callId'?: string;
    readonly 'toolgate/runId'?: string;
    readonly 'toolgate/state': ToolCallOutcome['state'];
  };
}

/** One entry of the `tools/list` answer. */
interface McpToolEntry {
  readonly name: string;
  readonly description: string;
  readonly inputSchema: JsonSchema;
  readonly annotations: { readonly readOnlyHint: boolean; readonly destructiveHint: boolean };
}

type Limiter = <Result>(
  signal: AbortSignal,
  work: () => Promise<Result | undefined>,
) => Promise<Result | undefined>;

interface OpenRequest {
  readonly controller: AbortController;
  /** Set by `notifications/cancelled`: the client no longer wants this request, so stop its call too. */
  cancelledByClient: boolean;
}

const defaultConcurrency = 4;
/**
 * Open `tools/call` requests past which the server stops reading its input until some finish: the
 * client's writes then block, instead of the queue growing without bound.
 */
const maximumOpenCalls = 1024;

const defaultInstructions =
  'Every tool call goes through toolgate: an allowlist, input validation, idempotency keys and, for ' +
  'some tools, a human approval. A result that starts with "Error <CODE>:" says whether retrying can ' +
  'help and what to do instead. A result that starts with "Pending:" is not an error: the call waits ' +
  'for a human, so do not call the tool again for the same action.';

/**
 * What the handlers of one server share: its settings, the served tools, the open `tools/call`
 * requests and the state of its streams.
 */
interface McpSession {
  readonly input: NodeJS.ReadableStream;
  readonly output: NodeJS.WritableStream;
  readonly log: (event: McpLogEvent) => void;
  readonly maximumBytes: number;
  readonly options: McpServerOptions;
  readonly tools: readonly McpToolEntry[];
  /** The tools this server offers. */
  readonly catalog: ToolCatalog;
  /** Every tool of the configured catalog, offered or not. */
  readonly allContracts: ToolCatalog;
  readonly limiter: Limiter;
  readonly runOptions: RunToolCallsOptions;
  readonly open: Map<string, OpenRequest>;
  closed: boolean;
  ended: boolean;
  /** Messages read whose answer (or decision not to answer) is still to come. */
  unanswered: number;
  pausedForBacklog: boolean;
  readonly done: Promise<void>;
  readonly resolveDone: () => void;
}

/**
 * Serves a toolgate catalog as an MCP server: JSON-RPC 2.0, one message per line, over a pair of
 * streams (stdin and stdout by default).
 *
 * `tools/list` lists the catalog with the same strict JSON Schema the Anthropic and OpenAI
 * adapters send. `tools/call` runs through the same path as those adapters ({@link runOneToolCall}:
 * gates, key, record) and answers with the same model-safe text; a call that waits for a human
 * is answered at once as pending (not an error), unless `approvalMode: 'wait'` is chosen.
 * Requests are handled concurrently, at most `maxConcurrency` tool calls at once (default 4), and
 * answered as each finishes, so answers may come out of order: JSON-RPC matches them by id.
 */
export function serveMcp(options: McpServerOptions): McpServer {
  const session = createSession(options);
  const { input, output, log } = session;
  const reader = createLineReader(
    session.maximumBytes,
    (line) => handleLine(session, line),
    () => refuseLongMessage(session),
  );

  const onData = (chunk: Buffer | string): void => reader.push(chunk);
  const onEnd = (): void => {
    reader.end();
    session.ended = true;
    finishIfIdle(session);
  };

  const close = async (): Promise<void> => {
    if (session.closed) return session.done;
    session.closed = true;
    input.removeListener('data', onData);
    input.removeListener('end', onEnd);
    input.pause();
    for (const request of session.open.values()) request.controller.abort();
    session.open.clear();
    session.resolveDone();
    return session.done;
  };

  input.on('data', onData);
  input.on('end', onEnd);
  input.on('error', (error: unknown) => {
    log({ level: 'error', message: 'The input stream failed; the MCP server stops.', error });
    void close();
  });
  output.on('error', (error: unknown) => {
    // The client went away (EPIPE): nobody can read answers any more.
    log({ level: 'warn', message: 'The output stream failed; the MCP server stops.', error });
    void close();
  });
  input.resume();

  return { done: session.done, close };
}

function createSession(options: McpServerOptions): McpSession {
  const contracts = selectContracts(options.catalog, options.include ? { include: options.include } : {});
  // Built once: a contract that cannot be expressed in strict form fails here, at start-up.
  const tools = contracts.map((contract) => describeTool(contract));
  const catalog = createCatalog(contracts);
  let resolveDone: () => void = () => undefined;
  const done = new Promise<void>((resolve) => {
    resolveDone = resolve;
  });
  return {
    input: options.input ?? process.stdin,
    output: options.output ?? process.stdout,
    log: options.log ?? (() => undefined),
    maximumBytes: Math.max(1, Math.floor(options.maximumMessageBytes ?? defaultMaximumMessageBytes)),
    options,
    tools,
    catalog,
    allContracts: createCatalog(selectContracts(options.catalog)),
    limiter: createLimiter(concurrencyLimit(options.maxConcurrency, defaultConcurrency)),
    // The client is replaced per request (see cancellableCaller); the other options reach
    // runOneToolCall as they are, so keys, approval mode and onError work as in the other adapters.
    runOptions: {
      ...options,
      catalog,
      noWorkerAfterMs: options.noWorkerAfterMs ?? defaultMcpNoWorkerAfterMs,
    },
    open: new Map(),
    closed: false,
    ended: false,
    unanswered: 0,
    pausedForBacklog: false,
    done,
    resolveDone,
  };
}

// --- Answers and the server's lifecycle ----------------------------------------------------------

function send(session: McpSession, message: JsonRpcResponse | JsonRpcResponse[]): void {
  if (session.closed) return;
  session.output.write(`${JSON.stringify(message)}\n`);
}

function resultResponse(id: RequestId, result: unknown): JsonRpcResponse {
  return { jsonrpc: '2.0', id, result };
}

function errorResponse(
  id: RequestId | null,
  code: McpErrorCode,
  message: string,
  data?: unknown,
): JsonRpcResponse {
  return { jsonrpc: '2.0', id, error: { code, message, ...(data === undefined ? {} : { data }) } };
}

/** Resumes reading once the backlog has drained, and settles `done` once nothing is left to answer. */
function finishIfIdle(session: McpSession): void {
  if (session.pausedForBacklog && session.open.size < maximumOpenCalls && !session.closed) {
    session.pausedForBacklog = false;
    session.input.resume();
  }
  if ((session.ended && session.unanswered === 0) || session.closed) session.resolveDone();
}

/** Sends an answer when it is ready; the server is done only once every answer is out. */
function answerLater(
  session: McpSession,
  answer: Promise<JsonRpcResponse | JsonRpcResponse[] | undefined>,
): void {
  session.unanswered++;
  void answer
    .then((ready) => {
      if (ready) send(session, ready);
    })
    .catch((error: unknown) => session.log({ level: 'error', message: 'Could not write an answer.', error }))
    .finally(() => {
      session.unanswered--;
      finishIfIdle(session);
    });
}

// --- Messages ------------------------------------------------------------------------------------

function handleLine(session: McpSession, line: string): void {
  const text = line.endsWith('\r') ? line.slice(0, -1) : line;
  if (text.trim() === '') return;
  let message: unknown;
  try {
    message = JSON.parse(text);
  } catch {
    send(session, errorResponse(null, McpErrorCode.parseError, 'The line is not valid JSON.'));
    return;
  }
  if (!Array.isArray(message)) {
    answerLater(session, settle(session, message));
    return;
  }
  // A JSON-RPC batch (MCP 2025-03-26): one array of answers, once every request in it is done.
  if (message.length === 0) {
    send(session, errorResponse(null, McpErrorCode.invalidRequest, 'An empty batch is not a request.'));
    return;
  }
  answerLater(
    session,
    Promise.all(message.map((item) => settle(session, item))).then((answers) => {
      const present = answers.filter((answer): answer is JsonRpcResponse => answer !== undefined);
      return present.length > 0 ? present : undefined;
    }),
  );
}

/** handleMessage, with any bug turned into an internal error answer instead of a crash. */
async function settle(session: McpSession, message: unknown): Promise<JsonRpcResponse | undefined> {
  try {
    return await handleMessage(session, message);
  } catch (error) {
    session.log({ level: 'error', message: 'A request failed inside the MCP server.', error });
    const id = isPlainObject(message) ? message['id'] : undefined;
    const answerId = typeof id === 'string' || typeof id === 'number' ? id : null;
    return errorResponse(answerId, McpErrorCode.internalError, 'The server could not handle this request.');
  }
}

/** Answers one request object; undefined means no answer (a notification, a cancelled request). */
async function handleMessage(session: McpSession, message: unknown): Promise<JsonRpcResponse | undefined> {
  if (!isPlainObject(message)) {
    return errorResponse(null, McpErrorCode.invalidRequest, 'A message must be a JSON-RPC 2.0 object.');
  }
  if (!Object.hasOwn(message, 'id')) {
    handleMessageWithoutId(session, message);
    return undefined;
  }
  const id = message['id'];
  const answerId = isRequestId(id) ? id : null;
  if (message['jsonrpc'] !== '2.0') {
    return errorResponse(answerId, McpErrorCode.invalidRequest, 'The message must have "jsonrpc": "2.0".');
  }
  if (isResponse(message)) {
    // A response: this server never sends requests, so nothing waits for one.
    session.log({
      level: 'warn',
      message: `Ignored a response to a request this server never sent (id ${String(id)}).`,
    });
    return undefined;
  }
  const method = message['method'];
  if (typeof method !== 'string') {
    return errorResponse(answerId, McpErrorCode.invalidRequest, 'The message needs a "method" string.');
  }
  if (answerId === null) {
    return errorResponse(null, McpErrorCode.invalidRequest, 'A request id must be a string or a number.');
  }
  const params = message['params'];
  if (params !== undefined && (params === null || typeof params !== 'object')) {
    return errorResponse(answerId, McpErrorCode.invalidRequest, '"params" must be an object when given.');
  }
  if (params !== undefined && !isPlainObject(params)) {
    return errorResponse(answerId, McpErrorCode.invalidParams, '"params" must be an object, not an array.');
  }
  return answerRequest(session, answerId, method, params ?? {});
}

/**
 * A notification is never answered; nor is a malformed message without an id, which no client
 * could match an answer to anyway.
 */
function handleMessageWithoutId(session: McpSession, message: Record<string, unknown>): void {
  const method = message['method'];
  if (message['jsonrpc'] === '2.0' && typeof method === 'string') {
    handleNotification(session, method, message['params']);
  } else {
    session.log({ level: 'warn', message: 'Ignored a malformed message without an id.' });
  }
}

function handleNotification(session: McpSession, method: string, params: unknown): void {
  if (method !== 'notifications/cancelled') return;
  const requestId = isPlainObject(params) ? params['requestId'] : undefined;
  if (typeof requestId !== 'string' && typeof requestId !== 'number') return;
  const request = session.open.get(requestKey(requestId));
  // An unknown or finished request: the answer crossed the cancel, which the protocol allows.
  if (!request) return;
  request.cancelledByClient = true;
  request.controller.abort();
  session.log({ level: 'info', message: `Request ${JSON.stringify(requestId)} cancelled by the client.` });
}

// --- Requests ------------------------------------------------------------------------------------

async function answerRequest(
  session: McpSession,
  id: RequestId,
  method: string,
  params: Record<string, unknown>,
): Promise<JsonRpcResponse | undefined> {
  switch (method) {
    case 'initialize':
      return answerInitialize(session, id, params);
    case 'ping':
      return resultResponse(id, {});
    case 'tools/list':
      // One page: a catalog is small, so there is never a nextCursor.
      return resultResponse(id, { tools: session.tools });
    case 'tools/call':
      return answerToolsCall(session, id, params);
    default:
      return errorResponse(
        id,
        McpErrorCode.methodNotFound,
        `There is no method ${JSON.stringify(method.slice(0, 64))}.`,
      );
  }
}

function answerInitialize(
  session: McpSession,
  id: RequestId,
  params: Record<string, unknown>,
): JsonRpcResponse {
  const requested = params['protocolVersion'];
  if (typeof requested !== 'string') {
    return errorResponse(
      id,
      McpErrorCode.invalidParams,
      'initialize needs params.protocolVersion, a string.',
      {
        supported: mcpProtocolVersions,
      },
    );
  }
  const protocolVersion = (mcpProtocolVersions as readonly string[]).includes(requested)
    ? requested
    : mcpProtocolVersions[0];
  return resultResponse(id, {
    protocolVersion,
    capabilities: { tools: { listChanged: false } },
    serverInfo: { name: 'toolgate', version: toolgateVersion },
    instructions: session.options.instructions ?? defaultInstructions,
  });
}

/** Runs one `tools/call` as an open request, so the client can cancel it by id until it is answered. */
async function answerToolsCall(
  session: McpSession,
  id: RequestId,
  params: Record<string, unknown>,
): Promise<JsonRpcResponse | undefined> {
  const key = requestKey(id);
  if (session.open.has(key)) {
    return errorResponse(
      id,
      McpErrorCode.invalidRequest,
      'A request with this id is still open; use a new id for each request.',
    );
  }
  const request: OpenRequest = { controller: new AbortController(), cancelledByClient: false };
  session.open.set(key, request);
  if (session.open.size >= maximumOpenCalls && !session.pausedForBacklog) {
    session.pausedForBacklog = true;
    session.input.pause();
  }
  try {
    const answer = await callTool(session, id, params, request);
    if (answer === undefined || request.controller.signal.aborted) return undefined;
    if ('code' in answer) return errorResponse(id, answer.code, answer.message);
    return resultResponse(id, answer);
  } finally {
    if (session.open.get(key) === request) session.open.delete(key);
    finishIfIdle(session);
  }
}

async function callTool(
  session: McpSession,
  id: RequestId,
  params: Record<string, unknown>,
  request: OpenRequest,
): Promise<McpToolResult | JsonRpcError | undefined> {
  const name = params['name'];
  if (typeof name !== 'string') {
    return {
      code: McpErrorCode.invalidParams,
      message: 'tools/call needs params.name, a tool name string.',
    };
  }
  // Left out means no arguments; null is not an object, so it is refused like any other non-object.
  const argumentsValue = params['arguments'] === undefined ? {} : params['arguments'];
  if (!isPlainObject(argumentsValue)) {
    return {
      code: McpErrorCode.invalidParams,
      message: 'tools/call params.arguments must be a JSON object (or be left out).',
    };
  }
  // A catalog tool this server does not offer is refused here: the worker's allowlist may well
  // allow it for other callers. Names the catalog does not know go to toolgate like the other
  // adapters send them, so the denial is recorded where operators look for it.
  if (lookupTool(session.allContracts, name) && !lookupTool(session.catalog, name)) {
    return toolResult({
      isError: true,
      text: modelErrorText(
        'NOT_ALLOWED',
        `This server does not offer a tool named ${JSON.stringify(name.slice(0, 64))}.`,
      ),
    });
  }
  const signal = request.controller.signal;
  const outcome = await session.limiter(signal, () =>
    // Once the client cancels, the answer is dropped (the call goes on, cancelled or not).
    untilAborted(
      runOneToolCall(
        { id: String(id), name, input: argumentsValue },
        {
          ...session.runOptions,
          client: cancellableCaller(session.options.client, signal, request, session.log),
        },
      ),
      signal,
    ).catch((error: unknown) => {
      if (signal.aborted) return undefined;
      throw error;
    }),
  );
  if (outcome?.state === 'pending' && outcome.record === undefined && outcome.callId) {
    session.log({
      level: 'warn',
      message:
        `No worker picked up ${outcome.callId} within ${Math.round((session.runOptions.noWorkerAfterMs ?? 0) / 1000)} s; ` +
        'answered it as pending. The call stays open and runs when a worker starts on its task queue.',
    });
  }
  return outcome === undefined ? undefined : toolResult(outcome);
}

// --- Framing: newline-delimited JSON, with a byte limit per line ---------------------------------

/**
 * Splits a byte stream into lines. A line is refused as soon as it is too long, not when it ends:
 * it may never end. The rest of it is dropped unread, so memory stays bounded by the limit.
 */
function createLineReader(
  maximumBytes: number,
  onLine: (line: string) => void,
  onTooLong: () => void,
): { push(chunk: Buffer | string): void; end(): void } {
  let pieces: Buffer[] = [];
  let pieceBytes = 0;
  let skipping = false;

  const clear = (): void => {
    pieces = [];
    pieceBytes = 0;
  };
  const take = (bytes: Buffer): void => {
    if (skipping || bytes.length === 0) return;
    if (pieceBytes + bytes.length > maximumBytes) {
      skipping = true;
      clear();
      onTooLong();
      return;
    }
    // Copied: a stream may reuse its chunk's memory once this handler returns.
    pieces.push(Buffer.from(bytes));
    pieceBytes += bytes.length;
  };
  const line = (): string => Buffer.concat(pieces, pieceBytes).toString('utf8');

  return {
    push(chunk) {
      const buffer = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
      let start = 0;
      while (start <= buffer.length) {
        const newline = buffer.indexOf(0x0a, start);
        take(buffer.subarray(start, newline === -1 ? buffer.length : newline));
        if (newline === -1) break;
        if (!skipping) onLine(line());
        clear();
        skipping = false;
        start = newline + 1;
      }
    },
    end() {
      // A last message without its newline is still read.
      if (!skipping && pieceBytes > 0) onLine(line());
      clear();
    },
  };
}

function refuseLongMessage(session: McpSession): void {
  const { maximumBytes } = session;
  session.log({ level: 'warn', message: `Refused a message longer than ${maximumBytes} bytes.` });
  send(
    session,
    errorResponse(
      null,
      McpErrorCode.invalidRequest,
      `The message is longer than ${maximumBytes} bytes and was not read. Send smaller messages.`,
      { maximumMessageBytes: maximumBytes },
    ),
  );
}

/** The MCP tool entry for a contract: the same strict schema and description the other adapters send. */
function describeTool(contract: ToolContract): McpToolEntry {
  return {
    name: contract.name,
    description: modelDescription(contract),
    inputSchema: strictInputSchema(contract),
    annotations: {
      readOnlyHint: contract.tier === 'readonly',
      destructiveHint: contract.tier === 'irreversible' || contract.tier === 'approval',
    },
  };
}

function toolResult(
  outcome: Pick<ToolCallOutcome, 'isError' | 'text'> & Partial<ToolCallOutcome>,
): McpToolResult {
  const runId = outcome.runId ?? outcome.record?.runId;
  return {
    content: [{ type: 'text', text: outcome.text }],
    isError: outcome.isError,
    ...(outcome.state
      ? {
          _meta: {
            ...(outcome.callId ? { 'toolgate/callId': outcome.callId } : {}),
            ...(outcome.callId && runId ? { 'toolgate/runId': runId } : {}),
            'toolgate/state': outcome.state,
          },
        }
      : {}),
  };
}

/**
 * The client for one `tools/call`. When the MCP client cancels the request, the toolgate call it
 * started is cancelled too (a run it merely joined belongs to someone else and is left alone).
 */
function cancellableCaller(
  client: McpServerOptions['client'],
  signal: AbortSignal,
  request: OpenRequest,
  log: (event: McpLogEvent) => void,
): ToolgateCaller {
  return {
    start: async (...args) => {
      const started = await client.start(...args);
      const cancel = client.cancel?.bind(client);
      if (cancel && started.disposition === 'started' && started.callId !== '') {
        const cancelCall = (): void => {
          if (!request.cancelledByClient) return;
          leftForItsApprover(client, started.callId)
            .then((waiting) => {
              if (waiting) {
                log({
                  level: 'info',
                  message: `${started.callId} waits for a human decision: a client that stops waiting is not a "no", so it stays waiting. Cancel it yourself (toolgate cancel) if nobody should decide it.`,
                });
                return;
              }
              return cancel(started.callId).then(() =>
                log({
                  level: 'info',
                  message: `Cancel of ${started.callId} sent; its record says how it ended.`,
                }),
              );
            })
            .catch((error: unknown) =>
              log({ level: 'error', message: `Could not cancel ${started.callId}.`, error }),
            );
        };
        if (signal.aborted) cancelCall();
        else signal.addEventListener('abort', cancelCall, { once: true });
      }
      return started;
    },
    // Every argument is passed on, whatever the adapters' path adds to these calls.
    result: (...args) => client.result(...args),
    get: (...args) => client.get(...args),
    ...(client.hasLiveWorker
      ? {
          hasLiveWorker: (...args: Parameters<NonNullable<ToolgateCaller['hasLiveWorker']>>) =>
            client.hasLiveWorker!(...args),
        }
      : {}),
  };
}

/**
 * Whether the call belongs to the humans now: an approval-tier call that has not run yet (its gates,
 * or its wait for a decision). A client's cancel of such a call leaves it waiting.
 */
async function leftForItsApprover(client: McpServerOptions['client'], callId: string): Promise<boolean> {
  const record = await client.get(callId);
  return (
    record?.tier === 'approval' && (record.status === 'pending' || record.status === 'awaiting_approval')
  );
}

/**
 * At most `limit` jobs at once; the rest wait in arrival order. A job whose signal aborts while it
 * waits leaves the queue without running, and resolves undefined.
 */
function createLimiter(limit: number): Limiter {
  let running = 0;
  const waiting = new Set<() => void>();
  return async (signal, work) => {
    if (signal.aborted) return undefined;
    if (running >= limit) {
      const admitted = await new Promise<boolean>((resolve) => {
        const admit = (): void => {
          signal.removeEventListener('abort', onAbort);
          resolve(true);
        };
        const onAbort = (): void => {
          waiting.delete(admit);
          resolve(false);
        };
        waiting.add(admit);
        signal.addEventListener('abort', onAbort, { once: true });
      });
      if (!admitted) return undefined;
    } else {
      running++;
    }
    try {
      if (signal.aborted) return undefined;
      return await work();
    } finally {
      // A freed slot passes straight to the next waiter, so a newcomer cannot slip in between.
      const next = waiting.values().next();
      if (next.done) running--;
      else {
        waiting.delete(next.value);
        next.value();
      }
    }
  };
}

function requestKey(id: RequestId): string {
  // "1" and 1 are different ids.
  return typeof id === 'string' ? `s:${id}` : `n:${id}`;
}

function isRequestId(value: unknown): value is RequestId {
  return typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value));
}

/** A message with no method that carries a result or an error: an answer, not a request. */
function isResponse(message: Record<string, unknown>): boolean {
  return (
    message['method'] === undefined && (Object.hasOwn(message, 'result') || Object.hasOwn(message, 'error'))
  );
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
