/**
 * `npm run bench`: toolgate against bare Temporal, side by side, on one dev server started here.
 * `npm run bench -- --quick` is the smoke mode: small counts, asserts only that every variant
 * completed. See docs/benchmarks.md for the options and how to read the output.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { join, resolve as resolvePath } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { findTemporalCli, startDevServer, temporalCliVersion } from '../src/dev/index.ts';
import { type BlockOrder, type BlockOrderKind, blockOrderKinds, freshSeed } from './block-order.ts';
import { type BusyWork, defaultBusyWork } from './busy-work.ts';
import { benchDigest, productDigest } from './pool.ts';
import { checkTargets, missNote, renderMarkdown, renderSvg } from './report.ts';
import {
  type LatencyPhaseResult,
  probeVariants,
  type TargetCheck,
  type VariantName,
  variantNames,
  type WaitingPhaseResult,
} from './result-types.ts';
import type { RunnerConfig, RunnerMessage } from './runner.ts';

/** The whole of `bench/results/latest.json`. */
export interface BenchResults {
  readonly meta: {
    readonly startedAt: string;
    readonly finishedAt: string;
    readonly durationSeconds: number;
    readonly quick: boolean;
    readonly cores: number;
    readonly cpuModel: string;
    readonly node: string;
    readonly temporalCli: string;
    readonly serverExtraArgs: readonly string[];
    readonly repetitions: number;
    readonly concurrencyLevels: readonly number[];
    readonly operationsPerBlock: Readonly<Record<string, number>>;
    readonly openLoopRatePerSecond: number;
    readonly openLoopDurationMs: number;
    /** Absent in results written before round 10, whose blocks were `rotated`. */
    readonly blockOrder?: BlockOrder;
    /**
     * A digest of the product code measured (src/, workflows/, activities/; bench/pool.ts), so that
     * runs of different code are not pooled. Absent in results written before round 12.
     */
    readonly productDigest?: string;
    /** A digest of the bench's own code (bench/, results left out). Absent before round 12's end. */
    readonly benchDigest?: string;
  };
  readonly latency?: LatencyPhaseResult;
  readonly waiting?: WaitingPhaseResult;
  readonly targets: TargetCheck[];
  /** Variants (or the waiting phase) that did not complete every call. Empty on success. */
  readonly incomplete: string[];
}

const benchDirectory = fileURLToPath(new URL('.', import.meta.url));
const runnerPath = join(benchDirectory, 'runner.ts');

const usage = `npm run bench [-- options]: toolgate against bare Temporal, side by side, in one run

Starts its own Temporal dev server (throwaway SQLite file, free loopback ports), runs every variant
interleaved in blocks, and writes bench/results/<name>.json, .md (ratios against B) and .svg.
Speed never fails the run; the exit code is 1 when any call of any variant failed, 2 for bad options.

  --quick                    smoke mode (< 1 min): small counts, asserts only that every variant completed
  --phase all|latency|waiting
                             run one phase only (default all)
  --variants B,C,C-fast      a subset of: ${variantNames.join(', ')}
  --concurrency 4,16         closed-loop caller counts (default 1,4,16,64)
  --repetitions 3            repetitions of the latency phase
  --scale 2                  multiply the calls per block (120/144/144/288 at 1/4/16/64 callers)
  --open-rate 15             arrivals per second of the open-loop condition
  --open-seconds 24          length of each open-loop block (default 24 s: 360 arrivals at 15/s,
                             so over 3 repetitions the p99 rests on about 11 calls, not 4)
  --waiting-levels 1000,5000,10000
                             waiting approval-tier calls in the scale phase
  --waiting-cache 100        the worker's workflow cache size in the scale phase
  --waiting-prefill 10000    before any call waits, start and approve this many approval-tier calls
                             and measure C again: none waiting, but a database that holds them
                             closed (separates "calls waiting" from "a bigger database"; default 0)
  --waiting-bare B,B-idx     measure these bare-Temporal variants beside C at each point of the
                             waiting phase (in halves: C, B, B-idx, B-idx, B, C), so that C's growth
                             can be read against bare Temporal's on the same database. Default
                             B-idx, C's floor, which the waiting target reads; none measures C alone
  --sqlite-pragma k=v        repeatable; replaces the default journal_mode=wal, synchronous=off
  --dynamic-config k=v       repeatable; extra dynamic config for the dev server
  --worker-tuning JSON       worker options, e.g. '{"maxCachedWorkflows":200}'
  --order shuffled|rotated   block order per round: a fresh random permutation (default), or the
                             first round's order rotated by one (each variant keeps its neighbour)
  --seed N                   seed of the shuffled order (default random). Every run records its
                             seed: the same seed and --variants repeat a run's order
  --output-name NAME         result file names under bench/results/ (default latest, or quick)
  --cpu-profile DIR          write a .cpuprofile per runner thread (open in Chrome DevTools), and the
                             workflow bundles beside them; sum them with bench/profile-summary.ts
  --busy-ms 0.5,1,0.5        the B-idx+cpu probe's extra CPU per call, in ms: caller, workflow, activity.
                             Probes run only when --variants names them (and in --quick)
  --help                     this text

Examples:
  npm run bench                                   full run, 20 to 40 minutes on 2 cores
  npm run bench -- --quick                        what .ci/run does
  npm run bench -- --phase latency --variants B,C --concurrency 16 --output-name try1
How to read the output: README "Benchmarks: how to read them", and docs/benchmarks.md.
`;

