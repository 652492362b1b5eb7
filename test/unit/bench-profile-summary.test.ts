import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import {
  bundleCategoryOf,
  bundleFileName,
  bundleMaps,
  categoryOf,
  summarise,
  threadOf,
} from '../../bench/profile-summary.ts';

describe('bench/profile-summary', () => {
  it('says where a frame lives from its URL', () => {
    expect(categoryOf('file:///w/main/src/client/toolgate-client.ts', 'start')).toBe('toolgate');
    expect(categoryOf('file:///w/main/activities/check-and-run.ts', 'run')).toBe('toolgate');
    expect(categoryOf('file:///w/main/bench/runner.ts', 'loop')).toBe('bench');
    expect(categoryOf('file:///w/main/node_modules/@temporalio/worker/lib/worker.js', 'x')).toBe(
      'temporal sdk',
    );
    expect(categoryOf('file:///w/main/node_modules/zod/v4/core/parse.js', 'x')).toBe('zod');
    expect(categoryOf('file:///w/main/node_modules/commander/index.js', 'x')).toBe('other dependencies');
    expect(categoryOf('file:///w/main/workflow-bundle-044737ed763f.js', 'toolCall')).toBe('workflow bundle');
    expect(categoryOf('evalmachine.<anonymous>', 'x')).toBe('workflow bundle');
    expect(categoryOf('node:internal/vm', 'x')).toBe('node internals');
    expect(categoryOf('', '(garbage collector)')).toBe('(garbage collector)');
  });

  it('tells the main thread from worker threads by the file name', () => {
    expect(threadOf('CPU.20261204.234940.1181.0.001.cpuprofile')).toBe('main');
    expect(threadOf('CPU.20261204.234940.1181.3.004.cpuprofile')).toBe('worker thread');
  });

  it('sums each sample delta against the frame sampled, by category and by function', () => {
    const profile = {
      nodes: [
        { id: 1, callFrame: { functionName: '(root)', url: '', lineNumber: -1 } },
        {
          id: 2,
          callFrame: {
            functionName: 'prepareCall',
            url: 'file:///r/src/contracts/prepare-call.ts',
            lineNumber: 9,
          },
        },
        {
          id: 3,
          callFrame: { functionName: 'parse', url: 'file:///r/node_modules/zod/index.js', lineNumber: 0 },
        },
      ],
      samples: [2, 3, 2, 1],
      timeDeltas: [1000, 2000, 500, 250],
    };
    const summary = summarise([{ name: 'CPU.1.2.3.0.001.cpuprofile', profile }]);
    expect(summary.byCategory.get('main\ttoolgate')).toBeCloseTo(1.5);
    expect(summary.byCategory.get('main\tzod')).toBeCloseTo(2);
    expect(summary.byFunction.get('main\tprepareCall\tsrc/contracts/prepare-call.ts:10')).toBeCloseTo(1.5);
  });

  it('says whose code a module of a workflow bundle is', () => {
    expect(bundleCategoryOf('/w/main/workflows/tool-call.ts')).toBe('workflow bundle: toolgate');
    expect(bundleCategoryOf('/w/main/src/contracts/prepare-call.ts')).toBe('workflow bundle: toolgate');
    expect(bundleCategoryOf('/w/main/bench/bare-workflows.ts')).toBe('workflow bundle: bench');
    expect(bundleCategoryOf('/w/main/node_modules/@temporalio/workflow/lib/worker-interface.js')).toBe(
      'workflow bundle: temporal sdk',
    );
    expect(bundleCategoryOf('/w/main/node_modules/zod/v4/core/parse.js')).toBe('workflow bundle: zod');
    expect(bundleCategoryOf('webpack/runtime/define property getters')).toBe('workflow bundle: other');
  });

  it('maps frames of a real workflow bundle back to the module they came from', async () => {
    const bareWorkflows = fileURLToPath(new URL('../../bench/bare-workflows.ts', import.meta.url));
    const logger = { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} };
    const { code } = await bundleWorkflowCode({ workflowsPath: bareWorkflows, logger });
    const name = bundleFileName(code);
    expect(name).toMatch(/^workflow-bundle-[0-9a-f]+\.js$/);
    // Where the bundle defines bare-workflows.ts's first workflow, as V8 would report the frame.
    const lines = code.split('\n');
    const lineNumber = lines.findIndex((line) => /async function bareCall\b/.test(line));
    expect(lineNumber).toBeGreaterThan(0);
    const columnNumber = lines[lineNumber]?.indexOf('async function bareCall') ?? -1;
    const maps = bundleMaps(new Map([[name, code]]));
    const mapped = maps.find(`/some/cwd/${name}`, lineNumber, columnNumber);
    expect(mapped?.source).toBe(bareWorkflows);
    expect(bundleCategoryOf(mapped?.source ?? '')).toBe('workflow bundle: bench');
    // A bundle the folder does not hold, or a frame outside any bundle, stays unmapped.
    expect(maps.find('/some/cwd/workflow-bundle-0000.js', lineNumber, columnNumber)).toBeUndefined();
    expect(maps.find('file:///w/main/src/x.ts', lineNumber, columnNumber)).toBeUndefined();

    const profile = {
      nodes: [
        { id: 1, callFrame: { functionName: '(root)', url: '', lineNumber: -1 } },
        { id: 2, callFrame: { functionName: 'bareCall', url: `/cwd/${name}`, lineNumber, columnNumber } },
      ],
      samples: [2, 2],
      timeDeltas: [1000, 1000],
    };
    const summary = summarise([{ name: 'CPU.1.2.3.4.001.cpuprofile', profile }], maps);
    expect(summary.byCategory.get('worker thread\tworkflow bundle: bench')).toBeCloseTo(2);
    expect(summary.byCategory.get('worker thread\tworkflow bundle')).toBeUndefined();
  });

  it('refuses a bundle without a source map naming it', () => {
    expect(() => bundleFileName('var x = 1;')).toThrow(/no inline source map/);
  });
});
