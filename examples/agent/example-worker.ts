import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { createToolCallLookupActivities } from '../../activities/lookup-tool-call.ts';
import { loadOrCreateApprovalKeys } from '../../src/client/approval-signer.ts';
import { createWorker } from '../../src/worker/create-worker.ts';
import { installRuntimeLogging } from '../../src/worker/runtime-logging.ts';
import { createExampleActivities, createExampleTools } from '../tools.ts';
import { settingsFromEnv, workerReadyLine } from './example-settings.ts';
import { createModelActivities } from './model-activities.ts';

/** The example worker: toolgate's activities, the lookup activity for child calls, and the model. */
async function main(): Promise<void> {
  installRuntimeLogging();
  const settings = settingsFromEnv(process.env);
  const tools = createExampleTools(join(settings.dataDir, 'data'));
  const keys = await loadOrCreateApprovalKeys(join(settings.dataDir, 'keys'));
  const connection = await Connection.connect({ address: settings.address });
  const client = new Client({ connection, namespace: settings.namespace });
  const nativeConnection = await NativeConnection.connect({ address: settings.address });
  const apiKey = process.env['ANTHROPIC_API_KEY'];
  const model = process.env['ANTHROPIC_MODEL'];
  const activities = {
    ...createExampleActivities(tools, {
      approvalPublicKeys: [keys.publicKey],
    }),
    ...createToolCallLookupActivities(client),
    ...createModelActivities({ ...(apiKey ? { apiKey } : {}), ...(model ? { model } : {}) }),
  };
  const worker = await createWorker({
    connection: nativeConnection,
    namespace: settings.namespace,
    taskQueue: settings.taskQueue,
    activities,
    workflowBundle: { code: await readFile(settings.bundleFile, 'utf8') },
    identity: `example-worker-${process.pid}`,
    // After a crash, open workflows wait this long on the dead worker's sticky queue before a new
    // worker gets them; the default would make the resume feel stuck.
    tuning: { stickyQueueScheduleToStartTimeout: '2 seconds' },
  });
  const stop = () => worker.shutdown();
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  const running = worker.run();
  process.stdout.write(`${workerReadyLine} pid=${process.pid}\n`);
  await running;
  await nativeConnection.close();
  await connection.close();
}

main().catch((error: unknown) => {
  process.stderr.write(`example worker failed: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
