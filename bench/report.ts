import type { BlockOrder } from './block-order.ts';
import type { BenchResults } from './main.ts';
import type {
  LatencyCell,
  LineDirection,
  TargetCheck,
  TargetFigure,
  VariantName,
  WaitingPhaseResult,
} from './result-types.ts';
import { variantDescriptions, variantNames } from './result-types.ts';
import { type SegmentCell, type SegmentName, segmentDescriptions, segmentNames } from './segments.ts';

const ratio = (value: number, base: number | undefined) =>
  base === undefined || base === 0 ? undefined : value / base;
const formatRatio = (value: number | undefined) => (value === undefined ? '–' : `${value.toFixed(2)}×`);
const formatMs = (value: number) =>
  value < 1 ? value.toFixed(3) : value < 100 ? value.toFixed(1) : value.toFixed(0);

export function conditionsOf(cells: readonly LatencyCell[]): string[] {
  const closed = [...new Set(cells.map((cell) => cell.condition).filter((c) => c.startsWith('c')))].sort(
    (left, right) => Number(left.slice(1)) - Number(right.slice(1)),
  );
  return cells.some((cell) => cell.condition === 'open') ? [...closed, 'open'] : closed;
}

/** The cell of one variant under one condition: a latency cell, or a split of a call's time. */
function find<Cell extends { readonly variant: string; readonly condition: string }>(
  cells: readonly Cell[],
  variant: VariantName,
  condition: string,
): Cell | undefined {
  return cells.find((cell) => cell.variant === variant && cell.condition === condition);
}

/** Results written before round 10 have no block order: their blocks were rotated. */
function blockOrderText(order: BlockOrder | undefined): string {
  return order?.kind === 'shuffled' ? `blocks shuffled (seed ${order.seed})` : 'blocks rotated';
}

/** The ratio table against B and the targets, as markdown. */
export function renderMarkdown(results: BenchResults): string {
  const lines: string[] = [];
  const { meta } = results;
  lines.push(`# toolgate benchmark${meta.quick ? ' (quick smoke run: figures are not meaningful)' : ''}`, '');
  lines.push(
    `${meta.startedAt} · ${meta.cores} cores (${meta.cpuModel}) · Node ${meta.node} · Temporal CLI ${meta.temporalCli} · ` +
      `${meta.repetitions} repetition(s) · open loop ${meta.openLoopRatePerSecond}/s for ${meta.openLoopDurationMs / 1000} s · ` +
      blockOrderText(meta.blockOrder),
    '',
  );
  const latency = results.latency;
  if (latency) {
    const conditions = conditionsOf(latency.cells);
    lines.push('## Ratios against B (same run)', '');
    lines.push(
      'Each cell: p50 ratio / p99 ratio / throughput ratio. Lower is better for latency, higher for throughput.',
      '',
    );
    lines.push(`| variant | ${conditions.join(' | ')} |`, `|---|${conditions.map(() => '---').join('|')}|`);
    for (const variant of variantNames) {
      const row = conditions.map((condition) => {
        const cell = find(latency.cells, variant, condition);
        const base = find(latency.cells, 'B', condition);
        if (!cell || !base) return '–';
        return `${formatRatio(ratio(cell.latency.p50Ms, base.latency.p50Ms))} / ${formatRatio(ratio(cell.latency.p99Ms, base.latency.p99Ms))} / ${formatRatio(ratio(cell.throughputPerSecond, base.throughputPerSecond))}`;
      });
      if (row.every((entry) => entry === '–')) continue;
      lines.push(`| ${variant} | ${row.join(' | ')} |`);
    }
    lines.push('', '## Absolute figures', '');
    lines.push(
      '| variant | condition | p50 ms | p90 ms | p99 ms | max ms | calls/s | worker CPU ms/call | server CPU ms/call | worker RSS MiB | server RSS MiB | eager started | errors |',
      '|---|---|---|---|---|---|---|---|---|---|---|---|---|',
    );
    for (const variant of variantNames) {
      for (const condition of conditions) {
        const cell = find(latency.cells, variant, condition);
        if (!cell) continue;
        const eager = cell.eagerRequested > 0 ? `${cell.eagerStarted}/${cell.eagerRequested}` : '–';
        lines.push(
          `| ${variant} | ${condition} | ${formatMs(cell.latency.p50Ms)} | ${formatMs(cell.latency.p90Ms)} | ${formatMs(cell.latency.p99Ms)} | ${formatMs(cell.latency.maxMs)} | ${cell.throughputPerSecond} | ${cell.workerCpuMsPerCall} | ${cell.serverCpuMsPerCall} | ${cell.workerRssMb} | ${cell.serverRssMb} | ${eager} | ${cell.errors} |`,
        );
      }
    }
    const threads = renderThreadCpu(latency.cells, conditions);
    if (threads.length > 0) lines.push('', ...threads);
    if (latency.segments?.length) lines.push('', ...renderSegments(latency.segments));
    lines.push('', '## History events per variant', '');
    lines.push('| variant | events | event types |', '|---|---|---|');
    for (const variant of variantNames) {
      const shape = latency.histories[variant];
      if (!shape) continue;
      const types = shape.eventTypes.join(', ') || '–';
      lines.push(`| ${variant} | ${shape.events} | ${types}${shape.note ? ` (${shape.note})` : ''} |`);
    }
    const check = latency.duplicateCheck;
    lines.push(
      '',
      `D check: ${check.duplicateCalls} duplicate calls; the closed call's history went from ${check.historyEventsBefore} to ${check.historyEventsAfter} events, ` +
        `its run ${check.runIdUnchanged ? 'did not change' : 'CHANGED'}, and the tool ran ${check.toolExecutionsDuringD} times during D blocks.`,
    );
  }
  if (results.waiting) lines.push('', ...renderWaiting(results.waiting));
  lines.push('', '## Targets', '', '| target | measured | holds |', '|---|---|---|');
  for (const target of results.targets) {
    const verdict = target.holds
      ? `yes${target.control ? ` (${target.control})` : ''}`
      : `**no**${missNote(target)}`;
    lines.push(`| ${target.target} | ${target.measured} | ${verdict} |`);
  }
  lines.push('', '## Variants', '');
  for (const variant of variantNames) lines.push(`- **${variant}**: ${variantDescriptions[variant]}`);
  return `${lines.join('\n')}\n`;
}

