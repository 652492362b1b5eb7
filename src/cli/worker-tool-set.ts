import { createActivities } from '../../activities/create-activities.ts';
import { createLoadGate } from '../../activities/safety/admission-gates.ts';
import { configuredTools } from '../config/config-tools.ts';
import type { LoadedConfig } from '../config/load-config.ts';
import type { EmbeddedToolSet } from '../dev/embedded.ts';

/**
 * The tools a worker started from a config serves. The implementations are built and checked
 * against the catalog here, before any server or worker starts, so a tool without an
 * implementation (or the reverse) stops the command at once, by name.
 */
export async function workerToolSet(config: LoadedConfig, dataDir: string): Promise<EmbeddedToolSet> {
  const { tools, compensations } = await configuredTools(config, dataDir);
  return {
    catalog: config.catalog,
    workflowsPath: config.workflowsPath,
    ...(config.drainGraceMs !== undefined ? { drainGraceMs: config.drainGraceMs } : {}),
    activities: ({ approvalPublicKeys }) =>
      createActivities({
        tools,
        compensations,
        catalog: config.catalog,
        policy: config.policy,
        approvalPublicKeys,
        ...(config.quotas || config.breakers
          ? {
              admissionGates: [
                createLoadGate({
                  ...(config.quotas ? { quotas: config.quotas } : {}),
                  ...(config.breakers ? { breakers: config.breakers } : {}),
                }),
              ],
            }
          : {}),
      }),
  };
}
