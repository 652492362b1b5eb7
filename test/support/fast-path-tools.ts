/** The worker side of `read_config_fast`: the example tools plus its implementation. */

import type { KeyObject } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { implementTool, ToolError } from '../../activities/tool-implementation.ts';
import { createExampleActivities, type ExampleTools } from '../../activities/tools/example-tools.ts';
import { appendJsonLine } from '../../activities/tools/side-effect-log.ts';
import type { ToolgateActivities } from '../../src/contracts/activity-types.ts';
import { exampleAllowlist } from '../../src/tools/example-contracts.ts';
import { fastPathCatalog, readConfigFast } from './fast-path-catalog.ts';

/**
 * The example activities, with `read_config_fast` implemented and allowed. It reads the example
 * configuration file, as `read_config` does, and logs each read to the executions file. The setting
 * named by `firstAttemptFails` is not read: its first attempt fails (retryably), later ones succeed;
 * each attempt is logged as `unavailable`.
 */
export const firstAttemptFails = 'first-attempt-fails';

export function createFastPathActivities(
  tools: Pick<ExampleTools, 'tools' | 'compensations' | 'paths'>,
  options: { readonly approvalPublicKeys: readonly KeyObject[]; readonly allow?: readonly string[] },
): ToolgateActivities {
  const fast = implementTool(readConfigFast, async ({ input, callId, attempt }) => {
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
    let settings: Record<string, unknown>;
    try {
      settings = JSON.parse(await readFile(tools.paths.configFile, 'utf8')) as Record<string, unknown>;
    } catch {
      throw new ToolError('The configuration is not available right now.', { effect: 'none' });
    }
    await appendJsonLine(tools.paths.executionsFile, { tool: readConfigFast.name, callId, event: 'read' });
    if (!Object.hasOwn(settings, input.name)) {
      throw new ToolError(`There is no setting named ${input.name}.`, { effect: 'none', retryable: false });
    }
    return { name: input.name, value: settings[input.name] };
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
