import { fileURLToPath } from 'node:url';
import type { BundleOptions } from '@temporalio/worker';

/**
 * Bundler options that load zod and the hash once per workflow thread instead of once per
 * workflow. Measured at 16 callers: about 4 ms less worker CPU per call, for every workflow in
 * the bundle (docs/benchmarks.md). What sharing asks of workflow code is written in
 * `workflows/shared-libraries.ts`.
 */
export function sharedLibrariesBundlerOptions(): Pick<BundleOptions, 'preloadModules' | 'webpackConfigHook'> {
  return {
    preloadModules: [sharedLibrariesModule],
    webpackConfigHook: (config) => ({
      ...config,
      module: {
        ...config.module,
        rules: [...(config.module?.rules ?? []), { test: zodFile, use: [{ loader: frozenRegexLoader }] }],
      },
    }),
  };
}

const sharedLibrariesModule = fileURLToPath(new URL('../../workflows/shared-libraries.ts', import.meta.url));
const frozenRegexLoader = fileURLToPath(new URL('./frozen-regex-loader.cjs', import.meta.url));
const zodFile = /[\\/]node_modules[\\/]zod[\\/].*\.c?js$/;
