/**
 * `npm run bench:pool -- FILE...`: the targets read over several runs of the same code.
 *
 * One run places a ratio; it does not pin it. On this machine a cell of one run moves by about ±5%
 * from run to run, and C's lines run within a few percent of their floor, so one run can show a
 * miss the next run does not (docs/benchmarks.md, rounds 9-12). This reads each run's targets
 * again from its cells (so results written before the figures were stored pool too), takes the
 * ratio of every run under each condition, and gives their median, their range and how many runs
 * held. Every ratio is still measured side by side inside its own run; only the verdict is pooled.
 *
 * Verdict per cell, from the medians:
 * - holds: the median run meets the line;
 * - out of reach: it does not, and neither does the median run of the bare-Temporal reference
 *   measured beside it (B-idx for C, B-LA for the fast path, B-read for D);
 * - misses: it does not, and the reference's median does.
 */
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { BenchResults } from './main.ts';
import { checkTargets, meetsLine } from './report.ts';
import type { LineDirection, TargetFigure, VariantName } from './result-types.ts';

/** One loaded run: where it came from and what it holds. */
export interface PoolRun {
  readonly file: string;
  readonly results: BenchResults;
}

export type CellVerdict = 'holds' | 'out of reach' | 'misses';
/** A target no run could be pooled for (every run was left out of it). */
export type TargetVerdict = CellVerdict | 'not measured';

export interface PooledCell {
  readonly condition: string;
  /** Runs that measured this cell. */
  readonly runs: number;
  readonly median: number;
  readonly min: number;
  readonly max: number;
  /** Runs in which this cell met the line. */
  readonly holdingRuns: number;
  readonly reference?: {
    readonly variant: VariantName;
    readonly runs: number;
    readonly median: number;
    readonly min: number;
    readonly max: number;
    readonly holdingRuns: number;
    /** The median over runs of the figure divided by the reference's, in the same run. */
    readonly medianOverReference: number;
  };
  readonly verdict: CellVerdict;
}

export interface PooledTarget {
  readonly target: string;
  readonly line?: { readonly limit: number; readonly direction: LineDirection };
  readonly cells: readonly PooledCell[];
  /** Runs in which the whole target held, every cell at once. */
  readonly holdingRuns: number;
  readonly runs: number;
  /**
   * Runs left out of this target: they did not measure every variant it reads, or have no such
   * figures at all (no waiting phase, no duplicate calls).
   */
  readonly leftOut?: readonly string[];
  /**
   * holds when every cell holds; out of reach when every cell that does not is out of reach;
   * not measured when no run could be pooled.
   */
  readonly verdict: TargetVerdict;
  /** Set on an A/A control (bench/report.ts): what it is, since it is not one of the targets. */
  readonly control?: string;
}

