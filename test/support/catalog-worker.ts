import type { KeyObject } from 'node:crypto';
import type { NativeConnection, Worker } from '@temporalio/worker';
import { loadOrCreateApprovalKeys } from '../../src/client/approval-signer.ts';
import { ToolgateClient } from '../../src/client/toolgate-client.ts';
import type { ToolgateActivities } from '../../src/contracts/activity-types.ts';
import type { ToolCatalog } from '../../src/contracts/define-tool.ts';
import { bundleToolgateWorkflows, createWorker } from '../../src/worker/create-worker.ts';
import type { Harness } from './harness.ts';

export interface CatalogWorker {
  readonly client: ToolgateClient;
  readonly worker: Worker;
  readonly running: Promise<void>;
  /** Shuts the worker down, if it still runs, and waits until it has stopped. */
  stop(): Promise<void>;
}

/**
 * A worker of a test catalog on the harness's task queue (the harness is created with
 * `startWorker: false`), and a client that knows that catalog. `workflows` is the path of a module
 * that exports `toolCall` built on the same catalog.
 */
export async function startCatalogWorker(
  harness: Harness,
  connection: NativeConnection,
  options: {
    readonly workflows: string;
    readonly catalog: ToolCatalog;
    readonly activities: (approvalPublicKeys: readonly KeyObject[]) => ToolgateActivities;
  },
): Promise<CatalogWorker> {
  const client = new ToolgateClient({
    client: harness.temporal,
    taskQueue: harness.taskQueue,
    catalog: options.catalog,
  });
  const { code } = await bundleToolgateWorkflows(options.workflows);
  const keys = await loadOrCreateApprovalKeys(`${harness.dataDir}/keys`);
  const worker = await createWorker({
    connection,
    taskQueue: harness.taskQueue,
    activities: options.activities([keys.publicKey]),
    workflowBundle: { code },
  });
  const running = worker.run();
  return {
    client,
    worker,
    running,
    async stop() {
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await running;
    },
  };
}
