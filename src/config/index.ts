/**
 * `toolgate/config`: the config file every `toolgate` command reads, `toolgate.config.ts` (or
 * `.js`/`.mjs`) in the working folder or named with `--config`. Node.js >= 22.18 loads a `.ts`
 * config by erasing its types, so it and what it imports use erasable syntax only.
 *
 * ```ts
 * import { defineConfig } from 'toolgate/config';
 * import { catalog } from './src/contracts.ts';
 * import { refundOrderTool } from './src/tools.ts';
 *
 * export default defineConfig({
 *   catalog,
 *   tools: [refundOrderTool],
 *   workflows: './src/workflows.ts',
 *   allow: ['refund_order'],
 *   taskQueue: 'payments',
 * });
 * ```
 */

export type {
  ApproverEntry,
  ConnectionConfig,
  Provided,
  ToolContext,
  ToolgateConfig,
} from './define-config.ts';
export { defineConfig } from './define-config.ts';
