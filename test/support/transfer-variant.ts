/**
 * Test catalogs that differ from the example one only in `transfer_funds`'s contract (a condition,
 * a quorum): what a worker of one needs. No test runner here: the fixture recorder uses it too.
 */
import type { KeyObject } from 'node:crypto';
import { exampleAllowlist } from '../../examples/contracts.ts';
import { createExampleActivities, type ExampleTools } from '../../examples/tools.ts';
import type { ToolgateActivities } from '../../src/contracts/activity-types.ts';
import type { ToolCatalog, ToolContract } from '../../src/contracts/define-tool.ts';

export interface TransferVariant {
  readonly catalog: ToolCatalog;
  readonly contract: ToolContract;
  /** A module of ./workflows that exports `toolCall` built on `catalog`. */
  readonly workflows: string;
}

/** The example tools with `transfer_funds` under the variant's contract, for the variant's catalog. */
export function transferVariantActivities(
  tools: Pick<ExampleTools, 'tools' | 'compensations'>,
  variant: TransferVariant,
  approvalPublicKeys: readonly KeyObject[],
): ToolgateActivities {
  const { catalog, contract } = variant;
  return createExampleActivities(
    {
      tools: tools.tools.map((tool) => (tool.contract.name === contract.name ? { ...tool, contract } : tool)),
      compensations: tools.compensations,
    },
    { catalog, approvalPublicKeys: [...approvalPublicKeys], policy: { allow: exampleAllowlist } },
  );
}
