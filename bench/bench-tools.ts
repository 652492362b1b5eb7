import { implementTool, type ToolImplementation } from '../activities/tool-implementation.ts';
import type { CallContext } from '../src/contracts/call-record.ts';
import { checkInput, lookupTool } from '../src/contracts/define-tool.ts';
import { callFingerprint } from '../src/contracts/fingerprint.ts';
import { checkInputLimits, defaultPayloadLimits } from '../src/contracts/limits.ts';
import { isToolAllowed } from '../src/policy/allowlist.ts';
import {
  type BenchReadInput,
  benchCatalog,
  benchRead,
  benchReadFast,
  benchToolNames,
  benchTransfer,
} from './bench-catalog.ts';

/** Counts every execution of a bench tool body, so a benchmark can prove that nothing ran. */
export interface ExecutionCounter {
  count: number;
}

/** The one tool body every variant runs: a small object back. */
export async function benchToolBody(input: BenchReadInput, counter: ExecutionCounter) {
  counter.count++;
  return { item: input.item, value: 42, unit: 'widgets' };
}

export function createBenchTools(counter: ExecutionCounter): ToolImplementation[] {
  const body = async ({ input }: { input: BenchReadInput }) => benchToolBody(input, counter);
  return [
    implementTool(benchRead, body),
    implementTool(benchReadFast, body),
    implementTool(benchTransfer, async ({ input }) => {
      counter.count++;
      return { transferred: input.amountCents, reference: input.reference };
    }),
  ];
}

export const benchAllowlist = { allow: benchToolNames };

/**
 * Variant A, the cost floor: the same gates (fingerprint, allowlist, key rule, size limits, zod)
 * and the same tool body, called in-process with no durability at all.
 */
export async function callInProcess(
  tool: string,
  input: unknown,
  context: CallContext,
  counter: ExecutionCounter,
): Promise<unknown> {
  const fingerprint = callFingerprint(tool, input);
  const contract = lookupTool(benchCatalog, tool);
  if (!contract || !isToolAllowed(benchAllowlist, tool, context.tenant)) throw new Error('not allowed');
  if (checkInputLimits(input, defaultPayloadLimits)) throw new Error('too large');
  const parsed = checkInput(contract, input);
  if (!parsed.success) throw new Error('invalid input');
  const output = await benchToolBody(parsed.data as BenchReadInput, counter);
  return { fingerprint, output };
}
