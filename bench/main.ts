/**
 * `npm run bench`: toolgate against bare Temporal, side by side, on one dev server started here.
 * `npm run bench -- --quick` is the smoke mode: small counts, asserts only that every variant
 * completed. See docs/benchmarks.md for the method and how to read the output.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { join, resolve as resolvePath } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { findTemporalCli, startDevServer, temporalCliVersion } from '../src/dev/index.ts';
import { type BlockOrder, freshSeed } from './block-order.ts';
import { productDigest } from './digest.ts';
import type { RunnerConfig, RunnerMessage } from './environment.ts';
import { renderMarkdown, renderSvg } from './report.ts';
import {
  type BenchResults,
  type LatencyPhaseResult,
  type TargetCheck,
  type VariantName,
  variantNames,
  type WaitingPhaseResult,
} from './result-types.ts';
import { checkTargets, missNote } from './targets.ts';

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
                             so over 3 repetitions the p99 rests on about 11 calls)
  --waiting-levels 1000,5000,10000
                             waiting approval-tier calls in the waiting phase
  --waiting-cache 100        the worker's workflow cache size in the waiting phase
  --waiting-prefill 10000    before any call waits, start and approve this many approval-tier calls
                             and measure C again: none waiting, but a database that holds them
                             closed (separates "calls waiting" from "a bigger database"; default 0)
  --sqlite-pragma k=v        repeatable; replaces the default journal_mode=wal, synchronous=off
  --dynamic-config k=v       repeatable; extra dynamic config for the dev server
  --worker-tuning JSON       worker options, e.g. '{"maxCachedWorkflows":200}'
  --seed N                   seed of the blocks' shuffled order (default random). Every run records
                             its seed: the same seed and --variants repeat a run's order
  --output-name NAME         result file names under bench/results/ (default latest, or quick)
  --cpu-profile DIR          write a .cpuprofile per runner thread (node --cpu-prof), for Chrome DevTools
  --help                     this text

Examples:
  npm run bench                                   full run, 20 to 40 minutes on 2 cores
  npm run bench -- --quick                        what .ci/run does
  npm run bench -- --phase latency --variants B,B-twin,C --concurrency 16 --output-name try1
How to read the output: docs/benchmarks.md.
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
        seed: { type: 'string' },
      },
      strict: true,
      allowPositionals: false,
    }).values;
  } catch (error) {
    throw new UsageError(`${error instanceof Error ? error.message : String(error)}`);
  }
}

type OptionValues = ReturnType<typeof parseOptions>;

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

const positiveWhole = (name: string, text: string | undefined) =>
  positiveNumber(name, text, { integer: true });

function positiveList(name: string, text: string | undefined): number[] | undefined {
  return text?.split(',').map((part) => positiveWhole(name, part.trim()) as number);
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
  readonly scale: number;
  readonly openRate: number | undefined;
  readonly openSeconds: number | undefined;
  readonly workerTuning: Record<string, unknown>;
  readonly outputName: string | undefined;
  readonly serverExtraArgs: string[];
  readonly cpuProfile: string | undefined;
  readonly blockOrder: BlockOrder;
}

function phaseOption(text: string | undefined): BenchSettings['phase'] {
  const phase = text ?? 'all';
  if (phase !== 'all' && phase !== 'latency' && phase !== 'waiting') {
    throw new UsageError(`--phase ${JSON.stringify(text)}: use all, latency or waiting`);
  }
  return phase;
}

function variantsOption(text: string | undefined): VariantName[] | undefined {
  const variants = text?.split(',').map((name) => name.trim());
  for (const name of variants ?? []) {
    if (!(variantNames as readonly string[]).includes(name)) {
      throw new UsageError(
        `--variants: there is no variant ${JSON.stringify(name)}; the variants are ${variantNames.join(', ')}`,
      );
    }
  }
  return variants as VariantName[] | undefined;
}

function workerTuningOption(text: string | undefined): Record<string, unknown> {
  let tuning: unknown;
  try {
    tuning = JSON.parse(text ?? '{}');
  } catch {
    throw new UsageError(`--worker-tuning is not JSON; write an object, e.g. '{"maxCachedWorkflows":200}'`);
  }
  if (typeof tuning !== 'object' || tuning === null || Array.isArray(tuning)) {
    throw new UsageError(`--worker-tuning must be a JSON object, e.g. '{"maxCachedWorkflows":200}'`);
  }
  return tuning as Record<string, unknown>;
}

function outputNameOption(text: string | undefined): string | undefined {
  if (text !== undefined && !/^[A-Za-z0-9_-]{1,64}$/.test(text)) {
    throw new UsageError(`--output-name ${JSON.stringify(text)}: use 1-64 letters, digits, _ or -`);
  }
  return text;
}

function seedOption(text: string | undefined): number {
  if (text === undefined) return freshSeed();
  if (!/^\d{1,10}$/.test(text) || Number(text) >= 2 ** 32) {
    throw new UsageError(
      `--seed ${JSON.stringify(text)}: use a whole number from 0 to ${2 ** 32 - 1}, e.g. the seed a run recorded`,
    );
  }
  return Number(text);
}

/** The dev server's extra arguments: SQLite pragmas and dynamic config, each `key=value`. */
function serverArgsOption(values: OptionValues): string[] {
  const pragmas = values['sqlite-pragma'] ?? [];
  const dynamicConfig = values['dynamic-config'] ?? [];
  for (const pair of [...pragmas, ...dynamicConfig]) {
    if (!/^[^=\s]+=\S+$/.test(pair)) throw new UsageError(`${JSON.stringify(pair)} is not key=value`);
  }
  return [
    ...pragmas.flatMap((pragma) => ['--sqlite-pragma', pragma]),
    ...dynamicConfig.flatMap((value) => ['--dynamic-config-value', value]),
  ];
}

