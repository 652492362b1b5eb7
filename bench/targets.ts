/**
 * The targets a run is read against. A ratio target is a line for one variant against B, read in
 * every condition the run measured; C's three lines are read for B-twin too, as A/A controls.
 *
 * A miss is judged against the run's own noise in two ways, and stays a miss either way:
 * - **within noise**: in every cell that misses, the variant lies no further past the line than
 *   B-twin (B under a second name, whose true ratio is 1) lies from 1.00 in the same cell and
 *   figure. The run cannot tell such a miss from two identical variants landing apart.
 * - **inside the run's noise**: every cell that misses had a repetition that held.
 */
import type {
  BenchResults,
  LatencyCell,
  RepetitionFigures,
  TargetCheck,
  VariantName,
  WaitingPhaseResult,
} from './result-types.ts';

/** A figure a target reads, both merged over the run and per repetition. */
export type Metric = keyof RepetitionFigures;

type LineDirection = 'at most' | 'at least';

interface RatioTarget {
  readonly target: string;
  readonly variant: VariantName;
  readonly metric: Metric;
  readonly limit: number;
  readonly direction: LineDirection;
  /** Throughput in the open loop is the arrival rate, whatever the variant: not read there. */
  readonly closedLoopOnly?: boolean;
  /** Set on an A/A control: read like a target, but not one. */
  readonly control?: boolean;
}

const cLines: readonly RatioTarget[] = [
  { target: 'C p50 <= 1.10× B', variant: 'C', metric: 'p50Ms', limit: 1.1, direction: 'at most' },
  { target: 'C p99 <= 1.25× B', variant: 'C', metric: 'p99Ms', limit: 1.25, direction: 'at most' },
  {
    target: 'C throughput >= 0.90× B (closed loop)',
    variant: 'C',
    metric: 'throughputPerSecond',
    limit: 0.9,
    direction: 'at least',
    closedLoopOnly: true,
  },
];

/** Every ratio target and control, in the order the report lists them. */
const ratioTargets: readonly RatioTarget[] = [
  ...cLines,
  {
    target: 'fastest readonly path (C-fast) p50 <= 0.5× B',
    variant: 'C-fast',
    metric: 'p50Ms',
    limit: 0.5,
    direction: 'at most',
  },
  { target: 'D p50 <= 0.25× B', variant: 'D', metric: 'p50Ms', limit: 0.25, direction: 'at most' },
  // C's three lines read for B itself under a second name: a miss there is this bench's own noise.
  ...cLines.map((line) => ({
    ...line,
    target: `A/A control: ${line.target.replace(/^C /, 'B-twin ')}`,
    variant: 'B-twin' as const,
    control: true,
  })),
];

const controlText = 'an A/A control, not a target: B-twin is B under a second name, so its true ratio is 1';
const withinNoiseText =
  'within noise: wherever it misses, it lies no further past the line than B-twin lies from B in that cell';
const insideSpreadText =
  "every cell that misses has a repetition that holds: the line is inside this run's noise";

/** One condition of a ratio target: the variant's figure over B's, and what the run says about it. */
interface CellReading {
  readonly condition: string;
  readonly value: number;
  readonly holds: boolean;
  /** The ratio in each repetition; empty when the repetitions cannot be paired. */
  readonly repetitions: readonly number[];
  /** For a miss: how far past the line, as a ratio over 1. */
  readonly past?: number;
  /** How far B-twin lies from B in this cell, as a ratio over 1 (absent without B-twin). */
  readonly twinSpread?: number;
}

function meetsLine(value: number, line: { limit: number; direction: LineDirection }): boolean {
  return line.direction === 'at most' ? value <= line.limit : value >= line.limit;
}

function cellMetric(cell: LatencyCell, metric: Metric): number {
  return metric === 'throughputPerSecond' ? cell.throughputPerSecond : cell.latency[metric];
}

function find(cells: readonly LatencyCell[], variant: VariantName, condition: string) {
  return cells.find((cell) => cell.variant === variant && cell.condition === condition);
}

/** The closed-loop levels in order, then the open loop. */
export function conditionsOf(cells: readonly { readonly condition: string }[]): string[] {
  const closed = [...new Set(cells.map((cell) => cell.condition).filter((c) => c.startsWith('c')))].sort(
    (left, right) => Number(left.slice(1)) - Number(right.slice(1)),
  );
  return cells.some((cell) => cell.condition === 'open') ? [...closed, 'open'] : closed;
}