/** A bad option: the message says what was wrong and what to type instead. */
class UsageError extends Error {}

function parseOptions() {
  try {
    return parseArgs({
      options: {
        help: { type: 'boolean', short: 'h', default: false },
        quick: { type: 'boolean', default: false },
        phase: { type: 'string', default: 'all' },
        variants: { type: 'string' },
        'sqlite-pragma': { type: 'string', multiple: true, default: ['journal_mode=wal', 'synchronous=off'] },
        'dynamic-config': { type: 'string', multiple: true, default: [] },
        'worker-tuning': { type: 'string', default: '{}' },
        'open-rate': { type: 'string' },
        'open-seconds': { type: 'string' },
        'waiting-levels': { type: 'string' },
        'output-name': { type: 'string' },
        concurrency: { type: 'string' },
        repetitions: { type: 'string' },
        scale: { type: 'string' },
        'cpu-profile': { type: 'string' },
        'waiting-cache': { type: 'string' },
        'waiting-prefill': { type: 'string' },
        'waiting-bare': { type: 'string' },
        order: { type: 'string', default: 'shuffled' },
        seed: { type: 'string' },
        'busy-ms': { type: 'string' },
      },
      strict: true,
      allowPositionals: false,
    }).values;
  } catch (error) {
    throw new UsageError(`${error instanceof Error ? error.message : String(error)}`);
  }
}

function positiveNumber(name: string, text: string | undefined, options: { integer?: boolean } = {}) {
  if (text === undefined) return undefined;
  const value = Number(text);
  if (!Number.isFinite(value) || value <= 0 || (options.integer && !Number.isInteger(value))) {
    throw new UsageError(
      `--${name} ${JSON.stringify(text)} is not a positive ${options.integer ? 'whole ' : ''}number`,
    );
  }
  return value;
}

function positiveList(name: string, text: string | undefined): number[] | undefined {
  return text?.split(',').map((part) => positiveNumber(name, part.trim(), { integer: true }) as number);
}

/** The options, checked and parsed once; every later use reads these. */
interface BenchSettings {
  readonly quick: boolean;
  readonly phase: 'all' | 'latency' | 'waiting';
  readonly variants: VariantName[] | undefined;
  readonly concurrency: number[] | undefined;
  readonly waitingLevels: number[] | undefined;
  readonly repetitions: number | undefined;
  readonly waitingCache: number | undefined;
  readonly waitingPrefill: number;
  readonly waitingBare: VariantName[];
  readonly scale: number;
  readonly openRate: number | undefined;
  readonly openSeconds: number | undefined;
  readonly workerTuning: Record<string, unknown>;
  readonly outputName: string | undefined;
  readonly serverExtraArgs: string[];
  readonly cpuProfile: string | undefined;
  readonly blockOrder: BlockOrder;
  readonly busyWork: BusyWork;
}

