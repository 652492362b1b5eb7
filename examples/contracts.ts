import { z } from 'zod';
import { createCatalog, defineTool } from '../src/contracts/define-tool.ts';
import { safeUrlSchema } from '../src/contracts/safe-url.ts';
import { sandboxedRelativePath } from '../src/contracts/sandboxed-path.ts';

/** The example tools. Their implementations live in `examples/tools.ts`. */
export const readConfig = defineTool({
  name: 'read_config',
  description: 'Read one setting from the application configuration file.',
  input: () =>
    z.strictObject({
      name: z
        .string()
        .regex(/^[A-Za-z0-9_.-]{1,64}$/)
        .describe('The setting name.'),
    }),
  tier: 'readonly',
  timeoutMs: 5_000,
});

export const slowSearch = defineTool({
  name: 'slow_search',
  description: 'Search the archive. Slow; stops promptly when cancelled.',
  input: () =>
    z.strictObject({
      query: z.string().min(1).max(500),
      delayMs: z.number().int().min(0).max(60_000).describe('How long the search takes, in milliseconds.'),
    }),
  tier: 'readonly',
  timeoutMs: 30_000,
});

export const stubbornSearch = defineTool({
  name: 'stubborn_search',
  description: 'Search a legacy system that ignores cancellation.',
  input: () =>
    z.strictObject({
      query: z.string().min(1).max(500),
      delayMs: z.number().int().min(0).max(60_000),
    }),
  tier: 'readonly',
  timeoutMs: 1_000,
  // One attempt, so its deadline is the caller's whole wait.
  retry: { maximumAttempts: 1 },
});

export const writeReport = defineTool({
  name: 'write_report',
  description: 'Write a report file inside the reports sandbox. Creates new files only.',
  input: () =>
    z.strictObject({
      path: sandboxedRelativePath().describe(
        'A relative path inside the reports folder, e.g. q3/summary.md.',
      ),
      content: z.string().max(100_000),
    }),
  tier: 'irreversible',
  timeoutMs: 5_000,
});

export const deleteEverything = defineTool({
  name: 'delete_everything',
  description: 'Delete all data. Registered so that the allowlist can refuse it.',
  input: () => z.strictObject({ confirm: z.boolean() }),
  tier: 'irreversible',
  timeoutMs: 5_000,
});

const transferInput = () =>
  z.strictObject({
    reference: z
      .string()
      .regex(/^[A-Za-z0-9_-]{1,64}$/)
      .describe('A unique business reference for this transfer.'),
    from: z.string().regex(/^[A-Z0-9-]{2,34}$/),
    to: z.string().regex(/^[A-Z0-9-]{2,34}$/),
    amountCents: z.number().int().positive().max(100_000_000),
    currency: z.enum(['EUR', 'USD', 'GBP']),
    memo: z.string().max(140).nullable(),
  });

export const transferFunds = defineTool({
  name: 'transfer_funds',
  description: 'Transfer money between accounts. A human must approve every transfer.',
  input: transferInput,
  tier: 'approval',
  timeoutMs: 10_000,
  approval: {
    approvers: ['alice', 'role:finance'],
    expiresAfterMs: 24 * 60 * 60 * 1000,
    preview: (input) =>
      `Transfer ${(input.amountCents / 100).toFixed(2)} ${input.currency} from ${input.from} to ${input.to}` +
      (input.memo ? ` — memo: ${input.memo}` : ''),
  },
  idempotencyKey: (input) => `transfer-${input.reference}`,
});

export const addLabel = defineTool({
  name: 'add_label',
  description: 'Add a label to an item. Can be undone.',
  input: () =>
    z.strictObject({
      item: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/),
      label: z.string().regex(/^[a-z0-9-]{1,32}$/),
    }),
  tier: 'reversible',
  timeoutMs: 5_000,
  compensation: 'remove_label',
});

export const httpFetch = defineTool({
  name: 'http_fetch',
  description:
    'Fetch a public web page or API response over http(s) with GET. Private, internal and metadata addresses are refused.',
  input: () =>
    z.strictObject({
      // The lexical half of safeUrl. Ports and hosts are the worker's configuration, checked again
      // there with the address after the single DNS resolution.
      url: safeUrlSchema({ ports: 'any' }).describe('An absolute http or https URL.'),
    }),
  tier: 'readonly',
  timeoutMs: 10_000,
  retry: { maximumAttempts: 3, initialIntervalMs: 200, maximumIntervalMs: 1_000 },
});

export const exampleContracts = [
  readConfig,
  slowSearch,
  stubbornSearch,
  writeReport,
  deleteEverything,
  transferFunds,
  addLabel,
  httpFetch,
] as const;

export const exampleCatalog = createCatalog(exampleContracts);

/** The tools the example worker allows. `delete_everything` is deliberately absent. */
export const exampleAllowlist: readonly string[] = exampleContracts
  .map((contract) => contract.name)
  .filter((name) => name !== 'delete_everything');