/**
 * The worker process's CPU per call by thread, with the difference from B's in brackets: where a
 * variant's extra CPU goes (bench/thread-cpu.ts). The workflow column is the worker that ran it.
 */
function renderThreadCpu(cells: readonly LatencyCell[], conditions: readonly string[]): string[] {
  const perCall = (cell: LatencyCell | undefined) => {
    const threads = cell?.threadCpuMsPerCall;
    if (!threads) return undefined;
    return {
      main: threads.main,
      workflow: threads.toolgateWorkflow + threads.bareWorkflow,
      core: threads.core,
      other: threads.other,
    };
  };
  const rows: string[] = [];
  for (const variant of variantNames) {
    for (const condition of conditions) {
      const figures = perCall(find(cells, variant, condition));
      if (!figures) continue;
      const base = variant === 'B' ? undefined : perCall(find(cells, 'B', condition));
      const show = (key: keyof typeof figures) => withDifference(figures[key], base?.[key]);
      rows.push(
        `| ${variant} | ${condition} | ${show('main')} | ${show('workflow')} | ${show('core')} | ${show('other')} |`,
      );
    }
  }
  if (rows.length === 0) return [];
  return [
    '## Worker CPU per call by thread (ms; in brackets, the difference from B)',
    '',
    "Read from /proc per block at 100 ticks a second. **main**: the runner's main thread (the load generator and client, the activities, the worker's Node side); **workflow**: the workflow thread of the worker that ran the variant (the sandbox); **core**: the Rust SDK core's threads; **other**: V8's and libuv's helper threads (GC among them).",
    '',
    '| variant | condition | main | workflow | core | other |',
    '|---|---|---|---|---|---|',
    ...rows,
  ];
}

/** `value (+difference)` to two decimals, or the value alone without a base. */
function withDifference(value: number, base: number | undefined): string {
  if (base === undefined) return value.toFixed(2);
  // Rounded first, so that a difference too small to print reads +0.00, never −0.00.
  const difference = Math.round((value - base) * 100) / 100;
  return `${value.toFixed(2)} (${difference < 0 ? '−' : '+'}${Math.abs(difference).toFixed(2)})`;
}

const segmentHeadings: Record<SegmentName | 'total', string> = {
  start: 'start',
  queue: 'queue',
  workflowTasks: 'workflow tasks',
  activities: 'activities',
  other: 'other',
  result: 'result',
  total: 'total',
};

