import { z } from 'zod';
import { createCatalog, defineTool } from '../src/contracts/define-tool.ts';

/**
 * The benchmark's tools. Every readonly variant (A, B, B-twin, C, C-fast, D) runs the same tool
 * body, so the only difference between variants is the path a call takes to reach it.
 */
/** Lazy (see `defineTool`): a workflow builds only the schema of the tool it runs. */
const readInput = () => z.strictObject({ item: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/) });

/** The arguments of every readonly bench tool, and of B's activity. */
export type BenchReadInput = z.infer<ReturnType<typeof readInput>>;

export const benchRead = defineTool({
  name: 'bench_read',
  description: 'Benchmark readonly tool: returns a small object.',
  input: readInput,
  tier: 'readonly',
  timeoutMs: 15_000,
});

export const benchReadFast = defineTool({
  name: 'bench_read_fast',
  description: 'The same readonly tool on the fast path (local activity).',
  input: readInput,
  tier: 'readonly',
  timeoutMs: 15_000,
  fastPath: true,
});

export const benchTransfer = defineTool({
  name: 'bench_transfer',
  description: 'Benchmark approval-tier tool, shaped like transfer_funds; waits for a human.',
  input: () =>
    z.strictObject({
      reference: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/),
      amountCents: z.number().int().min(1).max(1_000_000_00),
    }),
  tier: 'approval',
  timeoutMs: 15_000,
  approval: {
    approvers: ['role:finance'],
    // Long enough that no waiting call expires during a run.
    expiresAfterMs: 7 * 24 * 60 * 60 * 1000,
    preview: (input) => `Transfer ${(input.amountCents / 100).toFixed(2)} (reference ${input.reference})`,
  },
  idempotencyKey: (input) => `bench-transfer-${input.reference}`,
});

export const benchCatalog = createCatalog([benchRead, benchReadFast, benchTransfer]);

export const benchToolNames = [benchRead.name, benchReadFast.name, benchTransfer.name];
