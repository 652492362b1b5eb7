/**
 * The example catalog with a conditional approval: `transfer_funds` needs a human only from 100.00
 * on (`approval.when`). Workflow-safe: ./workflows/conditional-approval.ts builds on it.
 */
import { exampleContracts, transferFunds } from '../../examples/contracts.ts';
import { createCatalog, defineTool } from '../../src/contracts/define-tool.ts';

export const conditionalTransfer = defineTool({
  ...transferFunds,
  approval: { ...transferFunds.approval!, when: (input) => input.amountCents >= 10_000 },
});

export const conditionalCatalog = createCatalog(
  exampleContracts.map((contract) => (contract.name === transferFunds.name ? conditionalTransfer : contract)),
);