/** Mean parts of a call per variant, with the difference from B's in brackets. */
function renderSegments(segments: readonly SegmentCell[]): string[] {
  const lines = ['## Where the time goes (mean ms per call; in brackets, the difference from B)', ''];
  lines.push(
    "Every measured call of these conditions, split by its history's event times. The parts add up to the total the caller saw:",
    '',
    ...segmentNames.map((name) => `- **${segmentHeadings[name]}**: ${segmentDescriptions[name]}`),
  );
  const columns = [...segmentNames, 'total'] as const;
  for (const condition of [...new Set(segments.map((cell) => cell.condition))]) {
    const label =
      condition === 'open' ? 'open loop' : `${condition.slice(1)} caller${condition === 'c1' ? '' : 's'}`;
    lines.push('', `${label}:`, '');
    lines.push(
      `| variant | calls | ${columns.map((name) => segmentHeadings[name]).join(' | ')} |`,
      `|---|---|${columns.map(() => '---').join('|')}|`,
    );
    const base = find(segments, 'B', condition);
    for (const variant of variantNames) {
      const cell = find(segments, variant, condition);
      if (!cell) continue;
      const parts = columns.map((name) =>
        withDifference(cell.meanMs[name], variant === 'B' ? undefined : base?.meanMs[name]),
      );
      const calls = cell.skipped ? `${cell.calls} (${cell.skipped} not split)` : `${cell.calls}`;
      lines.push(`| ${variant} | ${calls} | ${parts.join(' | ')} |`);
    }
  }
  return lines;
}

function renderWaiting(waiting: WaitingPhaseResult): string[] {
  const lines = [`## Waiting approval-tier calls (worker cache ${waiting.cacheSize} workflows)`, ''];
  lines.push(
    '| waiting | seconds to start | worker RSS MiB (after GC, every thread) | worker RSS MiB before GC | main-thread heap MiB | external MiB | server RSS MiB |',
    '|---|---|---|---|---|---|---|',
  );
  for (const level of waiting.levels) {
    lines.push(
      `| ${level.waiting} | ${level.secondsToStart} | ${level.workerRssMb}${level.collectedInWorkflowThread === false ? ' (workflow thread not collected)' : ''} | ${level.workerRssBeforeGcMb ?? '–'} | ${level.workerHeapMb} | ${level.workerExternalMb ?? '–'} | ${level.serverRssMb} |`,
    );
  }
  const row = (name: string, summary: WaitingPhaseResult['resumeCached']) =>
    `| ${name} | ${summary.count} | ${formatMs(summary.p50Ms)} | ${formatMs(summary.p90Ms)} | ${formatMs(summary.p99Ms)} | ${formatMs(summary.maxMs)} |`;
  lines.push(
    '',
    '| measurement | samples | p50 ms | p90 ms | p99 ms | max ms |',
    '|---|---|---|---|---|---|',
  );
  lines.push(
    row('resume, cached call (approve → result)', waiting.resumeCached),
    row('resume, evicted call (approve → result)', waiting.resumeEvicted),
    row('C, none waiting', waiting.callUnloaded),
    ...(waiting.prefill
      ? [
          row(
            `C, none waiting, ${waiting.prefill.calls} calls closed before`,
            waiting.prefill.callAfterPrefill,
          ),
        ]
      : []),
    row('C, all waiting', waiting.callWhileWaiting),
    row('C, after the waiting calls were approved', waiting.callAfterDrain),
    ...Object.entries(waiting.bareCalls ?? {}).flatMap(([variant, points]) =>
      (
        [
          ['none waiting', points.unloaded],
          ['none waiting, calls closed before', points.afterPrefill],
          ['all waiting', points.whileWaiting],
          ['after the drain', points.afterDrain],
        ] as const
      ).flatMap(([name, summary]) => (summary ? [row(`${variant} beside C, ${name}`, summary)] : [])),
    ),
  );
  if (waiting.prefill) {
    lines.push(
      '',
      `Starting and approving the ${waiting.prefill.calls} calls closed before took ${waiting.prefill.secondsToStartAndApprove} s.`,
    );
  }
  lines.push(
    '',
    `Approving all ${waiting.approvedCalls} remaining calls took ${waiting.secondsToApproveAll} s (${waiting.approvalsPerSecond}/s, ${waiting.approvalErrors} errors).`,
  );
  return lines;
}

