/**
 * The benchmark's workflows module (the worker's workflowsPath). Workflow-safe: it imports only
 * @temporalio/workflow, zod contracts and toolgate's workflow factory.
 */
import { proxyActivities } from '@temporalio/workflow';
import { createToolCallWorkflow } from '../workflows/tool-call.ts';
import { benchCatalog } from './bench-catalog.ts';

/** Variants C, C-E, C-fast, D, D′ and I: a toolgate call over the bench catalog. */
export const toolCall = createToolCallWorkflow(benchCatalog);

/** The activity variant B calls: the same tool body as bench_read, with no gates around it. */
export interface BareActivities {
  benchTool(input: { item: string; holdMs: number }): Promise<unknown>;
}

const bare = proxyActivities<BareActivities>({
  startToCloseTimeout: '15 seconds',
  retry: { maximumAttempts: 3, initialInterval: '100 milliseconds' },
});

/** Variant B (and B-E): bare Temporal, one workflow running one regular activity. */
export async function bareCall(input: { item: string; holdMs: number }): Promise<unknown> {
  return await bare.benchTool(input);
}

/**
 * A measuring instrument for the waiting phase, not a toolgate workflow: runs a full garbage
 * collection of the workflow thread's V8 isolate (the runner starts with --expose-gc, which gives
 * every context a \`gc\` function), so the bench reads the memory that cached workflows really hold
 * rather than garbage that V8 has not collected yet. Returns whether a collection ran.
 */
export async function benchCollectGarbage(): Promise<boolean> {
  const collect = (globalThis as { gc?: () => void }).gc;
  if (!collect) return false;
  collect();
  return true;
}