/**
 * `--waiting-bare B,B-idx`: bare-Temporal variants (not eager, not probes) to measure beside C.
 * B-idx by default, so that the waiting target can name its floor; `none` measures C alone.
 */
function bareVariantsOption(text: string | undefined): VariantName[] {
  if (text === undefined) return ['B-idx'];
  if (text.trim() === 'none') return [];
  const allowed = ['B', 'B-twin', 'B-idx'];
  const names = text.split(',').map((name) => name.trim());
  for (const name of names) {
    if (!allowed.includes(name)) {
      throw new UsageError(
        `--waiting-bare: ${JSON.stringify(name)} cannot be measured in the waiting phase; use some of ${allowed.join(', ')}, or none`,
      );
    }
  }
  return names as VariantName[];
}

/** `--busy-ms caller,workflow,activity`: three numbers of milliseconds, each 0 to 50. */
function busyWorkOption(text: string | undefined): BusyWork {
  if (text === undefined) return defaultBusyWork;
  const parts = text.split(',').map((part) => Number(part.trim()));
  if (parts.length !== 3 || parts.some((part) => !Number.isFinite(part) || part < 0 || part > 50)) {
    throw new UsageError(
      `--busy-ms ${JSON.stringify(text)}: give three numbers of milliseconds from 0 to 50 (caller, workflow, activity), e.g. 0.5,1,0.5`,
    );
  }
  const [callerMs, workflowMs, activityMs] = parts as [number, number, number];
  return { callerMs, workflowMs, activityMs };
}

function checkOptions(values: ReturnType<typeof parseOptions>): BenchSettings {
  const phase = values.phase ?? 'all';
  if (phase !== 'all' && phase !== 'latency' && phase !== 'waiting') {
    throw new UsageError(`--phase ${JSON.stringify(values.phase)}: use all, latency or waiting`);
  }
  const variants = values.variants?.split(',').map((name) => name.trim());
  for (const name of variants ?? []) {
    if (!(variantNames as readonly string[]).includes(name)) {
      throw new UsageError(
        `--variants: there is no variant ${JSON.stringify(name)}; the variants are ${variantNames.join(', ')}`,
      );
    }
  }
  let workerTuning: unknown;
  try {
    workerTuning = JSON.parse(values['worker-tuning'] ?? '{}');
  } catch {
    throw new UsageError(`--worker-tuning is not JSON; write an object, e.g. '{"maxCachedWorkflows":200}'`);
  }
  if (typeof workerTuning !== 'object' || workerTuning === null || Array.isArray(workerTuning)) {
    throw new UsageError(`--worker-tuning must be a JSON object, e.g. '{"maxCachedWorkflows":200}'`);
  }
  const outputName = values['output-name'];
  if (outputName !== undefined && !/^[A-Za-z0-9_-]{1,64}$/.test(outputName)) {
    throw new UsageError(`--output-name ${JSON.stringify(outputName)}: use 1-64 letters, digits, _ or -`);
  }
  const orderKind = values.order ?? 'shuffled';
  if (!(blockOrderKinds as readonly string[]).includes(orderKind)) {
    throw new UsageError(`--order ${JSON.stringify(values.order)}: use ${blockOrderKinds.join(' or ')}`);
  }
  const seed = values.seed === undefined ? freshSeed() : Number(values.seed);
  if (values.seed !== undefined && (!/^\d{1,10}$/.test(values.seed) || seed >= 2 ** 32)) {
    throw new UsageError(
      `--seed ${JSON.stringify(values.seed)}: use a whole number from 0 to ${2 ** 32 - 1}, e.g. the seed a run recorded`,
    );
  }
  const pragmas = values['sqlite-pragma'] ?? [];
  const dynamicConfig = values['dynamic-config'] ?? [];
  for (const pair of [...pragmas, ...dynamicConfig]) {
    if (!/^[^=\s]+=\S+$/.test(pair)) throw new UsageError(`${JSON.stringify(pair)} is not key=value`);
  }
  return {
    quick: values.quick ?? false,
    phase,
    variants: variants as VariantName[] | undefined,
    concurrency: positiveList('concurrency', values.concurrency),
    waitingLevels: positiveList('waiting-levels', values['waiting-levels']),
    repetitions: positiveNumber('repetitions', values.repetitions, { integer: true }),
    waitingCache: positiveNumber('waiting-cache', values['waiting-cache'], { integer: true }),
    waitingPrefill: positiveNumber('waiting-prefill', values['waiting-prefill'], { integer: true }) ?? 0,
    waitingBare: bareVariantsOption(values['waiting-bare']),
    scale: positiveNumber('scale', values.scale) ?? 1,
    openRate: positiveNumber('open-rate', values['open-rate']),
    openSeconds: positiveNumber('open-seconds', values['open-seconds']),
    workerTuning: workerTuning as Record<string, unknown>,
    outputName,
    serverExtraArgs: [
      ...pragmas.flatMap((pragma) => ['--sqlite-pragma', pragma]),
      ...dynamicConfig.flatMap((value) => ['--dynamic-config-value', value]),
    ],
    cpuProfile: values['cpu-profile'],
    blockOrder: { kind: orderKind as BlockOrderKind, seed },
    busyWork: busyWorkOption(values['busy-ms']),
  };
}

