import { describe, expect, it } from 'vitest';
import { categoryOf, summarise, threadOf } from '../../bench/profile-summary.ts';

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
});
