/**
 * The benchmark's toolgate workflows module (the toolgate worker's workflowsPath). Variants B and
 * B-twin run on a worker of their own (bare-workflows.ts).
 */
import { createToolCallWorkflow } from '../workflows/tool-call.ts';
import { benchCatalog } from './bench-catalog.ts';

/** Variants C, C-fast and D, and the waiting phase's calls: a toolgate call over the bench catalog. */
export const toolCall = createToolCallWorkflow(benchCatalog);

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