let options: BenchSettings;
try {
  const values = parseOptions();
  if (values.help) {
    process.stdout.write(usage);
    process.exit(0);
  }
  options = checkOptions(values);
} catch (error) {
  if (!(error instanceof UsageError)) throw error;
  process.stderr.write(`bench: ${error.message}\nRun \`npm run bench -- --help\` for the options.\n`);
  process.exit(2);
}

/**
 * Calls per block at each closed-loop level of a full run (before `--scale`): at least 360 samples
 * per condition over 3 repetitions, so that a p99 is not one unlucky call.
 */
const defaultOperations: Record<number, number> = { 1: 120, 4: 144, 16: 144, 64: 288 };

/**
 * Length of an open-loop block in a full run. The open loop is the noisiest cell of the p99 line
 * (round 32: C's three repetitions spread over 1.24-2.24× B), and at 8 s its p99 rested on about 4
 * calls of 360; 24 s gives 1,080 arrivals over 3 repetitions, about 11 calls above the p99.
 */
const defaultOpenSeconds = 24;

function buildConfig(address: string, serverPid: number, dataDir: string): Omit<RunnerConfig, 'mode'> {
  // A quick run smokes every variant, probes included; a measured run leaves probes to --variants.
  const variants =
    options.variants ?? variantNames.filter((name) => options.quick || !probeVariants.has(name));
  const tuning = options.workerTuning;
  const waitingLevels = options.waitingLevels;
  if (options.quick) {
    return {
      address,
      serverPid,
      dataDir,
      variants,
      repetitions: 1,
      concurrencyLevels: [1, 4],
      operationsPerBlock: { c1: 5, c4: 8 },
      warmupOperations: 4,
      openLoopRatePerSecond: options.openRate ?? 10,
      openLoopDurationMs: (options.openSeconds ?? 1) * 1_000,
      duplicateHoldMs: 300,
      workerTuning: tuning,
      blockOrder: options.blockOrder,
      busyWork: options.busyWork,
      waiting: {
        levels: waitingLevels ?? [50],
        cacheSize: 10,
        prefill: options.waitingPrefill,
        bare: options.waitingBare,
        resumeSamples: 3,
        callOperations: 10,
        callConcurrency: 2,
        startConcurrency: 16,
        approveConcurrency: 16,
      },
    };
  }
  const scale = options.scale;
  const concurrencyLevels = options.concurrency ?? [1, 4, 16, 64];
  const operationsPerBlock = Object.fromEntries(
    concurrencyLevels.map((level) => [
      `c${level}`,
      Math.max(level, Math.round((defaultOperations[level] ?? level * 3) * scale)),
    ]),
  );
  return {
    address,
    serverPid,
    dataDir,
    variants,
    repetitions: options.repetitions ?? 3,
    concurrencyLevels,
    operationsPerBlock,
    warmupOperations: 20,
    openLoopRatePerSecond: options.openRate ?? 15,
    openLoopDurationMs: (options.openSeconds ?? defaultOpenSeconds) * 1_000,
    duplicateHoldMs: 300,
    workerTuning: tuning,
    blockOrder: options.blockOrder,
    busyWork: options.busyWork,
    waiting: {
      levels: waitingLevels ?? [1_000, 5_000, 10_000],
      cacheSize: options.waitingCache ?? 100,
      prefill: options.waitingPrefill,
      bare: options.waitingBare,
      resumeSamples: 20,
      callOperations: 1_200,
      callConcurrency: 4,
      startConcurrency: 64,
      approveConcurrency: 64,
    },
  };
}

