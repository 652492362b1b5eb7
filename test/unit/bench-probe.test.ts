import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { isMainThread, Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { calibrateSpin, spin } from '../../bench/busy-work.ts';
import { listThreads, newNodeThreads, threadCpuNow } from '../../bench/thread-cpu.ts';
import { benchCell, renderLatencyReport } from '../support/bench-cells.ts';

const burnCpuModule = fileURLToPath(new URL('../support/burn-cpu.cjs', import.meta.url));
const { burnOwnCpu } = createRequire(import.meta.url)(burnCpuModule) as { burnOwnCpu(ms: number): void };

describe('the B-idx+cpu probe and the CPU per thread', () => {
  it('spins deterministically: the same count gives the same hash, so a workflow replays it', () => {
    expect(spin(10_000)).toBe(spin(10_000));
    expect(spin(10_000)).not.toBe(spin(10_001));
    expect(Number.isInteger(spin(1))).toBe(true);
  });

  it('calibrates iterations per millisecond from the median of its timed runs', () => {
    // A clock that advances 4 ms at every reading: each timed run takes 2,000,000 iterations in 4 ms.
    let tick = 0;
    const rate = calibrateSpin(() => {
      tick += 4;
      return tick;
    });
    expect(rate).toBe(500_000);
  });

  it("places a worker thread's CPU in its own group and the main thread's in main", async () => {
    // "main" is the process's main thread: this test must run there (vitest's forks pool), not in a
    // worker thread of the test runner.
    expect(isMainThread).toBe(true);
    const before = listThreads();
    // Each thread burns 300 ms of its own CPU (test/support/burn-cpu.cjs), however busy the machine.
    const worker = new Worker(
      `const { parentPort } = require('node:worker_threads');
      const { burnOwnCpu } = require(${JSON.stringify(burnCpuModule)});
      parentPort.on('message', (ms) => {
        burnOwnCpu(ms);
        parentPort.postMessage('done');
      });`,
      { eval: true },
    );
    try {
      await new Promise((resolve) => worker.once('online', resolve));
      const workerThreads = newNodeThreads(before);
      expect(workerThreads.length).toBeGreaterThanOrEqual(1);
      const groups = { toolgate: workerThreads, bare: [] };
      const start = threadCpuNow(groups);
      worker.postMessage(300);
      await new Promise((resolve) => worker.once('message', resolve));
      const afterWorker = threadCpuNow(groups);
      burnOwnCpu(300);
      const afterMain = threadCpuNow(groups);
      if (!start || !afterWorker || !afterMain) throw new Error('no /proc');
      expect(afterWorker.toolgateWorkflow - start.toolgateWorkflow).toBeGreaterThanOrEqual(290);
      expect(afterWorker.main - start.main).toBeLessThan(150);
      expect(afterMain.main - afterWorker.main).toBeGreaterThanOrEqual(290);
      expect(afterMain.toolgateWorkflow - afterWorker.toolgateWorkflow).toBeLessThan(150);
      expect(afterMain.bareWorkflow).toBe(0);
    } finally {
      await worker.terminate();
    }
  });

  it('reports CPU per call by thread with the difference from B', () => {
    const threads = (main: number, workflow: number) => ({
      main,
      toolgateWorkflow: 0,
      bareWorkflow: workflow,
      core: 2,
      other: 1,
    });
    const markdown = renderLatencyReport({
      cells: [
        { ...benchCell('B', 'c1', 50), threadCpuMsPerCall: threads(8, 7) },
        {
          ...benchCell('C', 'c1', 55),
          threadCpuMsPerCall: { ...threads(9.5, 0), toolgateWorkflow: 8.25, other: 0.996 },
        },
      ],
    });
    expect(markdown).toContain('## Worker CPU per call by thread');
    expect(markdown).toContain('| B | c1 | 8.00 | 7.00 | 2.00 | 1.00 |');
    // C ran on toolgate's worker, B on the bare one: each is compared by its own workflow thread.
    expect(markdown).toContain('| C | c1 | 9.50 (+1.50) | 8.25 (+1.25) | 2.00 (+0.00) | 1.00 (+0.00) |');
  });
});
