/** The worker side of `stubborn_write`: the example tools plus its implementation. */

import type { KeyObject } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { implementTool } from '../../activities/tool-implementation.ts';
import { exampleAllowlist } from '../../examples/contracts.ts';
import { appendJsonLine } from '../../examples/side-effect-log.ts';
import { createExampleActivities, type ExampleTools } from '../../examples/tools.ts';
import type { ToolgateActivities } from '../../src/contracts/activity-types.ts';
import { stubbornCatalog, stubbornWrite } from './stubborn-catalog.ts';

/**
 * The example activities, with `stubborn_write` implemented and allowed. It logs `start`, then
 * sleeps for `delayMs` without looking at its signal, then logs `wrote`: a write that a cancel
 * cannot stop once it has begun.
 */
export function createStubbornActivities(
  tools: Pick<ExampleTools, 'tools' | 'compensations' | 'paths'>,
  options: { readonly approvalPublicKeys: readonly KeyObject[] },
): ToolgateActivities {
  const log = (callId: string, event: string) =>
    appendJsonLine(tools.paths.executionsFile, { tool: stubbornWrite.name, callId, event });
  const stubborn = implementTool(stubbornWrite, async ({ input, callId }) => {
    await log(callId, 'start');
    await sleep(input.delayMs);
    await log(callId, 'wrote');
    return { record: input.record };
  });
  return createExampleActivities(
    { tools: [...tools.tools, stubborn], compensations: tools.compensations },
    {
      catalog: stubbornCatalog,
      approvalPublicKeys: [...options.approvalPublicKeys],
      policy: { allow: [...exampleAllowlist, stubbornWrite.name] },
    },
  );
}
