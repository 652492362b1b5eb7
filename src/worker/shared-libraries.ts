import { fileURLToPath } from 'node:url';
import type { BundleOptions } from '@temporalio/worker';

/**
 * Bundler options that load zod, the hash and toolgate's own workflow code once per workflow thread
 * instead of once per workflow. Measured: about 4 ms less worker CPU per call for zod and the hash
 * (round 3), and about 0.4 ms less for toolgate's workflow modules (round 7; docs/benchmarks.md).
 * What sharing asks of workflow code is written in `workflows/shared-libraries.ts`.
 *
 * The catalog is not shared: it is the user's module, its zod schemas keep lazy state that a frozen
 * object cannot take, and its contracts may hold code of their own. The SDK's freeze would also
 * read, and so build, every lazy schema. Never preload a module that defines contracts. Each
 * workflow still builds the catalog.
 */
export function sharedLibrariesBundlerOptions(): Pick<BundleOptions, 'preloadModules' | 'webpackConfigHook'> {
  return {
    preloadModules: [sharedLibrariesModule, toolCallModule, toolUndoModule],
    webpackConfigHook: (config) => ({
      ...config,
      module: {
        ...config.module,
        rules: [...(config.module?.rules ?? []), { test: zodFile, use: [{ loader: frozenRegexLoader }] }],
      },
    }),
  };
}

const workflowModule = (name: string) => fileURLToPath(new URL(`../../workflows/${name}`, import.meta.url));
const sharedLibrariesModule = workflowModule('shared-libraries.ts');
/** Pure code and constants (the gates, contracts helpers, reason codes, message definitions). */
const toolCallModule = workflowModule('tool-call.ts');
const toolUndoModule = workflowModule('tool-undo.ts');
const frozenRegexLoader = fileURLToPath(new URL('./frozen-regex-loader.cjs', import.meta.url));
const zodFile = /[\\/]node_modules[\\/]zod[\\/].*\.c?js$/;