function log(line: string): void {
  process.stderr.write(`[bench] ${line}\n`);
}

let activeRunner: ChildProcess | undefined;

/** Forks one runner process for a phase and resolves with its result message. */
function runPhase(config: RunnerConfig): Promise<RunnerMessage> {
  return new Promise((resolve, reject) => {
    const child = fork(runnerPath, [], {
      // --expose-gc lets the waiting phase measure memory that is held rather than garbage.
      execArgv: [
        '--import',
        'tsx',
        '--expose-gc',
        // One .cpuprofile per thread (main and the workflow threads) for Chrome DevTools.
        ...(options.cpuProfile ? ['--cpu-prof', `--cpu-prof-dir=${resolvePath(options.cpuProfile)}`] : []),
      ],
      env: {
        ...process.env,
        // With profiles, the runner also writes its workflow bundles beside them, so that
        // bench/profile-summary.ts can map the bundles' frames to the modules they came from.
        BENCH_RUNNER_CONFIG: JSON.stringify(
          options.cpuProfile ? { ...config, bundleDir: resolvePath(options.cpuProfile) } : config,
        ),
      },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    activeRunner = child;
    let result: RunnerMessage | undefined;
    child.on('message', (message: RunnerMessage) => {
      if (message.type === 'progress') log(`${config.mode}: ${message.line}`);
      else result = message;
    });
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      activeRunner = undefined;
      if (result) resolve(result);
      else
        reject(
          new Error(`the ${config.mode} runner exited (code ${code}, signal ${signal}) without a result`),
        );
    });
  });
}

