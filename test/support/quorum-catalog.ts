/**
 * The example catalog with a quorum: `transfer_funds` runs once two distinct approvers have
 * approved (alice, or anyone with the finance role). Workflow-safe: ./workflows/quorum.ts builds on it.
 */
import { exampleContracts, transferFunds } from '../../examples/contracts.ts';
import { createCatalog, defineTool } from '../../src/contracts/define-tool.ts';

export const quorumTransfer = defineTool({
  ...transferFunds,
  approval: { ...transferFunds.approval!, quorum: 2 },
});

export const quorumCatalog = createCatalog(
  exampleContracts.map((contract) => (contract.name === transferFunds.name ? quorumTransfer : contract)),
);
