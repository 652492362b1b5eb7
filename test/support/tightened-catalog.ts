/**
 * The example catalog as a later release might ship it: `transfer_funds` refuses amounts over 4.00.
 * Calls recorded or started with the shipped catalog include 5.00 transfers that passed validation,
 * which this release refuses (see docs/operators.md, "Changing a tool's schema while calls are
 * open"). Workflow-safe: the workflows module in ./workflows builds on it.
 */
import { z } from 'zod';
import { exampleContracts, transferFunds } from '../../examples/contracts.ts';
import { createCatalog, defineTool } from '../../src/contracts/define-tool.ts';

export const tightenedTransfer = defineTool({
  ...transferFunds,
  input: () =>
    z.strictObject({
      reference: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/),
      from: z.string().regex(/^[A-Z0-9-]{2,34}$/),
      to: z.string().regex(/^[A-Z0-9-]{2,34}$/),
      amountCents: z.number().int().positive().max(400),
      currency: z.enum(['EUR', 'USD', 'GBP']),
      memo: z.string().max(140).nullable(),
    }),
});

export const tightenedCatalog = createCatalog(
  exampleContracts.map((contract) => (contract.name === transferFunds.name ? tightenedTransfer : contract)),
);
