/**
 * The example catalog plus one readonly tool on the fast path (`fastPath: true`: it runs as a local
 * activity inside the call's workflow task). The example catalog has no such tool, so the fast
 * path's gates and histories are tested with this one. Workflow-safe: ./workflows/fast-path.ts
 * builds on it.
 */

import { exampleContracts, readConfig } from '../../examples/contracts.ts';
import { createCatalog, defineTool } from '../../src/contracts/define-tool.ts';

export const readConfigFast = defineTool({
  ...readConfig,
  name: 'read_config_fast',
  description: 'Read one setting from the application configuration file, on the fast path.',
  fastPath: true,
});

export const fastPathCatalog = createCatalog([...exampleContracts, readConfigFast]);
