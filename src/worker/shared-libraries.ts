import { fileURLToPath } from 'node:url';
import type { BundleOptions } from '@temporalio/worker';
import { modulePath } from '../support/module-path.ts';

/**
 * Bundler options that load zod, the hash and toolgate's own workflow code once per workflow thread
 * instead of once per workflow: loading them anew for each workflow costs every call worker CPU
 * (docs/benchmarks.md).
 * What sharing asks of workflow code is written in `workflows/shared-libraries.ts`.
 *
 * The catalog is not shared: it is the user's module, its zod schemas keep lazy state that a frozen
 * object cannot take, and its contracts may hold code of their own. The SDK's freeze would also
 * read, and so build, every lazy schema. Never preload a module that defines contracts. Each
 * workflow still builds the catalog.
 */
export function sharedLibrariesBundlerOptions(): Pick<BundleOptions, 'preloadModules' | 'webpackConfigHook'> {
  return {
    preloadModules: [sharedLibrariesModule, workflowEntryModule, admissionEntityModule],
    webpackConfigHook: (config) => ({
      ...config,
      module: {
        ...config.module,
        rules: [...(config.module?.rules ?? []), { test: zodFile, use: [{ loader: frozenRegexLoader }] }],
      },
    }),
  };
}

const sharedLibrariesModule = modulePath('../../workflows/shared-libraries', import.meta.url);
/**
 * The `toolgate/workflow` entry and all it imports: pure code and constants (the gates, the child
 * call, contracts helpers, reason codes, message definitions).
 */
const workflowEntryModule = modulePath('../../workflows/index', import.meta.url);
/**
 * The admission entity, which every toolgate bundle carries (`withToolgateWorkflows`): shared too,
 * so that a call's workflow does not evaluate it again.
 */
const admissionEntityModule = modulePath('../../workflows/admission-entity', import.meta.url);
const frozenRegexLoader = fileURLToPath(new URL('./frozen-regex-loader.cjs', import.meta.url));
const zodFile = /[\\/]node_modules[\\/]zod[\\/].*\.c?js$/;
