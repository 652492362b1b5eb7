/**
 * Variant B's workflows module: bare Temporal, nothing of toolgate's in its bundle. B runs on its
 * own worker so that its workflows do not evaluate toolgate's modules (the catalog, zod schemas)
 * that a bare Temporal application would not have.
 */
import { proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { BenchReadInput } from './bench-catalog.ts';

/** The activity variant B calls: the same tool body as bench_read, with no gates around it. */
export interface BareActivities {
  benchTool(input: BenchReadInput): Promise<unknown>;
}

const bare = proxyActivities<BareActivities>({
  startToCloseTimeout: '15 seconds',
  retry: { maximumAttempts: 3, initialInterval: '100 milliseconds' },
});

const bareLocal = proxyLocalActivities<BareActivities>({
  startToCloseTimeout: '15 seconds',
  retry: { maximumAttempts: 3, initialInterval: '100 milliseconds' },
});

/** Variant B (and B-E): bare Temporal, one workflow running one regular activity. */
export async function bareCall(input: BenchReadInput): Promise<unknown> {
  return await bare.benchTool(input);
}

/**
 * Variant B-LA: bare Temporal's fastest path for a short tool, the same tool body as a local
 * activity, started eagerly: what C-fast is without toolgate.
 */
export async function bareLocalCall(input: BenchReadInput): Promise<unknown> {
  return await bareLocal.benchTool(input);
}

/**
 * Variant B-0: a bare workflow that runs nothing and closes in its first workflow task. Started
 * eagerly, it is the least a call recorded as a workflow can cost on this stack: one start, one
 * workflow task, one close, one result read.
 */
export async function bareEmpty(input: BenchReadInput): Promise<unknown> {
  return { item: input.item, value: 42, unit: 'widgets' };
}