export function median(values: readonly number[]): number {
  if (values.length === 0) throw new Error('the median of no values');
  const sorted = [...values].sort((left, right) => left - right);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/** Pools the targets of several runs: per target and condition, the runs' ratios and a verdict. */
export function poolTargets(runs: readonly PoolRun[]): PooledTarget[] {
  const perRun = runs.map((run) => ({ run, checks: checkTargets(run.results), variants: variantsOf(run) }));
  const names = [...new Set(perRun.flatMap(({ checks }) => checks.map((check) => check.target)))];
  return names.map((target): PooledTarget => {
    const found = perRun.map(({ run, checks, variants }) => ({
      run,
      variants,
      check: checks.find((check) => check.target === target),
    }));
    const reads = new Set(found.flatMap(({ check }) => check?.reads ?? []));
    // A run that did not measure every variant a target reads would pool a different figure (the
    // best of fewer candidates, or no reference): it is left out of that target, and named. So is
    // a run with no such target at all (no waiting phase, no duplicate calls).
    const leftOut: string[] = [];
    const present = found.flatMap(({ run, check, variants }) => {
      if (!check || [...reads].some((variant) => !variants.has(variant))) {
        leftOut.push(run.file);
        return [];
      }
      return [check];
    });
    const line = present.find((check) => check.line)?.line;
    const holdingRuns = present.filter((check) => check.holds).length;
    const control = present.find((check) => check.control)?.control;
    const common = {
      target,
      holdingRuns,
      runs: present.length,
      ...(leftOut.length > 0 ? { leftOut } : {}),
      ...(control ? { control } : {}),
    };
    if (present.length === 0) return { ...common, cells: [], verdict: 'not measured' };
    if (!line) {
      return { ...common, cells: [], verdict: holdingRuns === present.length ? 'holds' : 'misses' };
    }
    const byCondition = new Map<string, TargetFigure[]>();
    for (const check of present) {
      for (const figure of check.figures ?? []) {
        byCondition.set(figure.condition, [...(byCondition.get(figure.condition) ?? []), figure]);
      }
    }
    const cells = [...byCondition].map(([condition, figures]) => poolCell(condition, figures, line));
    const failing = cells.filter((cell) => cell.verdict !== 'holds');
    const verdict: TargetVerdict =
      failing.length === 0
        ? 'holds'
        : failing.every((cell) => cell.verdict === 'out of reach')
          ? 'out of reach'
          : 'misses';
    return { ...common, line, cells, verdict };
  });
}

function variantsOf(run: PoolRun): Set<string> {
  return new Set(run.results.latency?.cells.map((cell) => cell.variant) ?? []);
}

function poolCell(
  condition: string,
  figures: readonly TargetFigure[],
  line: { limit: number; direction: LineDirection },
): PooledCell {
  // A figure from a block whose calls all failed reads 0 or NaN; loadRun refuses such runs, and
  // none may reach a median here.
  for (const figure of figures) {
    if (!(Number.isFinite(figure.value) && figure.value > 0)) {
      throw new PoolInputError(
        `a ${condition} figure is ${figure.value}, not a ratio: a block without calls?`,
      );
    }
  }
  const summary = summarize(
    figures.map((figure) => figure.value),
    line,
  );
  const withReference = figures.filter((figure) => figure.reference !== undefined);
  const reference =
    withReference.length > 0
      ? {
          variant: withReference[0]!.reference!.variant,
          ...summarize(
            withReference.map((figure) => figure.reference!.value),
            line,
          ),
          medianOverReference: median(withReference.map((figure) => figure.value / figure.reference!.value)),
        }
      : undefined;
  const verdict: CellVerdict = meetsLine(summary.median, line)
    ? 'holds'
    : reference && !meetsLine(reference.median, line)
      ? 'out of reach'
      : 'misses';
  return { condition, ...summary, ...(reference ? { reference } : {}), verdict };
}

/** How a figure spread over the runs: their count, median and range, and how many met the line. */
function summarize(values: readonly number[], line: { limit: number; direction: LineDirection }) {
  return {
    runs: values.length,
    median: median(values),
    min: Math.min(...values),
    max: Math.max(...values),
    holdingRuns: values.filter((value) => meetsLine(value, line)).length,
  };
}

const two = (value: number) => value.toFixed(2);

/** The pooled targets as markdown: one table per target with a line, then the yes-or-no ones. */
export function renderPool(runs: readonly PoolRun[], pooled: readonly PooledTarget[]): string {
  const lines = [`# toolgate benchmark: targets over ${runs.length} runs`, ''];
  lines.push(
    'Each ratio is measured side by side within its run; the median, range and count are over runs',
    '(with an even number of runs, the median is the mean of the middle two). A cell holds when its',
    "median meets the line. It is out of reach when it does not and the bare-Temporal reference's",
    'median does not either; otherwise it misses. A target holds when every cell does.',
    '',
    '| run | started | cores | repetitions | blocks |',
    '|---|---|---|---|---|',
  );
  for (const run of runs) {
    const { meta } = run.results;
    lines.push(
      `| ${run.file} | ${meta.startedAt} | ${meta.cores} | ${meta.repetitions} | ${meta.blockOrder?.kind ?? 'rotated'} |`,
    );
  }
  for (const target of pooled) {
    lines.push('', `## ${target.target}: ${target.verdict}`, '');
    if (target.control) {
      lines.push(
        `This is ${target.control}. Where a variant identical to B misses a line, that miss is the bench's own noise.`,
        '',
      );
    }
    if (target.leftOut) {
      lines.push(
        `Left out: ${target.leftOut.join(', ')} (they did not measure every variant this target reads, or have no such figures).`,
        '',
      );
    }
    if (target.runs === 0) {
      lines.push('No run measured it.');
      continue;
    }
    if (!target.line) {
      lines.push(`Held in ${target.holdingRuns} of ${target.runs} runs.`);
      continue;
    }
    lines.push(
      `The whole target held in ${target.holdingRuns} of ${target.runs} runs.`,
      '',
      '| condition | runs | median | range | runs holding | reference: median (range), runs holding | median over reference | verdict |',
      '|---|---|---|---|---|---|---|---|',
    );
    for (const cell of target.cells) {
      const reference = cell.reference
        ? `${cell.reference.variant} ${two(cell.reference.median)}× (${two(cell.reference.min)}–${two(cell.reference.max)}), ${cell.reference.holdingRuns} of ${cell.reference.runs}`
        : '–';
      const over = cell.reference ? `${two(cell.reference.medianOverReference)}×` : '–';
      const verdict = cell.verdict === 'holds' ? cell.verdict : `**${cell.verdict}**`;
      lines.push(
        `| ${cell.condition} | ${cell.runs} | ${two(cell.median)}× | ${two(cell.min)}–${two(cell.max)}× | ${cell.holdingRuns} of ${cell.runs} | ${reference} | ${over} | ${verdict} |`,
      );
    }
  }
  return `${lines.join('\n')}\n`;
}

/** A problem with the files or options given: the message says what to do instead. */
export class PoolInputError extends Error {}

/** Reads and checks one results file. */
export async function loadRun(file: string): Promise<PoolRun> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new PoolInputError(
      `${file}: cannot read it (${code ?? String(error)}). Give the .json a bench run wrote, e.g. bench/results/latest.json.`,
    );
  }
  let results: BenchResults;
  try {
    results = JSON.parse(text) as BenchResults;
  } catch {
    throw new PoolInputError(`${file}: not JSON. Give the .json a bench run wrote, not its .md or .svg.`);
  }
  if (
    typeof results !== 'object' ||
    results === null ||
    typeof results.meta?.startedAt !== 'string' ||
    !Array.isArray(results.latency?.cells)
  ) {
    throw new PoolInputError(
      `${file}: not the results of a bench run with a latency phase (no meta.startedAt or latency.cells).`,
    );
  }
  if (results.meta.quick) {
    throw new PoolInputError(
      `${file}: a --quick smoke run; its figures are not meaningful. Pool full runs, or runs with --phase latency.`,
    );
  }
  if (Array.isArray(results.incomplete) && results.incomplete.length > 0) {
    throw new PoolInputError(
      `${file}: not every call of that run completed (${results.incomplete[0]}), so its ratios are not comparable. Leave it out, or run it again.`,
    );
  }
  return { file, results };
}