/**
 * The ratio in each repetition, against B's block of the same repetition (blocks are interleaved,
 * so the two ran minutes apart at most). Empty unless both cells kept every repetition with a
 * figure: a block whose calls all failed has none (its percentiles read 0), and a ratio made from
 * it would look like a pass.
 */
export function repetitionRatios(cell: LatencyCell, base: LatencyCell, metric: Metric): number[] {
  if (cell.repetitions.length !== base.repetitions.length) return [];
  const pairs = cell.repetitions.map((repetition, index) => [
    repetition[metric],
    base.repetitions[index]![metric],
  ]);
  if (pairs.some(([value, reference]) => !(value! > 0 && reference! > 0))) return [];
  return pairs.map(([value, reference]) => value! / reference!);
}

/** How far B-twin lies from B in one cell and figure, either way, as a ratio of at least 1. */
function twinSpread(twin: LatencyCell | undefined, base: LatencyCell, metric: Metric): number | undefined {
  if (!twin) return undefined;
  const ratio = cellMetric(twin, metric) / cellMetric(base, metric);
  return Number.isFinite(ratio) && ratio > 0 ? Math.max(ratio, 1 / ratio) : undefined;
}

function readCell(
  cells: readonly LatencyCell[],
  target: RatioTarget,
  condition: string,
): CellReading | undefined {
  const base = find(cells, 'B', condition);
  const cell = find(cells, target.variant, condition);
  if (!base || !cell) return undefined;
  const value = cellMetric(cell, target.metric) / cellMetric(base, target.metric);
  const holds = meetsLine(value, target);
  const repetitions = repetitionRatios(cell, base, target.metric);
  if (holds || target.control) return { condition, value, holds, repetitions };
  const spread = twinSpread(find(cells, 'B-twin', condition), base, target.metric);
  return {
    condition,
    value,
    holds,
    repetitions,
    past: target.direction === 'at most' ? value / target.limit : target.limit / value,
    ...(spread === undefined ? {} : { twinSpread: spread }),
  };
}

const withinNoise = (reading: CellReading) =>
  reading.past !== undefined && reading.twinSpread !== undefined && reading.past <= reading.twinSpread;

function formatReading(reading: CellReading): string {
  const parts = [`${reading.condition}: ${reading.value.toFixed(2)}×${reading.holds ? '' : ' ✗'}`];
  const repetitions = reading.repetitions;
  if (repetitions.length > 1) {
    parts.push(
      `{repetitions ${Math.min(...repetitions).toFixed(2)}–${Math.max(...repetitions).toFixed(2)}×}`,
    );
  }
  if (reading.past !== undefined && reading.twinSpread !== undefined) {
    const past = `${reading.past.toFixed(3)}× past the line`;
    const spread = `B-twin's spread ${reading.twinSpread.toFixed(3)}×`;
    parts.push(withinNoise(reading) ? `(within noise: ${past}, ${spread})` : `(${past}, beyond ${spread})`);
  }
  return parts.join(' ');
}

/** What the run says about a target's misses: within the A/A spread, inside its own noise, both, or nothing. */
function missNoteOf(readings: readonly CellReading[], target: RatioTarget): string | undefined {
  const misses = readings.filter((reading) => !reading.holds);
  if (target.control || misses.length === 0) return undefined;
  const aRepetitionHeld = (reading: CellReading) =>
    reading.repetitions.some((ratio) => meetsLine(ratio, target));
  const notes = [
    ...(misses.every(withinNoise) ? [withinNoiseText] : []),
    ...(misses.every(aRepetitionHeld) ? [insideSpreadText] : []),
  ];
  return notes.length > 0 ? notes.join('; ') : undefined;
}

function checkRatioTarget(cells: readonly LatencyCell[], target: RatioTarget): TargetCheck | undefined {
  const readings = conditionsOf(cells)
    .filter((condition) => !(target.closedLoopOnly && condition === 'open'))
    .flatMap((condition) => readCell(cells, target, condition) ?? []);
  if (readings.length === 0) return undefined;
  const note = missNoteOf(readings, target);
  return {
    target: target.target,
    measured: readings.map(formatReading).join(', '),
    holds: readings.every((reading) => reading.holds),
    ...(target.control ? { control: controlText } : {}),
    ...(note ? { note } : {}),
  };
}

