/**
 * The example catalog plus one irreversible tool that ignores its AbortSignal (`stubborn_write`).
 * The example catalog's stubborn tool is readonly, so what a cancelled call reports when a tool
 * that may have acted does not stop is tested with this one. Workflow-safe:
 * ./workflows/stubborn-write.ts builds on it.
 */
import { z } from 'zod';
import { exampleContracts } from '../../examples/contracts.ts';
import { createCatalog, defineTool } from '../../src/contracts/define-tool.ts';

export const stubbornWrite = defineTool({
  name: 'stubborn_write',
  description: 'Write to a legacy system that ignores cancellation.',
  input: () =>
    z.strictObject({
      record: z.string().regex(/^[a-z0-9-]{1,32}$/),
      delayMs: z.number().int().min(0).max(60_000),
    }),
  tier: 'irreversible',
  // Long enough for a cancel sent from another process to reach the tool while it runs.
  timeoutMs: 5_000,
});

export const stubbornCatalog = createCatalog([...exampleContracts, stubbornWrite]);
