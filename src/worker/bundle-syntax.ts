import type { BundleOptions } from '@temporalio/worker';

type WebpackConfig = Parameters<NonNullable<BundleOptions['webpackConfigHook']>>[0];
type WebpackRules = NonNullable<NonNullable<WebpackConfig['module']>['rules']>;

/**
 * The JavaScript that toolgate's workflow bundles keep, rather than the bundler's ES2017.
 *
 * The Temporal TypeScript SDK (1.24) compiles the TypeScript it bundles to ES2017. Object spread is
 * ES2018, so every `{ ...a }` in workflow code becomes a call to a helper that reads
 * `Object.keys`, `Object.getOwnPropertySymbols` and `Object.defineProperty`. Inside the workflow
 * sandbox every read of a global goes through the V8 context's interceptor, which is many times
 * slower than outside it, and toolgate's gates, the catalog's `defineTool` calls (run for every
 * workflow) and the records they build are full of spreads. Workers run on Node 20 or later, which
 * runs ES2022 as it is, so nothing is gained by lowering it.
 */
export const workflowSyntaxTarget = 'es2022';

/**
 * A webpack config hook that sets the SDK's swc-loader to `workflowSyntaxTarget`. Only the target
 * changes: the parser, source maps and every other option stay the SDK's. A config without that
 * loader (a future SDK that bundles another way) is returned unchanged.
 */
export function keepModernSyntax(config: WebpackConfig): WebpackConfig {
  const rules = config.module?.rules;
  if (!rules) return config;
  let changed = false;
  const retargeted = rules.map((rule) => {
    const next = retargetRule(rule);
    if (next !== rule) changed = true;
    return next;
  }) as WebpackRules;
  return changed ? { ...config, module: { ...config.module, rules: retargeted } } : config;
}

function retargetRule(rule: WebpackRules[number]): WebpackRules[number] {
  if (!rule || typeof rule !== 'object') return rule;
  const use = (rule as { use?: unknown }).use;
  if (!use || typeof use !== 'object' || Array.isArray(use)) return rule;
  const { loader, options } = use as { loader?: unknown; options?: unknown };
  if (typeof loader !== 'string' || !/[\\/]swc-loader[\\/]/.test(loader)) return rule;
  if (!options || typeof options !== 'object') return rule;
  const jsc = (options as { jsc?: unknown }).jsc;
  if (!jsc || typeof jsc !== 'object' || !('target' in jsc)) return rule;
  return {
    ...rule,
    use: { ...use, options: { ...options, jsc: { ...jsc, target: workflowSyntaxTarget } } },
  } as WebpackRules[number];
}
