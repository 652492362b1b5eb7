/**
 * B's workflows module: bare Temporal, nothing of toolgate's in its bundle. B (and B-twin) run on a
 * worker of their own, so that their workflows do not evaluate toolgate's modules (the catalog, zod
 * schemas) that a bare Temporal application would not have.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { BenchReadInput } from './bench-catalog.ts';

/** The activities of the bare worker: the same tool body as bench_read, with no gates around it. */
export interface BareActivities {
  benchTool(input: BenchReadInput): Promise<unknown>;
}

const bare = proxyActivities<BareActivities>({
  startToCloseTimeout: '15 seconds',
  retry: { maximumAttempts: 3, initialInterval: '100 milliseconds' },
});

/** Variants B and B-twin: bare Temporal, one workflow running one regular activity. */
export async function bareCall(input: BenchReadInput): Promise<unknown> {
  return await bare.benchTool(input);
}
