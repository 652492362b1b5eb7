/**
 * The waiting phase: approval-tier calls that wait for a human, by the thousand. It reads what they
 * cost the worker's memory, how long a cached and an evicted call take to resume once approved,
 * and C's latency while they wait, with B measured beside C at each point so that C's growth can
 * be told from the dev server's.
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { Client } from '@temporalio/client';
import { decisionClaims } from '../src/client/approval-signer.ts';
import { callFingerprint } from '../src/contracts/fingerprint.ts';
import { decisionSignal } from '../workflows/messages.ts';
import {
  agent,
  type Environment,
  expectSucceeded,
  forEachLimited,
  progress,
  type RunnerConfig,
  round,
  startEnvironment,
  stopEnvironment,
  variantOperations,
} from './environment.ts';
import {
  type LatencySummary,
  newHistogram,
  type Operation,
  residentMegabytes,
  runClosedLoop,
  summarize,
} from './measure.ts';
import type { WaitingLevel, WaitingPhaseResult, WaitingPoint } from './result-types.ts';

interface WaitingCall {
  readonly callId: string;
  readonly runId: string;
  readonly fingerprint: string;
}

function collectGarbage(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

/** A full collection in this thread and in the workflow thread (see `benchCollectGarbage`). */
async function collectGarbageEverywhere(temporal: Client, taskQueue: string): Promise<boolean> {
  collectGarbage();
  const collected = (await temporal.workflow.execute('benchCollectGarbage', {
    workflowId: `bench-gc-${randomUUID()}`,
    taskQueue,
  })) as boolean;
  // V8 hands freed pages back to the system shortly after a collection.
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  return collected;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const seconds = (since: number) => round((performance.now() - since) / 1000, 2);

class WaitingPhase {
  private readonly settings: RunnerConfig['waiting'];
  private readonly operations: { readonly C: Operation; readonly B: Operation };
  private readonly waiting: WaitingCall[] = [];
  private readonly bBesideC: Partial<Record<WaitingPoint, LatencySummary>> = {};
  private approvalErrors = 0;
  private firstError: string | undefined;

  constructor(
    private readonly environment: Environment,
    private readonly config: RunnerConfig,
  ) {
    this.settings = config.waiting;
    // D's key is never used here: the phase times C and B only.
    this.operations = variantOperations(environment, 'unused');
  }

  async run(): Promise<WaitingPhaseResult> {
    const callUnloaded = await this.measureC('unloaded', 'none waiting');
    const prefill = this.settings.prefill > 0 ? await this.runPrefill() : undefined;
    const levels: WaitingLevel[] = [];
    for (const level of this.settings.levels) levels.push(await this.fillTo(level));
    const { resumeCached, resumeEvicted } = await this.measureResume();
    const callWhileWaiting = await this.measureC('whileWaiting', `${this.waiting.length} waiting`);
    const approvedCalls = this.waiting.length;
    const secondsToApproveAll = await this.approveAll(this.waiting, 'drain');
    progress(`approved ${approvedCalls} in ${secondsToApproveAll} s`);
    const callAfterDrain = await this.measureC('afterDrain', 'after the drain');
    return {
      cacheSize: this.settings.cacheSize,
      levels,
      resumeCached,
      resumeEvicted,
      callUnloaded,
      callWhileWaiting,
      callAfterDrain,
      ...(prefill ? { prefill } : {}),
      bBesideC: this.bBesideC,
      approvedCalls,
      secondsToApproveAll,
      approvalsPerSecond: round(approvedCalls / Math.max(0.001, secondsToApproveAll)),
      approvalErrors: this.approvalErrors,
      ...(this.firstError ? { firstError: this.firstError } : {}),
    };
  }

  /**
   * C at one point of the phase, with B beside it in mirrored halves (C, B, B, C), so that neither
   * meets a database the other's calls have grown more. Returns C's figures; B's are kept.
   */
  private async measureC(point: WaitingPoint, label: string): Promise<LatencySummary> {
    const { callConcurrency, callOperations } = this.settings;
    const warmUp = Math.min(20, callOperations);
    await runClosedLoop(this.operations.C, callConcurrency, warmUp);
    await runClosedLoop(this.operations.B, callConcurrency, warmUp);
    const half = Math.ceil(callOperations / 2);
    const c = newHistogram();
    const b = newHistogram();
    for (const [variant, histogram] of [
      ['C', c],
      ['B', b],
      ['B', b],
      ['C', c],
    ] as const) {
      histogram.add((await runClosedLoop(this.operations[variant], callConcurrency, half)).histogram);
    }
    const [cSummary, bSummary] = [summarize(c), summarize(b)];
    this.bBesideC[point] = bSummary;
    progress(
      `C, ${label}: p50 ${cSummary.p50Ms} ms, p99 ${cSummary.p99Ms} ms (B beside it: p50 ${bSummary.p50Ms} ms, p99 ${bSummary.p99Ms} ms)`,
    );
    return cSummary;
  }

  private async startWaiting(reference: string): Promise<WaitingCall> {
    const input = { reference, amountCents: 12_345 };
    const started = await this.environment.toolgate.start({ tool: 'bench_transfer', input }, agent);
    if (started.disposition !== 'started')
      throw new Error(`waiting call not started: ${started.disposition}`);
    return {
      callId: started.callId,
      runId: started.runId ?? '',
      fingerprint: callFingerprint('bench_transfer', input),
    };
  }

  /** Starts approval-tier calls into `into` until it holds `target`. */
  private async startMany(target: number, into: WaitingCall[], label: string): Promise<void> {
    const references = Array.from({ length: target - into.length }, () => randomUUID());
    await forEachLimited(references, this.settings.startConcurrency, async (reference) => {
      into.push(await this.startWaiting(reference));
      if (into.length % 1000 === 0) progress(`${label}: started ${into.length}/${target}`);
    });
  }

  /** Waits until visibility counts `expected` calls awaiting approval. */
  private async waitForAwaiting(expected: number): Promise<void> {
    const query = `TaskQueue = "${this.environment.taskQueue}" AND CallStatus = "awaiting_approval"`;
    const deadline = Date.now() + 600_000;
    while (Date.now() < deadline) {
      if ((await this.environment.temporal.workflow.count(query)).count >= expected) return;
      await sleep(500);
    }
    throw new Error(`fewer than ${expected} calls reached awaiting_approval within 10 minutes`);
  }

  private async approve(call: WaitingCall): Promise<void> {
    const { temporal, signer, toolgate } = this.environment;
    const claims = decisionClaims({
      callId: call.callId,
      runId: call.runId,
      decision: 'approve',
      approver: 'bench-approver',
      approverKind: 'human',
      roles: ['finance'],
      fingerprint: call.fingerprint,
    });
    await temporal.workflow.getHandle(call.callId).signal(decisionSignal, signer.sign(claims));
    expectSucceeded(await toolgate.result(call.callId), 'approved call');
  }

  /** Approves every call, counting failures rather than stopping; returns the seconds it took. */
  private async approveAll(calls: readonly WaitingCall[], label: string): Promise<number> {
    const startedAt = performance.now();
    let approved = 0;
    await forEachLimited(calls, this.settings.approveConcurrency, async (call) => {
      try {
        await this.approve(call);
      } catch (error) {
        this.approvalErrors++;
        this.firstError ??= error instanceof Error ? error.message : String(error);
      }
      if (++approved % 1000 === 0) {
        const rate = Math.round(approved / ((performance.now() - startedAt) / 1000));
        progress(`${label}: approved ${approved}/${calls.length} (${rate}/s)`);
      }
    });
    return seconds(startedAt);
  }

  /**
   * `--waiting-prefill N`: N calls started and approved before any call waits, then C measured on a
   * database as big as the one it meets later, with none waiting.
   */
  private async runPrefill(): Promise<NonNullable<WaitingPhaseResult['prefill']>> {
    const startedAt = performance.now();
    const closing: WaitingCall[] = [];
    await this.startMany(this.settings.prefill, closing, 'prefill');
    await this.waitForAwaiting(closing.length);
    await this.approveAll(closing, 'prefill');
    const secondsToStartAndApprove = seconds(startedAt);
    const label = `${this.settings.prefill} calls closed, none waiting`;
    const callAfterPrefill = await this.measureC('afterPrefill', label);
    return { calls: this.settings.prefill, secondsToStartAndApprove, callAfterPrefill };
  }

  /** Starts calls until `level` wait, then reads memory that is really held, not garbage. */
  private async fillTo(level: number): Promise<WaitingLevel> {
    const startedAt = performance.now();
    await this.startMany(level, this.waiting, 'waiting calls');
    await this.waitForAwaiting(level);
    const secondsToStart = seconds(startedAt);
    await sleep(2_000);
    const rssBeforeGc = process.memoryUsage().rss;
    const { temporal, taskQueue } = this.environment;
    const collectedInWorkflowThread = await collectGarbageEverywhere(temporal, taskQueue);
    const memory = process.memoryUsage();
    const entry: WaitingLevel = {
      waiting: level,
      secondsToStart,
      workerRssMb: round(memory.rss / 2 ** 20),
      workerRssBeforeGcMb: round(rssBeforeGc / 2 ** 20),
      collectedInWorkflowThread,
      workerHeapMb: round(memory.heapUsed / 2 ** 20),
      workerExternalMb: round(memory.external / 2 ** 20),
      serverRssMb: residentMegabytes(this.config.serverPid) ?? 0,
    };
    progress(`${level} waiting: ${JSON.stringify(entry)}`);
    return entry;
  }

  /**
   * Resume latency, in interleaved pairs: a call approved right after it started is in the worker's
   * cache; one of the oldest calls was evicted long ago (the cache holds `cacheSize`), so its
   * history is replayed.
   */
  private async measureResume(): Promise<{ resumeCached: LatencySummary; resumeEvicted: LatencySummary }> {
    const cached = newHistogram();
    const evicted = newHistogram();
    const timed = async (call: WaitingCall, histogram: typeof cached) => {
      const startedAt = performance.now();
      await this.approve(call);
      histogram.recordValue(Math.round((performance.now() - startedAt) * 1000));
    };
    const oldest = this.waiting.splice(0, this.settings.resumeSamples);
    for (const old of oldest) {
      await timed(await this.freshWaitingCall(), cached);
      await timed(old, evicted);
    }
    const result = { resumeCached: summarize(cached), resumeEvicted: summarize(evicted) };
    progress(
      `resume cached p50 ${result.resumeCached.p50Ms} ms, evicted p50 ${result.resumeEvicted.p50Ms} ms`,
    );
    return result;
  }

  /** A call started just now, once it waits for approval. */
  private async freshWaitingCall(): Promise<WaitingCall> {
    const fresh = await this.startWaiting(randomUUID());
    const deadline = Date.now() + 30_000;
    while ((await this.environment.toolgate.get(fresh.callId))?.status !== 'awaiting_approval') {
      if (Date.now() > deadline) throw new Error('a fresh waiting call never reached awaiting_approval');
      await sleep(20);
    }
    return fresh;
  }
}

export async function runWaitingPhase(config: RunnerConfig): Promise<WaitingPhaseResult> {
  const tuning = { ...config.workerTuning, maxCachedWorkflows: config.waiting.cacheSize };
  const environment = await startEnvironment(config, tuning);
  try {
    return await new WaitingPhase(environment, config).run();
  } finally {
    await stopEnvironment(environment);
  }
}
