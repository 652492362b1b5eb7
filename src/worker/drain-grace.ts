import type { ToolCatalog } from '../contracts/define-tool.ts';
import { defaultDeadlineGraceMs } from '../contracts/limits.ts';

/** The least a worker waits for its running tools after SIGTERM. */
const minimumDrainGraceMs = 5_000;

/**
 * How long a stopping worker lets its running tools finish (docs/operators.md, "Deploys"): the
 * longest attempt a tool of the catalog may take (its deadline plus the workflow's 1 s grace on it),
 * and a second to report the result; never under 5 s. A tool still running after that is cancelled,
 * and a call whose tool may have acted ends in doubt, so a deploy's stop grace (compose's
 * `stop_grace_period`, Kubernetes' `terminationGracePeriodSeconds`) must exceed this.
 */
export function drainGraceMsFor(catalog: ToolCatalog, deadlineGraceMs = defaultDeadlineGraceMs): number {
  let longest = 0;
  for (const contract of Object.values(catalog)) longest = Math.max(longest, contract.timeoutMs);
  return Math.max(minimumDrainGraceMs, longest + deadlineGraceMs + 1_000);
}
