import type { NativeConnection } from '@temporalio/worker';
import { exampleAllowlist } from '../../examples/contracts.ts';
import { createExampleActivities } from '../../examples/tools.ts';
import type { ToolCatalog, ToolContract } from '../../src/contracts/define-tool.ts';
import { type CatalogWorker, startCatalogWorker } from './catalog-worker.ts';
import type { Harness } from './harness.ts';

/**
 * A worker of a test catalog that differs from the example one only in `transfer_funds`'s contract
 * (a condition, a quorum), with the example tools, on the harness's task queue. `workflows` names a
 * module of ./workflows built on that catalog.
 */
export function startTransferVariantWorker(
  harness: Harness,
  connection: NativeConnection,
  variant: { readonly catalog: ToolCatalog; readonly contract: ToolContract; readonly workflows: string },
): Promise<CatalogWorker> {
  const { catalog, contract } = variant;
  return startCatalogWorker(harness, connection, {
    workflows: new URL(`./workflows/${variant.workflows}.ts`, import.meta.url).pathname,
    catalog,
    activities: (approvalPublicKeys) =>
      createExampleActivities(
        {
          tools: harness.tools.tools.map((tool) =>
            tool.contract.name === contract.name ? { ...tool, contract } : tool,
          ),
          compensations: harness.tools.compensations,
        },
        { catalog, approvalPublicKeys: [...approvalPublicKeys], policy: { allow: exampleAllowlist } },
      ),
  });
}
