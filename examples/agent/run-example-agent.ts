/**
 * `npm run example:agent`: the resumable agent, end to end, with a crash in the middle.
 *
 * 1. Starts an embedded Temporal dev server (or uses TEMPORAL_ADDRESS) and a worker process.
 * 2. Starts the agent: a readonly read_config call, then an approval-tier transfer_funds call.
 * 3. SIGKILLs the worker while the transfer waits for approval, and starts a new worker process.
 * 4. Approves the transfer as `alice` through ToolgateClient.approve.
 * 5. Prints the conversation. Exits 0 only if the agent finished and the ledger holds one transfer.
 *
 * With ANTHROPIC_API_KEY set, the worker asks the real Anthropic API instead of the scripted model.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { ContentBlockParam, MessageParam } from '@anthropic-ai/sdk/resources/messages';
import { Client, Connection } from '@temporalio/client';
import { createApprovalSigner, loadOrCreateApprovalKeys } from '../../src/client/approval-signer.ts';
import { ToolgateClient } from '../../src/client/toolgate-client.ts';
import type { CallContext } from '../../src/contracts/call-record.ts';
import { type DevServer, startDevServer } from '../../src/dev/index.ts';
import { bundleToolgateWorkflows } from '../../src/worker/create-worker.ts';
import { exampleCatalog } from '../contracts.ts';
import { exampleToolPaths } from '../tools.ts';
import { type ExampleWorkerSettings, workerReadyLine, workerSettingsToEnv } from './example-settings.ts';
import type { ExampleAgentInput, ExampleAgentState } from './workflows.ts';

export interface RunExampleAgentOptions {
  /** Where state lives. Default: a fresh temporary directory, removed afterwards. */
  readonly dataDir?: string;
  /** An existing Temporal server; default: start an embedded dev server in the data dir. */
  readonly temporalAddress?: string;
  readonly log?: (line: string) => void;
}

export interface ExampleAgentReport {
  readonly finished: boolean;
  readonly conversation: MessageParam[];
  readonly transferCallId: string;
  /** Lines in the ledger for this run's transfer reference. */
  readonly transfers: number;
  /** Times the transfer_funds implementation ran. */
  readonly transferExecutions: number;
  readonly killedWorkerPid: number;
  readonly ok: boolean;
}

const workerFile = fileURLToPath(new URL('./example-worker.ts', import.meta.url));
const workflowsFile = fileURLToPath(new URL('./workflows.ts', import.meta.url));
const context: CallContext = { tenant: 'example', principal: 'payments-agent', principalKind: 'agent' };

/** Runs the example end to end and reports what happened. Stops every process it started. */
export async function runExampleAgent(options: RunExampleAgentOptions = {}): Promise<ExampleAgentReport> {
  const log = options.log ?? ((line: string) => process.stdout.write(`${line}\n`));
  const temporary = options.dataDir === undefined;
  const dataDir = options.dataDir
    ? resolve(options.dataDir)
    : await mkdtemp(join(tmpdir(), 'toolgate-example-'));
  await mkdir(dataDir, { recursive: true });
  const workers: ChildProcess[] = [];
  let server: DevServer | undefined;
  let connection: Connection | undefined;
  try {
    let address = options.temporalAddress ?? process.env['TEMPORAL_ADDRESS'];
    if (!address) {
      log('Starting an embedded Temporal dev server…');
      server = await startDevServer({
        dbFile: join(dataDir, 'temporal.db'),
        grpcPort: 0,
        uiPort: 0,
        headless: true,
        onProgress: () => undefined,
      });
      address = server.address;
    }
    const paths = exampleToolPaths(join(dataDir, 'data'));
    await mkdir(paths.dataDir, { recursive: true });
    await writeFile(paths.configFile, JSON.stringify({ region: 'eu-west', retries: 3 }));
    const keys = await loadOrCreateApprovalKeys(join(dataDir, 'keys'));

    log('Bundling the agent workflows once for both worker processes…');
    const bundleFile = join(dataDir, 'workflow-bundle.js');
    await writeFile(bundleFile, (await bundleToolgateWorkflows(workflowsFile)).code);
    const settings: ExampleWorkerSettings = {
      address,
      namespace: 'default',
      taskQueue: `example-agent-${randomUUID().slice(0, 8)}`,
      dataDir,
      bundleFile,
    };

    const first = await startWorkerProcess(settings, workers);
    log(`Worker 1 is running (pid ${first.pid}).`);

    connection = await Connection.connect({ address });
    const temporal = new Client({ connection });
    const client = new ToolgateClient({
      client: temporal,
      taskQueue: settings.taskQueue,
      catalog: exampleCatalog,
      signer: createApprovalSigner(keys.privateKey),
    });

    const reference = `INV-${randomUUID().slice(0, 8)}`;
    const input: ExampleAgentInput = {
      context,
      userMessage: `Please pay invoice ${reference}: 1250 EUR to our supplier.`,
    };
    const agent = await temporal.workflow.start('exampleAgent', {
      workflowId: `example-agent-${reference}`,
      taskQueue: settings.taskQueue,
      args: [input],
    });
    log(`Agent started: ${agent.workflowId}`);

    const transferCallId = await waitFor('the transfer to wait for approval', 60_000, async () => {
      const state = await agent.query<ExampleAgentState>('agentState').catch(() => undefined);
      const callId = state?.waitingOn[0];
      if (!callId) return undefined;
      const record = await client.get(callId).catch(() => undefined);
      return record?.status === 'awaiting_approval' ? callId : undefined;
    });
    log(`The transfer waits for approval: ${transferCallId}`);

    log(`Crashing worker 1 with SIGKILL (pid ${first.pid})…`);
    await killProcess(first);
    const second = await startWorkerProcess(settings, workers);
    log(`Worker 2 is running (pid ${second.pid}).`);

    const decision = await client.approve(transferCallId, {
      approver: 'alice',
      comment: 'Invoice checked against the purchase order.',
    });
    log(`Approval by alice: ${decision.state}${decision.reason ? ` (${decision.reason})` : ''}`);

    const state = (await withTimeout(agent.result(), 90_000, 'the agent to finish')) as ExampleAgentState;
    log('');
    log('Conversation:');
    for (const line of describeConversation(state.conversation)) log(line);
    log('');

    const ledger = await readJsonLines(paths.ledgerFile);
    const executions = await readJsonLines(paths.executionsFile);
    const transfers = ledger.filter((line) => line['reference'] === reference).length;
    const transferExecutions = executions.filter((line) => line['tool'] === 'transfer_funds').length;
    const ok = state.finished && transfers === 1 && transferExecutions === 1;
    log(
      `Agent finished: ${state.finished}; ledger entries for ${reference}: ${transfers}; transfer runs: ${transferExecutions}.`,
    );
    log(ok ? 'OK: one approval-tier call, run exactly once, across a worker crash.' : 'FAILED: see above.');
    return {
      finished: state.finished,
      conversation: state.conversation,
      transferCallId,
      transfers,
      transferExecutions,
      killedWorkerPid: first.pid ?? -1,
      ok,
    };
  } finally {
    for (const worker of workers) await stopProcess(worker);
    await connection?.close();
    await server?.stop();
    if (temporary) await rm(dataDir, { recursive: true, force: true });
  }
}

