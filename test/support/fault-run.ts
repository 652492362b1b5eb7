/**
 * What every fault test file shares: a work folder holding the prebuilt workflow bundle that worker
 * processes load, a client of the suite's Temporal server, and the child processes a test started,
 * killed after each test (a stopped one is continued first, so that it can take its SIGKILL).
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { afterAll, afterEach, beforeAll, inject } from 'vitest';
import { exampleCatalog } from '../../examples/contracts.ts';
import { createApprovalSigner, loadOrCreateApprovalKeys } from '../../src/client/approval-signer.ts';
import { ToolgateClient } from '../../src/client/toolgate-client.ts';
import { installRuntimeLogging } from '../../src/worker/runtime-logging.ts';
import { type ChildHandle, isProcessRunning, type SpawnedChild, spawnWorker } from './child-processes.ts';
import type { WorkerProcessConfig } from './worker-process.ts';

export interface FaultRun {
  workDir: string;
  bundleFile: string;
  temporal: Client;
  readonly children: ChildHandle[];
}

/** Registers the file's hooks and returns what they set up (filled in before the first test). */
export function useFaultRun(prefix: string): FaultRun {
  let connection: Connection | undefined;
  const run = { workDir: '', bundleFile: '', temporal: undefined, children: [] } as unknown as FaultRun;
  beforeAll(async () => {
    installRuntimeLogging();
    run.workDir = await mkdtemp(join(tmpdir(), prefix));
    run.bundleFile = join(run.workDir, 'workflow-bundle.js');
    await writeFile(run.bundleFile, inject('workflowBundle'));
    connection = await Connection.connect({ address: inject('temporalAddress') });
    run.temporal = new Client({ connection });
  });
  afterEach(async () => {
    for (const child of run.children) if (isProcessRunning(child.pid)) process.kill(child.pid, 'SIGCONT');
    await Promise.all(run.children.splice(0).map((child) => child.kill()));
  });
  afterAll(async () => {
    await connection?.close();
    if (run.workDir) await rm(run.workDir, { recursive: true, force: true });
  });
  return run;
}

/**
 * One test's own task queue and data folder: a toolgate client for the example tools, the config
 * its worker processes share, a way to start one, and the example tools' log lines read from disk.
 */
export async function faultSetup(run: FaultRun, prefix: string, extra: Partial<WorkerProcessConfig> = {}) {
  const taskQueue = `${prefix}-${randomUUID()}`;
  const dataDir = join(run.workDir, taskQueue);
  const keysDir = join(dataDir, 'keys');
  const keys = await loadOrCreateApprovalKeys(keysDir);
  const client = new ToolgateClient({
    client: run.temporal,
    taskQueue,
    catalog: exampleCatalog,
    signer: createApprovalSigner(keys.privateKey),
  });
  const config: WorkerProcessConfig = {
    address: inject('temporalAddress'),
    taskQueue,
    dataDir,
    keysDir,
    bundleFile: run.bundleFile,
    ...extra,
  };
  const startWorker = async (more: Partial<WorkerProcessConfig> = {}): Promise<SpawnedChild> => {
    const child = await spawnWorker({ ...config, ...more });
    run.children.push(child);
    return child;
  };
  const lines = async (file: string) =>
    (await readFile(join(dataDir, file), 'utf8').catch(() => ''))
      .split('\n')
      .filter((line) => line.length > 0)
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  return { taskQueue, dataDir, client, startWorker, lines };
}