function checkOptions(values: OptionValues): BenchSettings {
  return {
    quick: values.quick ?? false,
    phase: phaseOption(values.phase),
    variants: variantsOption(values.variants),
    concurrency: positiveList('concurrency', values.concurrency),
    waitingLevels: positiveList('waiting-levels', values['waiting-levels']),
    repetitions: positiveWhole('repetitions', values.repetitions),
    waitingCache: positiveWhole('waiting-cache', values['waiting-cache']),
    waitingPrefill: positiveWhole('waiting-prefill', values['waiting-prefill']) ?? 0,
    scale: positiveNumber('scale', values.scale) ?? 1,
    openRate: positiveNumber('open-rate', values['open-rate']),
    openSeconds: positiveNumber('open-seconds', values['open-seconds']),
    workerTuning: workerTuningOption(values['worker-tuning']),
    outputName: outputNameOption(values['output-name']),
    serverExtraArgs: serverArgsOption(values),
    cpuProfile: values['cpu-profile'],
    blockOrder: { seed: seedOption(values.seed) },
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
 * Length of an open-loop block in a full run. The open loop is the noisiest cell of the p99 line;
 * 24 s at 15 arrivals a second gives 1,080 arrivals over 3 repetitions, about 11 calls above the p99.
 */
const defaultOpenSeconds = 24;

type PhaseConfig = Omit<RunnerConfig, 'mode'>;

/** Small counts that finish in under a minute: every variant runs, none is measured. */
function quickConfig(server: Pick<PhaseConfig, 'address' | 'serverPid' | 'dataDir'>): PhaseConfig {
  return {
    ...server,
    variants: options.variants ?? [...variantNames],
    repetitions: 1,
    concurrencyLevels: [1, 4],
    operationsPerBlock: { c1: 5, c4: 8 },
    warmupOperations: 4,
    openLoopRatePerSecond: options.openRate ?? 10,
    openLoopDurationMs: (options.openSeconds ?? 1) * 1_000,
    workerTuning: options.workerTuning,
    blockOrder: options.blockOrder,
    waiting: {
      levels: options.waitingLevels ?? [50],
      cacheSize: 10,
      prefill: options.waitingPrefill,
      resumeSamples: 3,
      callOperations: 10,
      callConcurrency: 2,
      startConcurrency: 16,
      approveConcurrency: 16,
    },
  };
}

function fullConfig(server: Pick<PhaseConfig, 'address' | 'serverPid' | 'dataDir'>): PhaseConfig {
  const concurrencyLevels = options.concurrency ?? [1, 4, 16, 64];
  const operationsPerBlock = Object.fromEntries(
    concurrencyLevels.map((level) => [
      `c${level}`,
      Math.max(level, Math.round((defaultOperations[level] ?? level * 3) * options.scale)),
    ]),
  );
  return {
    ...server,
    variants: options.variants ?? [...variantNames],
    repetitions: options.repetitions ?? 3,
    concurrencyLevels,
    operationsPerBlock,
    warmupOperations: 20,
    openLoopRatePerSecond: options.openRate ?? 15,
    openLoopDurationMs: (options.openSeconds ?? defaultOpenSeconds) * 1_000,
    workerTuning: options.workerTuning,
    blockOrder: options.blockOrder,
    waiting: {
      levels: options.waitingLevels ?? [1_000, 5_000, 10_000],
      cacheSize: options.waitingCache ?? 100,
      prefill: options.waitingPrefill,
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
      env: { ...process.env, BENCH_RUNNER_CONFIG: JSON.stringify(config) },
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

interface PhaseResults {
  latency?: LatencyPhaseResult;
  waiting?: WaitingPhaseResult;
  readonly incomplete: string[];
}

/** Runs the phases asked for, one runner process each, and keeps what each returned. */
async function runPhases(base: PhaseConfig): Promise<PhaseResults> {
  const phases: PhaseResults = { incomplete: [] };
  for (const mode of ['latency', 'waiting'] as const) {
    if (options.phase !== 'all' && options.phase !== mode) continue;
    const message = await runPhase({ ...base, mode });
    if (message.type === 'latency') phases.latency = message.result;
    else if (message.type === 'waiting') phases.waiting = message.result;
    else
      phases.incomplete.push(
        `${mode} phase failed: ${message.type === 'failed' ? message.error : message.type}`,
      );
  }
  return phases;
}

/** Every variant without a measurement, every cell with a failed call, every failed approval. */
function incompleteParts(variants: readonly VariantName[], phases: PhaseResults): string[] {
  const incomplete: string[] = [];
  const cells = phases.latency?.cells;
  for (const variant of cells ? variants : []) {
    const own = cells!.filter((cell) => cell.variant === variant);
    if (own.length === 0) incomplete.push(`${variant}: no measurement`);
    for (const cell of own.filter((each) => each.errors > 0 || each.operations === 0)) {
      incomplete.push(
        `${variant} ${cell.condition}: ${cell.errors} errors (${cell.firstError ?? 'no calls'})`,
      );
    }
  }
  const waiting = phases.waiting;
  if (waiting && waiting.approvalErrors > 0) {
    incomplete.push(`waiting: ${waiting.approvalErrors} approvals failed (${waiting.firstError})`);
  }
  return incomplete;
}

function assembleResults(
  base: PhaseConfig,
  phases: PhaseResults,
  run: { startedAt: Date; digest: string },
): BenchResults {
  const finishedAt = new Date();
  const partial = {
    meta: {
      startedAt: run.startedAt.toISOString(),
      finishedAt: finishedAt.toISOString(),
      durationSeconds: Math.round((finishedAt.getTime() - run.startedAt.getTime()) / 1000),
      quick: options.quick,
      cores: cpus().length,
      cpuModel: cpus()[0]?.model ?? 'unknown',
      node: process.versions.node,
      temporalCli: temporalCliVersion,
      serverExtraArgs: options.serverExtraArgs,
      repetitions: base.repetitions,
      concurrencyLevels: base.concurrencyLevels,
      operationsPerBlock: base.operationsPerBlock,
      openLoopRatePerSecond: base.openLoopRatePerSecond,
      openLoopDurationMs: base.openLoopDurationMs,
      blockOrder: base.blockOrder,
      productDigest: run.digest,
    },
    ...(phases.latency ? { latency: phases.latency } : {}),
    ...(phases.waiting ? { waiting: phases.waiting } : {}),
    targets: [],
    incomplete: [...phases.incomplete, ...incompleteParts(base.variants, phases)],
  } satisfies BenchResults;
  return { ...partial, targets: checkTargets(partial) };
}

async function writeResults(results: BenchResults): Promise<void> {
  const outputDirectory = join(benchDirectory, 'results');
  await mkdir(outputDirectory, { recursive: true });
  // A smoke run must never overwrite the figures of the last full run, which are committed.
  const name = options.outputName ?? (options.quick ? 'quick' : 'latest');
  await writeFile(join(outputDirectory, `${name}.json`), `${JSON.stringify(results, null, 2)}\n`);
  await writeFile(join(outputDirectory, `${name}.md`), renderMarkdown(results));
  await writeFile(join(outputDirectory, `${name}.svg`), renderSvg(results));
  log(`wrote bench/results/${name}.json, .md and .svg in ${results.meta.durationSeconds} s`);
}

function verdict(target: TargetCheck): string {
  if (target.control) return target.holds ? 'control holds ' : 'control misses';
  return target.holds ? 'holds ' : 'MISSES';
}

/** Starts the dev server, runs the phases, and stops everything however they end. */
async function measure(directory: string): Promise<{ base: PhaseConfig; phases: PhaseResults }> {
  const cli = await findTemporalCli({ onProgress: (line) => log(`temporal cli: ${line}`) });
  const server = await startDevServer({
    cli,
    dbFile: join(directory, 'temporal.db'),
    grpcPort: 0,
    uiPort: 0,
    headless: true,
    extraArgs: options.serverExtraArgs,
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
  const where = { address: server.address, serverPid: server.pid, dataDir: directory };
  const base = options.quick ? quickConfig(where) : fullConfig(where);
  const seed = base.blockOrder.seed;
  log(
    `blocks in a shuffled order per round, seed ${seed} (--seed ${seed} with the same variants repeats it)`,
  );
  try {
    return { base, phases: await runPhases(base) };
  } finally {
    await stopAll();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

async function main(): Promise<number> {
  const startedAt = new Date();
  // Taken before the run, so that an edit made while it runs is not recorded as what it measured.
  const digest = await productDigest();
  const directory = await mkdtemp(join(tmpdir(), 'toolgate-bench-'));
  let measured: Awaited<ReturnType<typeof measure>>;
  try {
    measured = await measure(directory);
  } finally {
    await rm(directory, { recursive: true, force: true });
  }
  const results = assembleResults(measured.base, measured.phases, { startedAt, digest });
  await writeResults(results);
  for (const target of results.targets) {
    // The note goes before the cells, which it is about all together, not after the last one.
    log(`${verdict(target)} ${target.target}${target.holds ? '' : missNote(target)}: ${target.measured}`);
  }
  if (results.incomplete.length > 0) {
    log(`NOT every variant completed:\n  ${results.incomplete.join('\n  ')}`);
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
