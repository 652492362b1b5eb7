/**
 * The report of a run: latest.md (ratios against B, absolute figures, where the time goes, history
 * events, the waiting phase, the targets) and latest.svg. Only the variants of `variantNames` are
 * shown, so a result that holds figures of other variants renders too.
 */
import type {
  BenchResults,
  DuplicateCheck,
  LatencyCell,
  LatencyPhaseResult,
  TargetCheck,
  WaitingPhaseResult,
} from './result-types.ts';
import { variantDescriptions, variantNames } from './result-types.ts';
import { type SegmentCell, type SegmentName, segmentDescriptions, segmentNames } from './segments.ts';
import { conditionsOf, missNote } from './targets.ts';

const ratio = (value: number, base: number) => (base === 0 ? '–' : `${(value / base).toFixed(2)}×`);
const formatMs = (value: number) =>
  value < 1 ? value.toFixed(3) : value < 100 ? value.toFixed(1) : value.toFixed(0);

/** A markdown table's header row and rule. */
function tableHead(...columns: string[]): string[] {
  return [`| ${columns.join(' | ')} |`, `|${columns.map(() => '---').join('|')}|`];
}

/** The cell of one variant under one condition: a latency cell, or a split of a call's time. */
function find<Cell extends { readonly variant: string; readonly condition: string }>(
  cells: readonly Cell[],
  variant: string,
  condition: string,
): Cell | undefined {
  return cells.find((cell) => cell.variant === variant && cell.condition === condition);
}

/** The ratio table against B and the targets, as markdown. */
export function renderMarkdown(results: BenchResults): string {
  const { meta, latency, waiting } = results;
  const lines = [
    `# toolgate benchmark${meta.quick ? ' (quick smoke run: figures are not meaningful)' : ''}`,
    '',
    `${meta.startedAt} · ${meta.cores} cores (${meta.cpuModel}) · Node ${meta.node} · Temporal CLI ${meta.temporalCli} · ` +
      `${meta.repetitions} repetition(s) · open loop ${meta.openLoopRatePerSecond}/s for ${meta.openLoopDurationMs / 1000} s · ` +
      `blocks shuffled (seed ${meta.blockOrder?.seed ?? '–'})`,
    ...(latency ? renderLatency(latency) : []),
    ...(waiting ? ['', ...renderWaiting(waiting)] : []),
    '',
    ...renderTargets(results.targets),
    '',
    '## Variants',
    '',
    ...variantNames.map((variant) => `- **${variant}**: ${variantDescriptions[variant]}`),
  ];
  return `${lines.join('\n')}\n`;
}

function renderLatency(latency: LatencyPhaseResult): string[] {
  const conditions = conditionsOf(latency.cells);
  return [
    '',
    ...renderRatios(latency.cells, conditions),
    '',
    ...renderAbsolute(latency.cells, conditions),
    ...(latency.segments?.length ? ['', ...renderSegments(latency.segments)] : []),
    '',
    ...renderHistories(latency.histories),
    '',
    renderDuplicateCheck(latency.duplicateCheck),
  ];
}

function renderRatios(cells: readonly LatencyCell[], conditions: readonly string[]): string[] {
  const lines = [
    '## Ratios against B (same run)',
    '',
    'Each cell: p50 ratio / p99 ratio / throughput ratio. Lower is better for latency, higher for throughput.',
    '',
    ...tableHead('variant', ...conditions),
  ];
  for (const variant of variantNames) {
    const row = conditions.map((condition) => {
      const cell = find(cells, variant, condition);
      const base = find(cells, 'B', condition);
      if (!cell || !base) return '–';
      return [
        ratio(cell.latency.p50Ms, base.latency.p50Ms),
        ratio(cell.latency.p99Ms, base.latency.p99Ms),
        ratio(cell.throughputPerSecond, base.throughputPerSecond),
      ].join(' / ');
    });
    if (row.some((entry) => entry !== '–')) lines.push(`| ${variant} | ${row.join(' | ')} |`);
  }
  return lines;
}