/** Whether D's duplicates left the closed call as they found it: no event, same run, no tool run. */
function checkDuplicates(results: BenchResults): TargetCheck | undefined {
  const check = results.latency?.duplicateCheck;
  // A run without D made no duplicate calls: its check would hold without testing anything.
  if (!check || check.duplicateCalls === 0) return undefined;
  return {
    target: 'D runs no workflow or activity task',
    measured: `history ${check.historyEventsBefore} → ${check.historyEventsAfter} events, run ${check.runIdUnchanged ? 'unchanged' : 'changed'}, ${check.toolExecutionsDuringD} tool runs`,
    holds:
      check.historyEventsBefore === check.historyEventsAfter &&
      check.runIdUnchanged &&
      check.toolExecutionsDuringD === 0,
  };
}

/** Flat: no later level holds more than 15% over the first (the cache is full from the first). */
function checkMemory(waiting: WaitingPhaseResult): TargetCheck {
  const levels = waiting.levels;
  const growth = Math.max(...levels.map((level) => level.workerRssMb)) / levels[0]!.workerRssMb;
  return {
    target: 'worker RSS flat once the cache is full (every level <= 1.15× the first)',
    measured:
      levels.map((level) => `${level.waiting}: ${level.workerRssMb} MiB`).join(', ') +
      ` after GC in every thread (${growth.toFixed(2)}×); before GC ` +
      levels.map((level) => `${level.workerRssBeforeGcMb ?? '–'}`).join(' / '),
    holds: growth <= 1.15,
  };
}

/**
 * C's tail while calls wait, against C on the empty database. B, measured beside C at the same
 * points, says how much of the growth is the dev server's: with thousands more calls in its
 * database, bare Temporal's tail grows too.
 */
function checkWaitingTail(waiting: WaitingPhaseResult): TargetCheck {
  const last = waiting.levels.at(-1)!;
  const loaded = waiting.callWhileWaiting.p99Ms / waiting.callUnloaded.p99Ms;
  const b = waiting.bBesideC;
  const bRatio = b?.whileWaiting && b.unloaded ? b.whileWaiting.p99Ms / b.unloaded.p99Ms : undefined;
  const holds = loaded <= 1.2;
  const beside =
    bRatio === undefined
      ? ''
      : ` [B beside it: ${b!.whileWaiting!.p99Ms} vs ${b!.unloaded!.p99Ms} ms (${bRatio.toFixed(2)}×)]`;
  const prefill = waiting.prefill
    ? `; none waiting after ${waiting.prefill.calls} closed ${waiting.prefill.callAfterPrefill.p99Ms} ms`
    : '';
  return {
    target: `C p99 with ${last.waiting} waiting <= 1.2× unloaded`,
    measured: `${waiting.callWhileWaiting.p99Ms} vs ${waiting.callUnloaded.p99Ms} ms (${loaded.toFixed(2)}×)${beside}; after drain ${waiting.callAfterDrain.p99Ms} ms${prefill}`,
    holds,
    ...(!holds && bRatio !== undefined && bRatio >= loaded
      ? { note: "B, measured beside C, grew as much: the dev server's tail, not toolgate's" }
      : {}),
  };
}

function checkResume(waiting: WaitingPhaseResult): TargetCheck {
  const resume = waiting.resumeEvicted.p50Ms / waiting.resumeCached.p50Ms;
  return {
    target: 'evicted resume p50 <= 2× cached',
    measured: `${waiting.resumeEvicted.p50Ms} vs ${waiting.resumeCached.p50Ms} ms (${resume.toFixed(2)}×)`,
    holds: resume <= 2,
  };
}

/** Checks the targets, and the A/A controls, against one run's figures. */
export function checkTargets(results: BenchResults): TargetCheck[] {
  const cells = results.latency?.cells ?? [];
  const waiting = results.waiting;
  const duplicates = checkDuplicates(results);
  return [
    ...ratioTargets.flatMap((target) => checkRatioTarget(cells, target) ?? []),
    ...(duplicates ? [duplicates] : []),
    ...(waiting && waiting.levels.length > 0
      ? [checkMemory(waiting), checkWaitingTail(waiting), checkResume(waiting)]
      : []),
  ];
}

/** What the run says about a check that did not hold, for the report: what it is, or its note. */
export function missNote(target: TargetCheck): string {
  if (target.control) return ` (${target.control})`;
  return target.note ? ` (${target.note})` : '';
}
