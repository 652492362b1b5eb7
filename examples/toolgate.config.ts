/**
 * The bundled examples as a toolgate config: what `toolgate <command> --example` and `npm start`
 * run. The tools keep their files in `<data dir>/data`.
 */
import { defineConfig } from '../src/config/define-config.ts';
import { modulePath } from '../src/support/module-path.ts';
import { exampleAllowlist, exampleCatalog } from './contracts.ts';
import { exampleDataDir, prepareExampleData } from './tool-set.ts';
import { createExampleTools } from './tools.ts';

export default defineConfig({
  catalog: exampleCatalog,
  tools: async ({ dataDir }) => {
    await prepareExampleData(dataDir);
    return createExampleTools(exampleDataDir(dataDir)).tools;
  },
  compensations: ({ dataDir }) => createExampleTools(exampleDataDir(dataDir)).compensations,
  workflows: modulePath('./workflows', import.meta.url),
  allow: exampleAllowlist,
  // A failing site gets no new calls from any worker: 5 failed attempts in a row open the breaker
  // for 30 s, then one probe goes through.
  breakers: { http_fetch: { failureThreshold: 5, cooldownMs: 30_000 } },
});
