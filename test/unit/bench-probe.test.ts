import { readFileSync } from 'node:fs';
import { isMainThread, Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { calibrateSpin, spin } from '../../bench/busy-work.ts';
import { listThreads, newNodeThreads, threadCpuNow } from '../../bench/thread-cpu.ts';
import { benchCell, renderLatencyReport } from '../support/bench-cells.ts';

/** CPU time of the calling thread, in ms (100 ticks a second). */
function ownCpuMs(): number {
  const stat = readFileSync('/proc/thread-self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** Runs until this thread has used `ms` of CPU (20 s of wall time at most). */
function burnOwnCpu(ms: number): void {
  const start = ownCpuMs();
  const deadline = Date.now() + 20_000;
  while (ownCpuMs() - start < ms && Date.now() < deadline) for (let index = 0; index < 1e5; index++);
}

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
    // Each loop runs until its own thread has used 300 ms of CPU (its /proc/thread-self/stat), so a
    // busy machine makes it take longer but cannot make it use less.
    // The same loop as burnOwnCpu, in plain JavaScript for the worker thread.
    const worker = new Worker(
      `const { readFileSync } = require('node:fs');
      const { parentPort } = require('node:worker_threads');
      const ownCpuMs = () => {
        const fields = readFileSync('/proc/thread-self/stat', 'utf8').split(') ')[1].split(' ');
        return (Number(fields[11]) + Number(fields[12])) * 10;
      };
      parentPort.on('message', (ms) => {
        const start = ownCpuMs();
        const deadline = Date.now() + 20000;
        while (ownCpuMs() - start < ms && Date.now() < deadline) for (let i = 0; i < 1e5; i++);
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