const palette = ['#4e79a7', '#f28e2b', '#e15759', '#76b7b2', '#59a14f', '#edc948', '#b07aa1'];

/** A hand-written SVG: p50 bars per variant and condition on a log scale, p99 as a tick above each. */
export function renderSvg(results: BenchResults): string {
  const cells = results.latency?.cells ?? [];
  const conditions = conditionsOf(cells);
  const variants = variantNames.filter((variant) => cells.some((cell) => cell.variant === variant));
  const width = 960;
  const height = 420;
  const left = 70;
  const right = 20;
  const top = 40;
  const bottom = 70;
  const plotHeight = height - top - bottom;
  const values = cells
    .flatMap((cell) => [cell.latency.p50Ms, cell.latency.p99Ms])
    .filter((value) => value > 0);
  const minimum = 10 ** Math.floor(Math.log10(Math.max(0.001, Math.min(...values, 1))));
  const maximum = 10 ** Math.ceil(Math.log10(Math.max(...values, 10)));
  const y = (value: number) =>
    top +
    plotHeight -
    ((Math.log10(Math.max(value, minimum)) - Math.log10(minimum)) /
      (Math.log10(maximum) - Math.log10(minimum))) *
      plotHeight;
  const groupWidth = (width - left - right) / Math.max(1, variants.length);
  const barWidth = (groupWidth * 0.8) / Math.max(1, conditions.length);
  const parts: string[] = [];
  parts.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="${width}" height="${height}" fill="#ffffff"/>`,
    `<text x="${width / 2}" y="20" text-anchor="middle" font-size="15">toolgate benchmark: p50 latency (bars) and p99 (ticks), ms, log scale</text>`,
  );
  for (let decade = minimum; decade <= maximum; decade *= 10) {
    const position = y(decade);
    parts.push(
      `<line x1="${left}" x2="${width - right}" y1="${position}" y2="${position}" stroke="#dddddd"/>`,
      `<text x="${left - 6}" y="${position + 4}" text-anchor="end">${decade >= 1 ? decade : decade.toPrecision(1)}</text>`,
    );
  }
  variants.forEach((variant, variantIndex) => {
    const groupLeft = left + variantIndex * groupWidth + groupWidth * 0.1;
    conditions.forEach((condition, conditionIndex) => {
      const cell = find(cells, variant, condition);
      if (!cell) return;
      const x = groupLeft + conditionIndex * barWidth;
      const barTop = y(cell.latency.p50Ms);
      const tick = y(cell.latency.p99Ms);
      const color = palette[conditionIndex % palette.length];
      parts.push(
        `<rect x="${x.toFixed(1)}" y="${barTop.toFixed(1)}" width="${(barWidth - 1).toFixed(1)}" height="${(top + plotHeight - barTop).toFixed(1)}" fill="${color}"><title>${variant} ${condition}: p50 ${cell.latency.p50Ms} ms, p99 ${cell.latency.p99Ms} ms</title></rect>`,
        `<line x1="${x.toFixed(1)}" x2="${(x + barWidth - 1).toFixed(1)}" y1="${tick.toFixed(1)}" y2="${tick.toFixed(1)}" stroke="#222222" stroke-width="2"/>`,
      );
    });
    parts.push(
      `<text x="${(groupLeft + groupWidth * 0.4).toFixed(1)}" y="${top + plotHeight + 18}" text-anchor="middle">${escapeXml(variant)}</text>`,
    );
  });
  conditions.forEach((condition, index) => {
    const x = left + index * 110;
    parts.push(
      `<rect x="${x}" y="${height - 28}" width="14" height="14" fill="${palette[index % palette.length]}"/>`,
      `<text x="${x + 20}" y="${height - 16}">${condition === 'open' ? 'open loop' : `${condition.slice(1)} callers`}</text>`,
    );
  });
  parts.push('</svg>');
  return `${parts.join('\n')}\n`;
}

function escapeXml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** What the run says about a miss, if anything: out of reach, or inside the run's own noise. */
export function missNote(target: TargetCheck): string {
  if (target.control) return ` (${target.control})`;
  if (target.outOfReach) return ` (out of reach: ${target.outOfReach})`;
  if (target.insideSpread) return ` (${target.insideSpread})`;
  return '';
}

/** Whether a figure meets a target's line. The pool (bench/pool.ts) judges its medians with it. */
export function meetsLine(value: number, line: { limit: number; direction: LineDirection }): boolean {
  return line.direction === 'at most' ? value <= line.limit : value >= line.limit;
}

/** A figure a target reads, both merged over the run and per repetition. */
type RepetitionMetric = keyof LatencyCell['repetitions'][number];

function cellMetric(cell: LatencyCell, metric: RepetitionMetric): number {
  return metric === 'throughputPerSecond' ? cell.throughputPerSecond : cell.latency[metric];
}

/**
 * The ratio in each repetition, against B's block of the same repetition (blocks are interleaved,
 * so the two ran minutes apart at most). Empty unless both cells kept every repetition with a
 * figure: a block whose calls all failed has none (its percentiles read 0), and a ratio made from
 * it would look like a pass.
 */
export function repetitionRatios(cell: LatencyCell, base: LatencyCell, metric: RepetitionMetric): number[] {
  if (cell.repetitions.length !== base.repetitions.length) return [];
  const pairs = cell.repetitions.map((repetition, index): [number, number] => [
    repetition[metric],
    base.repetitions[index]![metric],
  ]);
  if (pairs.some(([value, reference]) => !(value > 0 && reference > 0))) return [];
  return pairs.map(([value, reference]) => value / reference);
}

const formatSpread = (ratios: readonly number[]) =>
  `repetitions ${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)}×`;

/**
 * The bare-Temporal floor of the waiting target: B-idx's p99 while the calls wait over its p99 on
 * the empty database, when the phase measured it beside C at both points (`--waiting-bare`).
 */
function waitingFloor(
  waiting: WaitingPhaseResult,
): { variant: VariantName; ratio: number; whileWaitingMs: number; unloadedMs: number } | undefined {
  const points = waiting.bareCalls?.['B-idx'];
  if (!points?.whileWaiting || !points.unloaded) return undefined;
  return {
    variant: 'B-idx',
    ratio: points.whileWaiting.p99Ms / points.unloaded.p99Ms,
    whileWaitingMs: points.whileWaiting.p99Ms,
    unloadedMs: points.unloaded.p99Ms,
  };
}

/**
 * Whether a variant that lies `over` its reference (as a ratio of at least 1 on the line's side) is
 * within the run's own A/A spread in that cell and metric: how far B-twin (B under a second name)
 * lies from B, either way. The two figures when it is; undefined when it is not, or when the run
 * has no B-twin.
 */
function withinTwinSpread(
  cells: LatencyCell[],
  base: LatencyCell,
  condition: string,
  metric: RepetitionMetric,
  over: number,
): { over: number; spread: number } | undefined {
  const twin = find(cells, 'B-twin', condition);
  if (!twin) return undefined;
  const ratio = cellMetric(twin, metric) / cellMetric(base, metric);
  if (!Number.isFinite(ratio) || ratio <= 0) return undefined;
  const spread = Math.max(ratio, 1 / ratio);
  return over <= spread ? { over, spread } : undefined;
}

/** Checks the issue's targets against one run's figures. */
export function checkTargets(results: BenchResults): TargetCheck[] {
  const checks: TargetCheck[] = [];
  const cells = results.latency?.cells ?? [];
  const conditions = conditionsOf(cells);
  const perCondition = (
    target: string,
    variant: VariantName | VariantName[],
    metric: RepetitionMetric,
    limit: number,
    direction: LineDirection,
    options: { onlyClosed?: boolean; reference?: VariantName; control?: string; requires?: VariantName } = {},
  ) => {
    const measured: string[] = [];
    const figures: TargetFigure[] = [];
    let holds = true;
    // Every cell that misses is at the floor: the reference misses too, or the variant lies no
    // further from the reference than B-twin lies from B in the same cell (the run's A/A spread).
    let everyMissAtFloor = true;
    let someMissOnlyWithinTwin = false;
    let everyMissInsideSpread = true;
    const passes = (value: number) => meetsLine(value, { limit, direction });
    const better = (value: number, than: number) => (direction === 'at most' ? value < than : value > than);
    for (const condition of conditions) {
      if (options.onlyClosed && condition === 'open') continue;
      const base = find(cells, 'B', condition);
      const candidates = (Array.isArray(variant) ? variant : [variant])
        .map((name) => find(cells, name, condition))
        .filter((cell): cell is LatencyCell => cell !== undefined);
      if (!base || candidates.length === 0) continue;
      // A condition without the variant a target is about would be read from the others alone:
      // C on its own is not "the fastest readonly path".
      if (options.requires && !find(cells, options.requires, condition)) continue;
      const best = candidates.reduce((winner, cell) =>
        better(cellMetric(cell, metric), cellMetric(winner, metric)) ? cell : winner,
      );
      const value = cellMetric(best, metric) / cellMetric(base, metric);
      const ok = passes(value);
      holds &&= ok;
      const referenceCell = options.reference ? find(cells, options.reference, condition) : undefined;
      const referenceValue = referenceCell
        ? cellMetric(referenceCell, metric) / cellMetric(base, metric)
        : undefined;
      const referenceMisses = referenceValue !== undefined && !passes(referenceValue);
      // A miss beside a floor that holds: is the variant further from that floor than the run's noise?
      const twin =
        ok || referenceMisses || referenceValue === undefined || options.control
          ? undefined
          : withinTwinSpread(
              cells,
              base,
              condition,
              metric,
              direction === 'at most' ? value / referenceValue : referenceValue / value,
            );
      if (!ok && !referenceMisses && !twin) everyMissAtFloor = false;
      someMissOnlyWithinTwin ||= twin !== undefined;
      figures.push({
        condition,
        value,
        ...(Array.isArray(variant) ? { variant: best.variant } : {}),
        ...(referenceValue === undefined
          ? {}
          : { reference: { variant: options.reference!, value: referenceValue } }),
      });
      const spread = repetitionRatios(best, base, metric);
      if (!ok && !spread.some(passes)) everyMissInsideSpread = false;
      measured.push(
        `${condition}: ${value.toFixed(2)}×${Array.isArray(variant) ? ` (${best.variant})` : ''}${ok ? '' : ' ✗'}` +
          (spread.length > 1 ? ` {${formatSpread(spread)}}` : '') +
          (referenceValue === undefined ? '' : ` [${options.reference} ${referenceValue.toFixed(2)}×]`) +
          (twin
            ? ` (${best.variant} over ${options.reference} ${twin.over.toFixed(3)} <= B-twin's ${twin.spread.toFixed(3)})`
            : ''),
      );
    }
    if (measured.length === 0) return;
    const outOfReach = !holds && options.reference !== undefined && everyMissAtFloor;
    checks.push({
      target,
      measured: measured.join(', '),
      holds,
      line: { limit, direction },
      figures,
      reads: [
        'B',
        ...(Array.isArray(variant) ? variant : [variant]),
        ...(options.reference ? [options.reference] : []),
      ],
      ...(outOfReach
        ? {
            outOfReach: someMissOnlyWithinTwin
              ? `wherever this misses, bare Temporal's ${options.reference} misses it too, or lies within this run's A/A spread of it (no further than B-twin from B in the same cell)`
              : `bare Temporal's ${options.reference} misses it too wherever this misses`,
          }
        : {}),
      ...(!holds && !outOfReach && everyMissInsideSpread
        ? {
            insideSpread:
              "every cell that misses has a repetition that holds: the line is inside this run's noise",
          }
        : {}),
      ...(options.control ? { control: options.control } : {}),
    });
  };
  // B-idx is C's floor: bare Temporal storing and indexing a call as toolgate must, without the gates.
  perCondition('C p50 <= 1.10× B', 'C', 'p50Ms', 1.1, 'at most', { reference: 'B-idx' });
  perCondition('C p99 <= 1.25× B', 'C', 'p99Ms', 1.25, 'at most', { reference: 'B-idx' });
  perCondition('C throughput >= 0.90× B (closed loop)', 'C', 'throughputPerSecond', 0.9, 'at least', {
    onlyClosed: true,
    reference: 'B-idx',
  });
  perCondition('fastest readonly path p50 <= 0.5× B', ['C', 'C-E', 'C-fast'], 'p50Ms', 0.5, 'at most', {
    reference: 'B-LA',
    requires: 'C-fast',
  });
  perCondition('D p50 <= 0.25× B', 'D', 'p50Ms', 0.25, 'at most', {
    reference: 'B-read',
  });
  // The A/A control (only in runs that name B-twin): C's three lines read for B itself under a
  // second name. A miss there is this bench's own noise, with nothing added to the call.
  const control = 'an A/A control, not a target: B-twin is B under a second name, so its true ratio is 1';
  perCondition('A/A control: B-twin p50 <= 1.10× B', 'B-twin', 'p50Ms', 1.1, 'at most', { control });
  perCondition('A/A control: B-twin p99 <= 1.25× B', 'B-twin', 'p99Ms', 1.25, 'at most', { control });
  perCondition(
    'A/A control: B-twin throughput >= 0.90× B (closed loop)',
    'B-twin',
    'throughputPerSecond',
    0.9,
    'at least',
    {
      onlyClosed: true,
      control,
    },
  );
  const check = results.latency?.duplicateCheck;
  // A run without D made no duplicate calls: its check would hold without testing anything.
  if (check && check.duplicateCalls > 0) {
    checks.push({
      target: 'D runs no workflow or activity task',
      measured: `history ${check.historyEventsBefore} → ${check.historyEventsAfter} events, run ${check.runIdUnchanged ? 'unchanged' : 'changed'}, ${check.toolExecutionsDuringD} tool runs`,
      holds:
        check.historyEventsBefore === check.historyEventsAfter &&
        check.runIdUnchanged &&
        check.toolExecutionsDuringD === 0,
    });
  }
  const waiting = results.waiting;
  if (waiting && waiting.levels.length > 0) {
    const first = waiting.levels[0]!;
    const last = waiting.levels[waiting.levels.length - 1]!;
    // Flat: no later level holds more than 15% over the first (the cache is full from the first).
    const growth = Math.max(...waiting.levels.map((level) => level.workerRssMb)) / first.workerRssMb;
    checks.push({
      target: 'worker RSS flat once the cache is full (every level <= 1.15× the first)',
      measured:
        waiting.levels.map((level) => `${level.waiting}: ${level.workerRssMb} MiB`).join(', ') +
        ` after GC in every thread (${growth.toFixed(2)}×); before GC ` +
        waiting.levels.map((level) => `${level.workerRssBeforeGcMb ?? '–'}`).join(' / '),
      holds: growth <= 1.15,
      line: { limit: 1.15, direction: 'at most' },
      figures: [{ condition: `${last.waiting} waiting`, value: growth }],
    });
    const loaded = waiting.callWhileWaiting.p99Ms / waiting.callUnloaded.p99Ms;
    // C's floor, when the phase measured it beside C at the same points (round 27): the same ratio
    // for bare Temporal recording a call as toolgate must, on the same dev server, in the same minutes.
    const floor = waitingFloor(waiting);
    const waitingHolds = loaded <= 1.2;
    checks.push({
      target: `C p99 with ${last.waiting} waiting <= 1.2× unloaded`,
      measured:
        `${waiting.callWhileWaiting.p99Ms} vs ${waiting.callUnloaded.p99Ms} ms (${loaded.toFixed(2)}×)` +
        (floor
          ? ` [${floor.variant} beside it: ${floor.whileWaitingMs} vs ${floor.unloadedMs} ms (${floor.ratio.toFixed(2)}×)]`
          : '') +
        `; after drain ${waiting.callAfterDrain.p99Ms} ms${waiting.prefill ? `; none waiting after ${waiting.prefill.calls} closed ${waiting.prefill.callAfterPrefill.p99Ms} ms` : ''}`,
      holds: waitingHolds,
      line: { limit: 1.2, direction: 'at most' },
      figures: [
        {
          condition: `${last.waiting} waiting`,
          value: loaded,
          ...(floor ? { reference: { variant: floor.variant, value: floor.ratio } } : {}),
        },
      ],
      ...(!waitingHolds && floor && floor.ratio > 1.2
        ? {
            outOfReach: `bare Temporal's ${floor.variant}, measured beside C at the same points, misses it too`,
          }
        : {}),
    });
    const resume = waiting.resumeEvicted.p50Ms / waiting.resumeCached.p50Ms;
    checks.push({
      target: 'evicted resume p50 <= 2× cached',
      measured: `${waiting.resumeEvicted.p50Ms} vs ${waiting.resumeCached.p50Ms} ms (${resume.toFixed(2)}×)`,
      holds: resume <= 2,
      line: { limit: 2, direction: 'at most' },
      figures: [{ condition: 'resume', value: resume }],
    });
  }
  return checks;
}
