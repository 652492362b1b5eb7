import { z } from 'zod';
import { defineTool } from '../../src/contracts/define-tool.ts';

/**
 * An irreversible tool whose key function has a bug: the schema lets `invoice` be null, and the key
 * function calls a method on it. For the tests of what a throwing key function becomes.
 */
export const payInvoiceWithBuggyKey = defineTool({
  name: 'pay_invoice',
  description: 'Pay an invoice.',
  input: () => z.strictObject({ invoice: z.string().nullable() }),
  tier: 'irreversible',
  timeoutMs: 1,
  idempotencyKey: (input) => `pay-${input.invoice!.toLowerCase()}`,
});
