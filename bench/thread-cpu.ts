/**
 * CPU per thread of the runner process, so a variant's extra CPU can be placed: the main thread (the
 * load generator, the client, activities, the worker's Node side), each worker's workflow thread
 * (the workflow sandbox), the Rust core's threads, and the rest (V8's and libuv's helpers, the GC).
 * Read from /proc at 100 ticks a second, per block of calls; on a system without /proc every figure
 * is absent and nothing else changes.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { threadCpuMilliseconds } from './measure.ts';

export const threadGroups = ['main', 'toolgateWorkflow', 'bareWorkflow', 'core', 'other'] as const;
export type ThreadGroup = (typeof threadGroups)[number];
export type ThreadCpu = Record<ThreadGroup, number>;

/** The threads of this process, by thread ID, with their names (Node's own threads are all "node"). */
export function listThreads(): Map<number, string> {
  const threads = new Map<number, string>();
  try {
    for (const tid of readdirSync('/proc/self/task')) {
      try {
        threads.set(Number(tid), readFileSync(`/proc/self/task/${tid}/comm`, 'utf8').trim());
      } catch {
        // The thread ended between the listing and the read.
      }
    }
  } catch {
    // No /proc: no figures.
  }
  return threads;
}

/**
 * Names Node gives its own threads: all "node" up to Node 20; from Node 22 on, "MainThread",
 * "WorkerThread" for worker_threads, and names for V8's and libuv's helpers.
 */
const workerThreadNames = new Set(['node', 'WorkerThread']);
const nodeHelperNames =
  /^(?:node|MainThread|WorkerThread|V8Worker|DelayedTaskSche|SignalInspector|libuv-worker)/;

/**
 * The workflow threads a worker started: the worker threads that appeared while it was created
 * (`before` is the listing taken just before). The SDK starts them in `Worker.create`.
 */
export function newNodeThreads(before: ReadonlyMap<number, string>): number[] {
  return [...listThreads()]
    .filter(([tid, name]) => workerThreadNames.has(name) && !before.has(tid))
    .map(([tid]) => tid);
}

/** Reads every thread's CPU now and sums it by group. */
export function threadCpuNow(workflowThreads: {
  readonly toolgate: readonly number[];
  readonly bare: readonly number[];
}): ThreadCpu | undefined {
  const threads = listThreads();
  if (threads.size === 0) return undefined;
  const sums: ThreadCpu = { main: 0, toolgateWorkflow: 0, bareWorkflow: 0, core: 0, other: 0 };
  for (const [tid, name] of threads) {
    const ms = threadCpuMilliseconds(tid) ?? 0;
    const group: ThreadGroup =
      tid === process.pid
        ? 'main'
        : workflowThreads.toolgate.includes(tid)
          ? 'toolgateWorkflow'
          : workflowThreads.bare.includes(tid)
            ? 'bareWorkflow'
            : nodeHelperNames.test(name)
              ? 'other'
              : 'core';
    sums[group] += ms;
  }
  return sums;
}