/** The same run given twice (two copies of one file) would count twice: it is refused. */
export function checkDistinctRuns(runs: readonly PoolRun[]): void {
  const seen = new Map<string, string>();
  for (const run of runs) {
    const key = `${run.results.meta.startedAt} ${run.results.meta.blockOrder?.kind === 'shuffled' ? run.results.meta.blockOrder.seed : ''}`;
    const earlier = seen.get(key);
    if (earlier !== undefined) {
      throw new PoolInputError(
        `${run.file} is the same run as ${earlier} (both started ${run.results.meta.startedAt}). Give each run once.`,
      );
    }
    seen.set(key, run.file);
  }
}

/** Runs written before the product digest was recorded: their code cannot be checked. */
export function uncheckedRuns(runs: readonly PoolRun[]): string[] {
  return runs.filter((run) => run.results.meta.productDigest === undefined).map((run) => run.file);
}

/**
 * Runs of different product code do not pool: a verdict over them would describe neither. Runs
 * written before the digest was recorded cannot be checked; they are listed so the caller knows.
 */
export function checkSameCode(runs: readonly PoolRun[]): { unchecked: string[]; digest?: string } {
  const digests = groupByDigest(runs, (run) => run.results.meta.productDigest);
  if (digests.size > 1) {
    throw new PoolInputError(
      `these runs measured different product code, so one verdict cannot cover them:\n  ${describeGroups(digests).join('\n  ')}\n` +
        'Pool the runs of one group, or pass --allow-mixed-code if the differences cannot matter.',
    );
  }
  const digest = [...digests.keys()][0];
  const unchecked = uncheckedRuns(runs);
  return digest === undefined ? { unchecked } : { unchecked, digest };
}

const productDirectories = ['src', 'workflows', 'activities'] as const;
const benchDirectories = ['bench'] as const;
const root = fileURLToPath(new URL('..', import.meta.url));

/**
 * A digest of the product code a run measures: every file under src/, workflows/ and activities/,
 * by path and content. The bench's own files are left out, so a change to how results are printed
 * does not split runs of the same product.
 */
export function productDigest(base = root): Promise<string> {
  return directoryDigest(base, productDirectories);
}

/**
 * A digest of the bench's code (bench/, without its results): runs measured with different bench
 * code pool, with a warning, since a change there can change how calls are timed.
 */
export function benchDigest(base = root): Promise<string> {
  return directoryDigest(base, benchDirectories, (file) => !file.startsWith('bench/results/'));
}