/** One line per message, with tool calls and results shown compactly. */
export function describeConversation(conversation: readonly MessageParam[]): string[] {
  const lines: string[] = [];
  for (const message of conversation) {
    if (typeof message.content === 'string') {
      lines.push(`${message.role}: ${message.content}`);
      continue;
    }
    for (const block of message.content) {
      const line = describeBlock(message.role, block);
      if (line !== undefined) lines.push(line);
    }
  }
  return lines;
}

/** The line for one block of a message; undefined for the kinds of block the summary leaves out. */
function describeBlock(role: MessageParam['role'], block: ContentBlockParam): string | undefined {
  switch (block.type) {
    case 'text':
      return `${role}: ${block.text}`;
    case 'tool_use':
      return `${role}: [tool_use ${block.name} ${JSON.stringify(block.input)}]`;
    case 'tool_result': {
      const text = typeof block.content === 'string' ? block.content : JSON.stringify(block.content);
      return `${role}: [tool_result${block.is_error ? ' error' : ''}] ${text}`;
    }
    default:
      return undefined;
  }
}

async function startWorkerProcess(
  settings: ExampleWorkerSettings,
  workers: ChildProcess[],
): Promise<ChildProcess> {
  const loader = resolveTsxLoader();
  const child = spawn(process.execPath, ['--import', loader, workerFile], {
    env: { ...process.env, ...workerSettingsToEnv(settings) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  workers.push(child);
  let errorOutput = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    errorOutput = (errorOutput + chunk.toString()).slice(-4000);
  });
  await new Promise<void>((resolveReady, rejectReady) => {
    const timer = setTimeout(() => rejectReady(new Error('The worker did not start within 60 s.')), 60_000);
    let output = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes(workerReadyLine)) {
        clearTimeout(timer);
        resolveReady();
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      rejectReady(new Error(`The worker exited early (code ${code}): ${errorOutput.trim()}`));
    });
  });
  return child;
}

function resolveTsxLoader(): string {
  try {
    return import.meta.resolve('tsx');
  } catch {
    return 'tsx';
  }
}

function killProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolveExit) => {
    child.once('exit', () => resolveExit());
    child.kill('SIGKILL');
  });
}

async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolveExit) => child.once('exit', () => resolveExit()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

async function waitFor<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const value = await probe();
    if (value !== undefined) return value;
    await new Promise((resolveSleep) => setTimeout(resolveSleep, 200));
  }
  throw new Error(`Timed out waiting for ${what}.`);
}

function withTimeout<T>(promise: Promise<T>, timeoutMs: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`Timed out waiting for ${what}.`)), timeoutMs);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

async function readJsonLines(file: string): Promise<Array<Record<string, unknown>>> {
  try {
    return (await readFile(file, 'utf8'))
      .split('\n')
      .filter((line) => line.length > 0)
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  } catch {
    return [];
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  runExampleAgent()
    .then((report) => {
      process.exitCode = report.ok ? 0 : 1;
    })
    .catch((error: unknown) => {
      process.stderr.write(`example:agent failed: ${error instanceof Error ? error.stack : String(error)}\n`);
      process.exitCode = 1;
    });
}
