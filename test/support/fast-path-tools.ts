/** The worker side of `read_config_fast`: the example tools plus its implementation. */

import type { KeyObject } from 'node:crypto';
import { implementTool, ToolError } from '../../activities/tool-implementation.ts';
import { exampleAllowlist } from '../../examples/contracts.ts';
import { appendJsonLine } from '../../examples/side-effect-log.ts';
import { createExampleActivities, type ExampleTools } from '../../examples/tools.ts';
import type { ToolgateActivities } from '../../src/contracts/activity-types.ts';
import { fastPathCatalog, readConfigFast } from './fast-path-catalog.ts';

/**
 * The example activities, with `read_config_fast` implemented and allowed: the example
 * `read_config` runs it, so it reads the example configuration file and logs each read. The setting
 * named by `firstAttemptFails` is not read: its first attempt fails (retryably), later ones succeed;
 * each attempt is logged as `unavailable`.
 */
export const firstAttemptFails = 'first-attempt-fails';

export function createFastPathActivities(
  tools: Pick<ExampleTools, 'tools' | 'compensations' | 'paths'>,
  options: { readonly approvalPublicKeys: readonly KeyObject[]; readonly allow?: readonly string[] },
): ToolgateActivities {
  // The example `read_config` does the reading; only the name differs (and the setting below).
  const readConfig = tools.tools.find((tool) => tool.contract.name === 'read_config');
  if (!readConfig) throw new Error('the example tools have no read_config');
  const fast = implementTool(readConfigFast, async (execution) => {
    const { input, callId, attempt } = execution;
    // A setting whose first attempt always fails, retryably: the retry is tested without a race.
    if (input.name === firstAttemptFails) {
      await appendJsonLine(tools.paths.executionsFile, {
        tool: readConfigFast.name,
        callId,
        event: 'unavailable',
      });
      if (attempt === 1)
        throw new ToolError('The configuration is not available right now.', { effect: 'none' });
      return { name: input.name, value: `attempt ${attempt}` };
    }
    return readConfig.execute(execution);
  });
  return createExampleActivities(
    { tools: [...tools.tools, fast], compensations: tools.compensations },
    {
      catalog: fastPathCatalog,
      approvalPublicKeys: [...options.approvalPublicKeys],
      policy: { allow: options.allow ?? [...exampleAllowlist, readConfigFast.name] },
    },
  );
}
