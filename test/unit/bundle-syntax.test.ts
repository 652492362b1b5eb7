import { describe, expect, it } from 'vitest';
import { exampleToolSet } from '../../examples/tool-set.ts';
import { keepModernSyntax, workflowSyntaxTarget } from '../../src/worker/bundle-syntax.ts';
import { bundleToolgateWorkflows } from '../../src/worker/create-worker.ts';

/** The rules the SDK's bundler passes to the hook (TypeScript SDK 1.24), reduced to what matters. */
const sdkLikeConfig = () => ({
  mode: 'development' as const,
  module: {
    rules: [
      { test: /\.js$/, enforce: 'pre' as const, use: ['/deps/node_modules/source-map-loader/dist/cjs.js'] },
      {
        test: /\.ts$/,
        exclude: /node_modules/,
        use: {
          loader: '/deps/node_modules/swc-loader/src/index.js',
          options: {
            sourceMap: true,
            jsc: { target: 'es2017', parser: { syntax: 'typescript', decorators: true } },
          },
        },
      },
    ],
  },
});

describe('keepModernSyntax', () => {
  it("sets only the swc-loader's target, and leaves the input config as it was", () => {
    const config = sdkLikeConfig();
    const result = keepModernSyntax(config);
    const [sourceMaps, typescript] = result.module?.rules ?? [];
    expect(sourceMaps).toBe(config.module.rules[0]);
    expect(typescript).toEqual({
      ...config.module.rules[1],
      use: {
        loader: '/deps/node_modules/swc-loader/src/index.js',
        options: {
          sourceMap: true,
          jsc: { target: workflowSyntaxTarget, parser: { syntax: 'typescript', decorators: true } },
        },
      },
    });
    expect(result.mode).toBe('development');
    expect(config.module.rules[1]?.use).toMatchObject({ options: { jsc: { target: 'es2017' } } });
  });

  it('returns a config without the swc-loader unchanged', () => {
    const config = { module: { rules: [{ test: /\.ts$/, use: { loader: '/deps/ts-loader/index.js' } }] } };
    expect(keepModernSyntax(config)).toBe(config);
    const withoutRules = { mode: 'production' as const };
    expect(keepModernSyntax(withoutRules)).toBe(withoutRules);
  });

  // Guards the SDK upgrade: if its bundler stopped using swc-loader with a jsc target, the hook
  // would quietly do nothing and every spread would cost a helper call again.
  it("toolgate's bundle of the real SDK keeps object spread native", async () => {
    const { code } = await bundleToolgateWorkflows(exampleToolSet.workflowsPath);
    expect(code).not.toMatch(/function _object_spread\(/);
    // The gates spread a call's key into its record and its execution request only when it has one.
    expect(code).toMatch(/\.\.\.request\.key !== undefined \? \{\s*key: request\.key/);
  });
});