async function directoryDigest(
  base: string,
  directories: readonly string[],
  keep: (file: string) => boolean = () => true,
): Promise<string> {
  const hash = createHash('sha256');
  const files: string[] = [];
  for (const directory of directories) {
    const entries = await readdir(join(base, directory), { recursive: true, withFileTypes: true });
    for (const entry of entries) {
      if (!entry.isFile()) continue;
      const file = relative(base, join(entry.parentPath, entry.name)).split('\\').join('/');
      if (keep(file)) files.push(file);
    }
  }
  for (const file of files.sort()) {
    hash.update(file).update('\0');
    hash.update(await readFile(join(base, file))).update('\0');
  }
  return hash.digest('hex');
}

/** Runs measured with different bench code, grouped; empty when they agree or were not recorded. */
export function benchCodeGroups(runs: readonly PoolRun[]): string[] {
  const groups = groupByDigest(runs, (run) => run.results.meta.benchDigest);
  return groups.size > 1 ? describeGroups(groups) : [];
}

/** The runs' files by the digest they recorded; runs without one are not in any group. */
function groupByDigest(runs: readonly PoolRun[], digestOf: (run: PoolRun) => string | undefined) {
  const groups = new Map<string, string[]>();
  for (const run of runs) {
    const digest = digestOf(run);
    if (digest !== undefined) groups.set(digest, [...(groups.get(digest) ?? []), run.file]);
  }
  return groups;
}

const describeGroups = (groups: ReadonlyMap<string, readonly string[]>) =>
  [...groups].map(([digest, files]) => `${digest.slice(0, 12)}: ${files.join(', ')}`);

const usage = `npm run bench:pool -- FILE... [options]: the targets read over several bench runs

Reads the .json of each run, checks each run's targets again from its cells, and prints per target
and condition the median over runs, their range, how many runs held, and the same for the
bare-Temporal reference measured beside it. Give each run once, and no --quick run.

  --json                 print the pooled targets as JSON instead of markdown
  --allow-mixed-code     pool runs whose product code differs (by default they are refused)
  --help                 this text

Verdict per cell: holds when the median meets the line; out of reach when it does not and the
reference's median does not either; misses otherwise. A target holds when every cell does.

Examples:
  npm run bench -- --output-name run1             (then run2, run3, ...)
  npm run bench:pool -- bench/results/run*.json
  npm run bench:pool -- --json bench/results/run*.json | jq '.targets[] | {target, verdict}'
`;

const optionSpec = {
  json: { type: 'boolean', default: false },
  'allow-mixed-code': { type: 'boolean', default: false },
  help: { type: 'boolean', short: 'h', default: false },
} as const;

const parseOptions = () => parseArgs({ options: optionSpec, allowPositionals: true, strict: true });

async function main(): Promise<number> {
  let parsed: ReturnType<typeof parseOptions>;
  try {
    parsed = parseOptions();
  } catch (error) {
    process.stderr.write(`bench:pool: ${(error as Error).message}\nRun npm run bench:pool -- --help.\n`);
    return 2;
  }
  if (parsed.values.help) {
    process.stdout.write(usage);
    return 0;
  }
  const files = parsed.positionals;
  if (files.length < 2) {
    process.stderr.write(
      `bench:pool: give two or more result files (got ${files.length}); one run's verdict is in its own .md.\n` +
        'Example: npm run bench:pool -- bench/results/run*.json\n',
    );
    return 2;
  }
  try {
    const runs = await Promise.all(files.map((file) => loadRun(file)));
    checkDistinctRuns(runs);
    const code = parsed.values['allow-mixed-code'] ? undefined : checkSameCode(runs);
    const unchecked = uncheckedRuns(runs);
    const pooled = poolTargets(runs);
    if (parsed.values.json) {
      process.stdout.write(
        `${JSON.stringify({ runs: runs.map((run) => ({ file: run.file, startedAt: run.results.meta.startedAt })), productDigest: code?.digest, targets: pooled }, null, 2)}\n`,
      );
    } else {
      process.stdout.write(renderPool(runs, pooled));
    }
    if (unchecked.length > 0) {
      process.stderr.write(
        `bench:pool: ${unchecked.length} run(s) predate the recorded product digest, so their code was not checked: ${unchecked.join(', ')}\n`,
      );
    }
    const benchGroups = benchCodeGroups(runs);
    if (benchGroups.length > 0) {
      process.stderr.write(
        `bench:pool: these runs were measured with different bench code; check that the changes do not alter how calls are timed:\n  ${benchGroups.join('\n  ')}\n`,
      );
    }
    return 0;
  } catch (error) {
    if (error instanceof PoolInputError) {
      process.stderr.write(`bench:pool: ${error.message}\n`);
      return 2;
    }
    throw error;
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main().then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      process.stderr.write(`bench:pool failed: ${error instanceof Error ? error.stack : String(error)}\n`);
      process.exitCode = 1;
    },
  );
}