async function main(): Promise<number> {
  const startedAt = new Date();
  // Taken before the run, so that an edit made while it runs is not recorded as what it measured.
  const [digest, benchCode] = await Promise.all([productDigest(), benchDigest()]);
  const { quick, phase, serverExtraArgs } = options;
  const directory = await mkdtemp(join(tmpdir(), 'toolgate-bench-'));
  const cli = await findTemporalCli({ onProgress: (line) => log(`temporal cli: ${line}`) });
  const server = await startDevServer({
    cli,
    dbFile: join(directory, 'temporal.db'),
    grpcPort: 0,
    uiPort: 0,
    headless: true,
    extraArgs: serverExtraArgs,
    onProgress: (line) => log(line),
  });
  const stopAll = async () => {
    if (activeRunner?.pid) activeRunner.kill('SIGKILL');
    await server.stop();
  };
  const onSignal = () => {
    void stopAll().finally(() => process.exit(130));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);

  const incomplete: string[] = [];
  let latency: LatencyPhaseResult | undefined;
  let waiting: WaitingPhaseResult | undefined;
  const base = buildConfig(server.address, server.pid, directory);
  log(
    base.blockOrder.kind === 'shuffled'
      ? `blocks in a shuffled order per round, seed ${base.blockOrder.seed} (--seed ${base.blockOrder.seed} with the same variants repeats it)`
      : 'blocks in a rotated order (each variant keeps its neighbour)',
  );
  try {
    if (phase === 'all' || phase === 'latency') {
      const message = await runPhase({ ...base, mode: 'latency' });
      if (message.type === 'latency') latency = message.result;
      else
        incomplete.push(`latency phase failed: ${message.type === 'failed' ? message.error : message.type}`);
    }
    if (phase === 'all' || phase === 'waiting') {
      const message = await runPhase({ ...base, mode: 'waiting' });
      if (message.type === 'waiting') waiting = message.result;
      else
        incomplete.push(`waiting phase failed: ${message.type === 'failed' ? message.error : message.type}`);
    }
  } finally {
    await stopAll();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await rm(directory, { recursive: true, force: true });
  }

  if (latency) {
    for (const variant of base.variants) {
      const cells = latency.cells.filter((cell) => cell.variant === variant);
      const failed = cells.filter((cell) => cell.errors > 0 || cell.operations === 0);
      if (cells.length === 0) incomplete.push(`${variant}: no measurement`);
      for (const cell of failed) {
        incomplete.push(
          `${variant} ${cell.condition}: ${cell.errors} errors (${cell.firstError ?? 'no calls'})`,
        );
      }
    }
  }
  if (waiting && waiting.approvalErrors > 0) {
    incomplete.push(`waiting: ${waiting.approvalErrors} approvals failed (${waiting.firstError})`);
  }

  const finishedAt = new Date();
  const partial = {
    meta: {
      startedAt: startedAt.toISOString(),
      finishedAt: finishedAt.toISOString(),
      durationSeconds: Math.round((finishedAt.getTime() - startedAt.getTime()) / 1000),
      quick,
      cores: cpus().length,
      cpuModel: cpus()[0]?.model ?? 'unknown',
      node: process.versions.node,
      temporalCli: temporalCliVersion,
      serverExtraArgs,
      repetitions: base.repetitions,
      concurrencyLevels: base.concurrencyLevels,
      operationsPerBlock: base.operationsPerBlock,
      openLoopRatePerSecond: base.openLoopRatePerSecond,
      openLoopDurationMs: base.openLoopDurationMs,
      blockOrder: base.blockOrder,
      ...(base.variants.some((variant) => probeVariants.has(variant)) ? { busyWork: base.busyWork } : {}),
      productDigest: digest,
      benchDigest: benchCode,
    },
    ...(latency ? { latency } : {}),
    ...(waiting ? { waiting } : {}),
    targets: [],
    incomplete,
  } satisfies BenchResults;
  const results: BenchResults = { ...partial, targets: checkTargets(partial) };

  const outputDirectory = join(benchDirectory, 'results');
  await mkdir(outputDirectory, { recursive: true });
  // A smoke run must never overwrite the figures of the last full run, which are committed.
  const name = options.outputName ?? (quick ? 'quick' : 'latest');
  await writeFile(join(outputDirectory, `${name}.json`), `${JSON.stringify(results, null, 2)}\n`);
  await writeFile(join(outputDirectory, `${name}.md`), renderMarkdown(results));
  await writeFile(join(outputDirectory, `${name}.svg`), renderSvg(results));
  log(`wrote bench/results/${name}.json, .md and .svg in ${results.meta.durationSeconds} s`);
  for (const target of results.targets) {
    const verdict = target.control
      ? target.holds
        ? 'control holds '
        : 'control misses'
      : target.holds
        ? 'holds '
        : 'MISSES';
    log(`${verdict} ${target.target}: ${target.measured}${target.holds ? '' : missNote(target)}`);
  }
  if (incomplete.length > 0) {
    log(`NOT every variant completed:\n  ${incomplete.join('\n  ')}`);
    return 1;
  }
  log('every variant completed');
  return 0;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    log(`failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    process.exitCode = 1;
  },
);
