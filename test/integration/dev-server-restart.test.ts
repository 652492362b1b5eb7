import { execFile, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { searchAttributeKeys } from '../../src/contracts/search-attributes.ts';
import { type DevServer, type FoundCli, findTemporalCli, startDevServer } from '../../src/dev/index.ts';
import { findFreePort } from '../../src/dev/ports.ts';
import { toolgateSearchAttributes } from '../../src/dev/search-attributes.ts';
import { isProcessRunning } from '../support/child-processes.ts';
import { waitFor } from '../support/wait.ts';

const workflowsPath = fileURLToPath(new URL('../support/workflows/restart-probe.ts', import.meta.url));
const toolgateAttributeNames: string[] = toolgateSearchAttributes.map((attribute) => attribute.name);

let cli: FoundCli;
let workDir: string;
const startedServers: DevServer[] = [];
const openConnections: Connection[] = [];
const progress: string[] = [];

beforeAll(async () => {
  cli = await findTemporalCli();
  workDir = await mkdtemp(join(tmpdir(), 'toolgate-dev-server-'));
});

afterAll(async () => {
  await Promise.all(openConnections.map((connection) => connection.close()));
  await Promise.allSettled(startedServers.map((server) => server.stop()));
  // stop() should already have ended every process; anything that survived is killed by pid so no
  // server outlives the run, and then reported.
  const survivors = startedServers
    .filter((server) => isProcessRunning(server.pid))
    .map((server) => server.pid);
  for (const pid of survivors) {
    process.kill(pid, 'SIGKILL');
  }
  expect(survivors).toEqual([]);
  await rm(workDir, { recursive: true, force: true });
  console.info(progress.join('\n'));
});

async function start(dbFile: string, grpcPort: number): Promise<{ server: DevServer; elapsed: number }> {
  const startedAt = performance.now();
  const server = await startDevServer({
    dbFile,
    grpcPort,
    headless: true,
    cli,
    readyTimeoutMs: 120_000,
    onProgress: (line) => progress.push(line),
  });
  startedServers.push(server);
  return { server, elapsed: Math.round(performance.now() - startedAt) };
}

async function connect(address: string): Promise<{ connection: Connection; client: Client }> {
  const connection = await Connection.connect({ address });
  openConnections.push(connection);
  return { connection, client: new Client({ connection }) };
}

async function listCustomAttributeNames(connection: Connection, namespace: string): Promise<string[]> {
  const response = await connection.operatorService.listSearchAttributes({ namespace });
  return Object.keys(response.customAttributes ?? {});
}

describe('embedded dev server', () => {
  it('keeps a completed workflow and the search attributes across a SIGKILL and restart', async () => {
    const dbFile = join(workDir, 'restart', 'temporal.db');
    const first = await start(dbFile, 17_433);
    expect(first.server.address).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(first.server.uiUrl).toBeUndefined();
    expect(first.server.logFile).toBe(join(workDir, 'restart', 'temporal-server.log'));

    const { client } = await connect(first.server.address);
    const taskQueue = `restart-probe-${randomUUID()}`;
    const workflowId = `restart-probe-${randomUUID()}`;
    const handle = await client.workflow.start('restartProbe', {
      taskQueue,
      workflowId,
      args: ['before-crash'],
    });

    const workerConnection = await NativeConnection.connect({ address: first.server.address });
    try {
      const worker = await Worker.create({ connection: workerConnection, taskQueue, workflowsPath });
      expect(await worker.runUntil(handle.result())).toBe('probe:before-crash');
    } finally {
      await workerConnection.close();
    }

    await first.server.kill();
    expect(isProcessRunning(first.server.pid)).toBe(false);

    // Same port when still free, so the restart looks like the same server to anyone configured for it.
    const port = Number(first.server.address.split(':')[1]);
    const second = await start(dbFile, port);
    expect(second.server.pid).not.toBe(first.server.pid);
    expect(second.server.dbFile).toBe(first.server.dbFile);

    const restarted = await connect(second.server.address);
    const sameHandle = restarted.client.workflow.getHandle(workflowId);
    expect(await sameHandle.result()).toBe('probe:before-crash');
    expect((await sameHandle.describe()).status.name).toBe('COMPLETED');
    expect(await listCustomAttributeNames(restarted.connection, 'default')).toEqual(
      expect.arrayContaining(toolgateAttributeNames),
    );

    progress.push(`measured: first start ${first.elapsed} ms, restart after SIGKILL ${second.elapsed} ms`);
  });

  it('creates the search attributes on an existing DB file that lacks them', async () => {
    const dbFile = join(workDir, 'bare', 'temporal.db');
    await createBareDatabase(dbFile);

    const { server } = await start(dbFile, 0);
    const { connection, client } = await connect(server.address);

    expect(await listCustomAttributeNames(connection, 'default')).toEqual(
      expect.arrayContaining(toolgateAttributeNames),
    );
    // The server runs with its search-attribute caches on, so it was restarted after the
    // registration; without that restart its caches could still hold the list from before, and a
    // start carrying toolgate's attributes would be refused as "not defined".
    expect(progress.some((line) => line.includes('restarting the server once'))).toBe(true);
    const workflowId = `attributes-${randomUUID()}`;
    const tag = `probe-${randomUUID()}`;
    const handle = await client.workflow.start('nobodyRunsThis', {
      workflowId,
      taskQueue: `nobody-${randomUUID()}`,
      typedSearchAttributes: Object.values(searchAttributeKeys).map((key) => ({ key, value: tag })),
    });
    const query = Object.values(searchAttributeKeys)
      .map((key) => `${key.name} = '${tag}'`)
      .join(' AND ');
    const listed = await waitFor(
      async () => {
        const ids: string[] = [];
        for await (const execution of client.workflow.list({ query })) ids.push(execution.workflowId);
        return ids.length > 0 ? ids : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 200, what: 'the probe call in a visibility query' },
    );
    expect(listed).toEqual([workflowId]);
    await handle.terminate('probe done');
    await server.stop();
    expect(isProcessRunning(server.pid)).toBe(false);
    // A second stop is harmless.
    await server.stop();
  });

  it('recovers from an empty DB file left by a first start that was killed early', async () => {
    const dbFile = join(workDir, 'empty', 'temporal.db');
    await mkdir(join(dbFile, '..'), { recursive: true });
    await writeFile(dbFile, '');

    const { server } = await start(dbFile, 0);
    const { client } = await connect(server.address);

    // Listing succeeds only when the namespace exists, which needs a schema in the file.
    await expect(client.workflow.count()).resolves.toEqual(expect.objectContaining({ count: 0 }));
    expect((await stat(dbFile)).size).toBeGreaterThan(0);
    expect(progress.some((line) => line.includes(`Removed the empty DB file ${dbFile}`))).toBe(true);
  });
});

/** Runs a plain dev server once, without toolgate's attributes, so the DB file exists without them. */
async function createBareDatabase(dbFile: string): Promise<void> {
  await mkdir(join(dbFile, '..'), { recursive: true });
  const port = await findFreePort(0);
  const address = `127.0.0.1:${port}`;
  const bare = spawn(
    cli.path,
    [
      'server',
      'start-dev',
      '--db-filename',
      dbFile,
      '--ip',
      '127.0.0.1',
      '--port',
      String(port),
      '--headless',
    ],
    { stdio: 'ignore' },
  );
  const exited = new Promise((resolve) => bare.once('exit', resolve));
  try {
    const deadline = Date.now() + 60_000;
    while (!(await clusterHealthSays(address, 'SERVING'))) {
      if (bare.exitCode !== null || bare.signalCode !== null) {
        throw new Error(
          `the bare dev server at ${address} exited (${bare.exitCode ?? bare.signalCode}) before serving`,
        );
      }
      if (Date.now() > deadline) {
        throw new Error(`the bare dev server at ${address} never became healthy`);
      }
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    const { connection } = await connect(address);
    const names = await listCustomAttributeNames(connection, 'default');
    expect(names.filter((name) => toolgateAttributeNames.includes(name))).toEqual([]);
    await connection.close();
    openConnections.splice(openConnections.indexOf(connection), 1);
  } finally {
    bare.kill('SIGTERM');
    await exited;
  }
}

function clusterHealthSays(address: string, expected: string): Promise<boolean> {
  return new Promise((resolve) => {
    execFile(cli.path, ['operator', 'cluster', 'health', '--address', address], (error, stdout) => {
      resolve(error === null && stdout.includes(expected));
    });
  });
}
