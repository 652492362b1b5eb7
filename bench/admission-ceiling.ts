/**
 * `npx tsx bench/admission-ceiling.ts [concurrency] [seconds]`: how many admissions per second one
 * scope's admission entity takes, and the CPU they cost. A worker serves the entity; `concurrency`
 * callers each take a slot and hand it back, as a call with a concurrency quota does (an
 * update-with-start, then a release signal), for `seconds`. Prints one JSON line.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { acquireIn, signalRelease } from '../activities/safety/admission-gates.ts';
import { exampleToolSet } from '../examples/tool-set.ts';
import { admissionWorkflowId } from '../src/contracts/admission-entity.ts';
import { findTemporalCli, startDevServer } from '../src/dev/index.ts';
import { bundleToolgateWorkflows } from '../src/worker/create-worker.ts';

const concurrency = Number(process.argv[2] ?? 8);
const seconds = Number(process.argv[3] ?? 15);
const taskQueue = 'admission-ceiling';

/** CPU seconds a process has used, from /proc (user plus system, at 100 ticks a second). */
async function cpuSecondsOf(pid: number): Promise<number> {
  const fields = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** One caller: take a slot and give it back, again and again, until the deadline. */
async function caller(client: Client, index: number, deadlineMs: number): Promise<number> {
  const context = { client, taskQueue, logger: console };
  let granted = 0;
  for (let call = 0; Date.now() < deadlineMs; call++) {
    const callId = `c${index}-${call}`;
    const answer = await acquireIn(context, 'tool:ceiling', {
      callId,
      label: 'ceiling',
      limit: { maxConcurrent: 1_000 },
      leaseMs: 60_000,
    });
    if (answer.granted) granted++;
    await signalRelease(context, 'tool:ceiling', callId);
  }
  return granted;
}

async function main(): Promise<void> {
  const directory = await mkdtemp(join(tmpdir(), 'toolgate-ceiling-'));
  const server = await startDevServer({
    cli: await findTemporalCli(),
    dbFile: join(directory, 'temporal.db'),
    grpcPort: 0,
    uiPort: 0,
    headless: true,
  });
  const nativeConnection = await NativeConnection.connect({ address: server.address });
  const worker = await Worker.create({
    connection: nativeConnection,
    taskQueue,
    workflowBundle: await bundleToolgateWorkflows(exampleToolSet.workflowsPath),
    activities: { closedCalls: async () => ({ closed: [] }) },
  });
  const running = worker.run();
  const connection = await Connection.connect({ address: server.address });
  const client = new Client({ connection });
  try {
    // A first call starts the entity, so its start is not counted.
    await caller(client, -1, Date.now() + 1);
    const [serverBefore, ownBefore] = [await cpuSecondsOf(server.pid), process.cpuUsage()];
    const startedAt = Date.now();
    const grants = await Promise.all(
      Array.from({ length: concurrency }, (_, index) => caller(client, index, startedAt + seconds * 1000)),
    );
    const elapsedSeconds = (Date.now() - startedAt) / 1000;
    let runs = 0;
    for await (const _ of client.workflow.list({
      query: `WorkflowId = '${admissionWorkflowId(taskQueue, 'tool:ceiling')}'`,
    })) {
      runs++;
    }
    const own = process.cpuUsage(ownBefore);
    const admitted = grants.reduce((sum, count) => sum + count, 0);
    const perAdmission = (cpuSeconds: number) => Number(((cpuSeconds * 1000) / admitted).toFixed(2));
    process.stdout.write(
      `${JSON.stringify({
        concurrency,
        seconds: Number(elapsedSeconds.toFixed(1)),
        admissionsPerSecond: Number((admitted / elapsedSeconds).toFixed(1)),
        entityRuns: runs,
        // The worker and the callers share this process: an upper bound on the worker's share.
        workerAndCallersCpuMsPerAdmission: perAdmission((own.user + own.system) / 1e6),
        serverCpuMsPerAdmission: perAdmission((await cpuSecondsOf(server.pid)) - serverBefore),
      })}\n`,
    );
  } finally {
    await connection.close();
    worker.shutdown();
    await running;
    await nativeConnection.close();
    await server.stop();
    await rm(directory, { recursive: true, force: true });
  }
}

await main();
