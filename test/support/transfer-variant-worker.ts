import { NativeConnection } from '@temporalio/worker';
import { afterAll, beforeAll, inject } from 'vitest';
import { type CatalogWorker, startCatalogWorker } from './catalog-worker.ts';
import { createHarness, type Harness } from './harness.ts';
import { type TransferVariant, transferVariantActivities } from './transfer-variant.ts';

/**
 * A worker of a test catalog that differs from the example one only in `transfer_funds`'s contract
 * (a condition, a quorum), with the example tools, on the harness's task queue. `workflows` names a
 * module of ./workflows built on that catalog.
 */
function startTransferVariantWorker(
  harness: Harness,
  connection: NativeConnection,
  variant: TransferVariant,
): Promise<CatalogWorker> {
  return startCatalogWorker(harness, connection, {
    workflows: new URL(`./workflows/${variant.workflows}.ts`, import.meta.url).pathname,
    catalog: variant.catalog,
    activities: (approvalPublicKeys) => transferVariantActivities(harness.tools, variant, approvalPublicKeys),
  });
}

/**
 * For one describe block: a harness with no example worker, and a worker of the variant on its task
 * queue, started before the tests and stopped after them.
 */
export function useTransferVariant(variant: TransferVariant): {
  readonly harness: Harness;
  readonly client: CatalogWorker['client'];
} {
  let harness: Harness | undefined;
  let connection: NativeConnection | undefined;
  let worker: CatalogWorker | undefined;
  beforeAll(async () => {
    harness = await createHarness({ startWorker: false });
    connection = await NativeConnection.connect({ address: inject('temporalAddress') });
    worker = await startTransferVariantWorker(harness, connection, variant);
  }, 120_000);
  afterAll(async () => {
    await worker?.stop();
    await connection?.close();
    await harness?.close();
  });
  return {
    get harness() {
      return harness!;
    },
    get client() {
      return worker!.client;
    },
  };
}