function renderAbsolute(cells: readonly LatencyCell[], conditions: readonly string[]): string[] {
  const lines = [
    '## Absolute figures',
    '',
    ...tableHead(
      'variant',
      'condition',
      ...['p50', 'p90', 'p99', 'max'].map((name) => `${name} ms`),
      'calls/s',
      'worker CPU ms/call',
      'server CPU ms/call',
      'worker RSS MiB',
      'server RSS MiB',
      'eager started',
      'errors',
    ),
  ];
  for (const variant of variantNames) {
    for (const condition of conditions) {
      const cell = find(cells, variant, condition);
      if (!cell) continue;
      const { p50Ms, p90Ms, p99Ms, maxMs } = cell.latency;
      const eager = cell.eagerRequested > 0 ? `${cell.eagerStarted}/${cell.eagerRequested}` : '–';
      const figures = [
        ...[p50Ms, p90Ms, p99Ms, maxMs].map(formatMs),
        cell.throughputPerSecond,
        cell.workerCpuMsPerCall,
        cell.serverCpuMsPerCall,
        cell.workerRssMb,
        cell.serverRssMb,
        eager,
        cell.errors,
      ];
      lines.push(`| ${variant} | ${condition} | ${figures.join(' | ')} |`);
    }
  }
  return lines;
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
    lines.push(...tableHead('variant', 'calls', ...columns.map((name) => segmentHeadings[name])));
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

function renderHistories(histories: LatencyPhaseResult['histories']): string[] {
  const lines = ['## History events per variant', '', ...tableHead('variant', 'events', 'event types')];
  for (const variant of variantNames) {
    const shape = histories[variant];
    if (!shape) continue;
    const types = shape.eventTypes.join(', ') || '–';
    lines.push(`| ${variant} | ${shape.events} | ${types}${shape.note ? ` (${shape.note})` : ''} |`);
  }
  return lines;
}

function renderDuplicateCheck(check: DuplicateCheck): string {
  return (
    `D check: ${check.duplicateCalls} duplicate calls; the closed call's history went from ${check.historyEventsBefore} to ${check.historyEventsAfter} events, ` +
    `its run ${check.runIdUnchanged ? 'did not change' : 'CHANGED'}, and the tool ran ${check.toolExecutionsDuringD} times during D blocks.`
  );
}

type Summary = WaitingPhaseResult['resumeCached'];

function waitingRow(name: string, summary: Summary): string {
  const figures = [summary.p50Ms, summary.p90Ms, summary.p99Ms, summary.maxMs].map(formatMs);
  return `| ${name} | ${summary.count} | ${figures.join(' | ')} |`;
}

/** C at each point of the waiting phase, and B beside it where the run measured it. */
function waitingLatencyRows(waiting: WaitingPhaseResult): string[] {
  const { prefill, bBesideC: b } = waiting;
  type Point = readonly [name: string, c: Summary, b: Summary | undefined];
  const points: Point[] = [
    ['none waiting', waiting.callUnloaded, b?.unloaded],
    ...(prefill
      ? [
          [
            `none waiting, ${prefill.calls} calls closed before`,
            prefill.callAfterPrefill,
            b?.afterPrefill,
          ] as Point,
        ]
      : []),
    ['all waiting', waiting.callWhileWaiting, b?.whileWaiting],
    ['after the waiting calls were approved', waiting.callAfterDrain, b?.afterDrain],
  ];
  return [
    waitingRow('resume, cached call (approve → result)', waiting.resumeCached),
    waitingRow('resume, evicted call (approve → result)', waiting.resumeEvicted),
    ...points.map(([name, c]) => waitingRow(`C, ${name}`, c)),
    ...points.flatMap(([name, _c, b]) => (b ? [waitingRow(`B beside C, ${name}`, b)] : [])),
  ];
}

function renderWaiting(waiting: WaitingPhaseResult): string[] {
  const lines = [
    `## Waiting approval-tier calls (worker cache ${waiting.cacheSize} workflows)`,
    '',
    ...tableHead(
      'waiting',
      'seconds to start',
      'worker RSS MiB (after GC, every thread)',
      'worker RSS MiB before GC',
      'main-thread heap MiB',
      'external MiB',
      'server RSS MiB',
    ),
  ];
  for (const level of waiting.levels) {
    const notCollected = level.collectedInWorkflowThread === false ? ' (workflow thread not collected)' : '';
    lines.push(
      `| ${level.waiting} | ${level.secondsToStart} | ${level.workerRssMb}${notCollected} | ${level.workerRssBeforeGcMb ?? '–'} | ${level.workerHeapMb} | ${level.workerExternalMb ?? '–'} | ${level.serverRssMb} |`,
    );
  }
  lines.push(
    '',
    ...tableHead('measurement', 'samples', ...['p50', 'p90', 'p99', 'max'].map((name) => `${name} ms`)),
    ...waitingLatencyRows(waiting),
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

function renderTargets(targets: readonly TargetCheck[]): string[] {
  const rows = targets.map((target) => {
    const verdict = target.holds
      ? `yes${target.control ? ` (${target.control})` : ''}`
      : `**no**${missNote(target)}`;
    return `| ${target.target} | ${target.measured} | ${verdict} |`;
  });
  return ['## Targets', '', ...tableHead('target', 'measured', 'holds'), ...rows];
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
