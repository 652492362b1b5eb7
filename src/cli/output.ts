import type { BulkReplayProgress, BulkReplaySummary, CallSummary } from '../client/operations.ts';
import type { CallRecord } from '../contracts/call-record.ts';

/**
 * The CLI's exit codes. Scripts can branch on them without parsing output.
 */
export const ExitCode = {
  /** The command did what was asked; for `call`, `replay` and `approve --wait`, the call succeeded. */
  ok: 0,
  /** A usage mistake or an unexpected internal error. */
  error: 1,
  /** The call was denied before anything ran (allowlist, validation, approval rejected or expired). */
  denied: 2,
  /** The call ran and ended failed, timeout or cancelled. */
  failed: 3,
  /** toolgate refused the operation: a decision that did not count, a replay or undo it will not do. */
  refused: 4,
  /** No call with that ID. */
  notFound: 5,
  /** No server or no worker reachable. */
  unavailable: 6,
} as const;
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

/** The exit code a call's final status maps to. Open calls (`--no-wait`) count as success. */
export function exitCodeForRecord(record: Pick<CallRecord, 'status'>): ExitCode {
  switch (record.status) {
    case 'succeeded':
    case 'pending':
    case 'running':
    case 'awaiting_approval':
      return ExitCode.ok;
    case 'denied':
      return ExitCode.denied;
    default:
      return ExitCode.failed;
  }
}

/**
 * Whether a closed record shows that a cancel stopped the call: it ended `cancelled`, or it was
 * cancelled while it waited for a human (`denied` with `CANCELLED`). A call whose tool finished, or
 * failed, before the cancel could stop it ends otherwise, and its record says so.
 */
export function endedByCancel(record: Pick<CallRecord, 'status' | 'reason'>): boolean {
  return record.status === 'cancelled' || (record.status === 'denied' && record.reason === 'CANCELLED');
}

/** One JSON document on stdout, for `--json`. */
export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

export function printLines(lines: readonly string[]): void {
  process.stdout.write(`${lines.join('\n')}\n`);
}

/** Strips control characters, so a model-written value cannot move the cursor or recolour a terminal. */
export function safeText(value: unknown, maxLength = 200): string {
  const text = typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value));
  // biome-ignore lint/suspicious/noControlCharactersInRegex: removing control characters is the point.
  const cleaned = text.replace(/[\u0000-\u001f\u007f-\u009f]/g, '?');
  return cleaned.length > maxLength ? `${cleaned.slice(0, maxLength - 1)}…` : cleaned;
}

/** A record as a short human-readable block. */
export function describeRecord(record: CallRecord): string[] {
  const lines = [
    `call      ${record.callId}`,
    `run       ${record.runId}`,
    `tool      ${record.tool}${record.tier ? ` (${record.tier})` : ''}`,
    `status    ${record.status}   effect ${record.effect}${record.reason ? `   reason ${record.reason}` : ''}`,
    `requester ${record.principal} (${record.principalKind}) in ${record.tenant}`,
    `input     ${safeText(record.input)}`,
  ];
  if (record.message) lines.push(`message   ${safeText(record.message, 400)}`);
  if (record.output !== undefined) lines.push(`output    ${safeText(record.output)}`);
  if (record.approval) {
    const approval = record.approval;
    lines.push(`approvers ${approval.approvers.join(', ')}   expires ${approval.expiresAt}`);
    if (approval.preview) lines.push(`preview   ${safeText(approval.preview, 400)}`);
    if (approval.decision) {
      lines.push(
        `decision  ${approval.decision} by ${approval.decidedBy ?? '?'}${approval.comment ? `: ${safeText(approval.comment)}` : ''}`,
      );
    }
  }
  if (record.replay) {
    lines.push(
      `replay    of run ${record.replay.replacesRunId} by ${record.replay.operator}${record.replay.force ? ' (forced)' : ''}${record.replay.reason ? `: ${safeText(record.replay.reason)}` : ''}`,
    );
  }
  if (record.undo) {
    lines.push(
      `undo      ${record.undo.status} by ${record.undo.operator} at ${record.undo.at}${record.undo.message ? `: ${safeText(record.undo.message)}` : ''}`,
    );
  }
  lines.push('transitions');
  for (const transition of record.transitions) {
    lines.push(
      `  ${transition.at}  ${transition.status}${transition.note ? `  ${safeText(transition.note)}` : ''}`,
    );
  }
  if (record.refusedDecisions.length > 0) {
    lines.push('refused decisions');
    for (const refused of record.refusedDecisions) {
      lines.push(
        `  ${refused.at}  ${refused.decision} claimed by ${safeText(refused.claimedApprover, 64)}: ${safeText(refused.reason)}`,
      );
    }
  }
  if (record.decisionsDroppedUnread) {
    lines.push(
      `decisions dropped unread: ${record.decisionsDroppedUnread} (the queue of decisions to check was full: a flood of signals; a valid one among them must be sent again)`,
    );
  }
  return lines;
}

/** Left-aligned columns, widths from the content. */
export function formatTable(headers: readonly string[], rows: readonly (readonly string[])[]): string[] {
  const widths = headers.map((header, column) =>
    Math.max(header.length, ...rows.map((row) => (row[column] ?? '').length)),
  );
  const format = (row: readonly string[]) =>
    row
      .map((cell, column) => cell.padEnd(widths[column] ?? 0))
      .join('  ')
      .trimEnd();
  return [format(headers), format(widths.map((width) => '-'.repeat(width))), ...rows.map(format)];
}

export function describeCalls(calls: readonly CallSummary[]): string[] {
  if (calls.length === 0) return ['No calls match.'];
  return formatTable(
    ['STARTED', 'STATUS', 'EFFECT', 'TOOL', 'TENANT', 'PRINCIPAL', 'CALL ID'],
    calls.map((call) => [
      call.startedAt.replace('T', ' ').slice(0, 19),
      call.status,
      call.effect ?? '',
      call.tool,
      call.tenant ?? '',
      safeText(call.principal ?? '', 32),
      call.callId,
    ]),
  );
}

/**
 * A progress reporter for bulk replay on stderr: a redrawn bar on a terminal, one line per call
 * otherwise (CI logs, tests), so progress is visible either way.
 */
export function createProgressReporter(stream: NodeJS.WriteStream = process.stderr) {
  const width = 30;
  return (progress: BulkReplayProgress) => {
    const filled = progress.total === 0 ? width : Math.round((progress.done / progress.total) * width);
    const bar = `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}]`;
    const counts = `${progress.done}/${progress.total}  ok ${progress.succeeded}  failed ${progress.failed}  refused ${progress.refused}`;
    if (stream.isTTY) {
      stream.write(`\r${bar} ${counts}`);
      if (progress.done === progress.total) stream.write('\n');
    } else {
      stream.write(`replay ${bar} ${counts}  ${progress.item.outcome} ${progress.item.callId}\n`);
    }
  };
}

export function describeBulkSummary(summary: BulkReplaySummary): string[] {
  const rows = summary.items.map((item) => [
    item.outcome,
    item.tool,
    item.callId,
    safeText(item.message ?? '', 80),
  ]);
  const table = summary.items.length > 0 ? formatTable(['OUTCOME', 'TOOL', 'CALL ID', 'NOTE'], rows) : [];
  const totals = summary.dryRun
    ? `Dry run: ${summary.total} call(s) would be replayed; nothing was started.`
    : `Replayed ${summary.total}: ${summary.succeeded} succeeded, ${summary.failed} failed, ${summary.refused} refused.`;
  return [...table, '', totals];
}
