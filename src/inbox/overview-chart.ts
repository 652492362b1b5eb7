import type { CallSummary } from '../client/operations.ts';

/** Calls counted by status and by tool, for the overview picture. */
export interface CallOverview {
  readonly total: number;
  readonly byStatus: Readonly<Record<string, number>>;
  readonly byTool: Readonly<Record<string, number>>;
}

export function summarizeCalls(calls: readonly CallSummary[]): CallOverview {
  const byStatus: Record<string, number> = Object.create(null);
  const byTool: Record<string, number> = Object.create(null);
  for (const call of calls) {
    byStatus[call.status] = (byStatus[call.status] ?? 0) + 1;
    byTool[call.tool] = (byTool[call.tool] ?? 0) + 1;
  }
  return { total: calls.length, byStatus: { ...byStatus }, byTool: { ...byTool } };
}

/** Escapes text for XML content and attribute values. Tool names come from models. */
export function escapeXml(text: string): string {
  return text.replace(/[&<>"']/g, (character) => `&#${character.charCodeAt(0)};`);
}

const statusColours: Record<string, string> = {
  succeeded: '#2e7d32',
  awaiting_approval: '#f9a825',
  running: '#1565c0',
  pending: '#90a4ae',
  denied: '#6d4c41',
  failed: '#c62828',
  timeout: '#ad1457',
  cancelled: '#546e7a',
};

/**
 * A small bar chart, calls by status on the left and by tool on the right, as a standalone SVG.
 * Every label goes through {@link escapeXml}.
 */
export function renderOverviewSvg(overview: CallOverview): string {
  const width = 640;
  const rowHeight = 22;
  const columnWidth = 300;
  const labelWidth = 130;
  const barSpace = columnWidth - labelWidth - 40;
  const column = (
    title: string,
    counts: Readonly<Record<string, number>>,
    x: number,
    colour: (key: string) => string,
  ) => {
    const entries = Object.entries(counts)
      .sort((left, right) => right[1] - left[1])
      .slice(0, 10);
    const maximum = Math.max(1, ...entries.map(([, count]) => count));
    const rows = entries.map(([key, count], index) => {
      const y = 34 + index * rowHeight;
      const barWidth = Math.max(2, Math.round((count / maximum) * barSpace));
      return [
        `<text x="${x}" y="${y + 14}" class="label">${escapeXml(key.slice(0, 20))}</text>`,
        `<rect x="${x + labelWidth}" y="${y + 3}" width="${barWidth}" height="${rowHeight - 6}" rx="3" fill="${colour(key)}"><title>${escapeXml(`${key}: ${count}`)}</title></rect>`,
        `<text x="${x + labelWidth + barWidth + 6}" y="${y + 14}" class="count">${count}</text>`,
      ].join('');
    });
    const empty = entries.length === 0 ? `<text x="${x}" y="48" class="label">no calls yet</text>` : '';
    return `<text x="${x}" y="20" class="title">${escapeXml(title)}</text>${rows.join('')}${empty}`;
  };
  const rowsShown = Math.max(
    1,
    Object.keys(overview.byStatus).length,
    Math.min(10, Object.keys(overview.byTool).length),
  );
  const height = 44 + rowsShown * rowHeight;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img" aria-label="Calls by status and by tool">`,
    '<style>.title{font:600 13px sans-serif;fill:#222}.label{font:12px sans-serif;fill:#333}.count{font:12px sans-serif;fill:#555}</style>',
    column(
      `Calls by status (${overview.total})`,
      overview.byStatus,
      10,
      (key) => statusColours[key] ?? '#78909c',
    ),
    column('Calls by tool', overview.byTool, 10 + columnWidth + 20, () => '#5c6bc0'),
    '</svg>',
  ].join('');
}
