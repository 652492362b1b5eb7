import type { BulkReplayProgress, BulkReplaySummary, CallSummary } from '../client/operations.ts';
import type {
  ApprovalState,
  CallRecord,
  RefusedDecision,
  ReplayInfo,
  Transition,
  UndoInfo,
} from '../contracts/call-record.ts';

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

/**
 * Characters JSON.stringify leaves raw that a terminal may still act on: DEL and the C1 controls
 * (U+009B is CSI on a terminal that takes 8-bit controls), the line and paragraph separators, and
 * the bidirectional overrides and isolates that reorder what is shown.
 */
const jsonUnsafeCharacters = /[\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/**
 * One JSON document on stdout, for `--json`. The characters above are written as `\uXXXX` escapes:
 * outside strings JSON has none of them, so the document parses to the same value.
 */
export function printJson(value: unknown): void {
  process.stdout.write(`${formatJson(value)}\n`);
}

/**
 * The text {@link printJson} writes, without the final newline; with `indent` 0, one line (for logs).
 * Controls JSON leaves raw (DEL, C1, the line separators, bidirectional marks) are escaped too.
 */
export function formatJson(value: unknown, indent = 2): string {
  const text = JSON.stringify(value, null, indent) ?? 'undefined';
  return text.replace(
    jsonUnsafeCharacters,
    (character) => `\\u${character.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

export function printLines(lines: readonly string[]): void {
  process.stdout.write(`${lines.join('\n')}\n`);
}

/**
 * Strips control characters, so a model-written value cannot move the cursor, recolour a terminal,
 * set its title or reorder what it shows: C0 and C1 controls, DEL, the line and paragraph
 * separators, and the bidirectional overrides and isolates each become `?`.
 */
export function safeText(value: unknown, maxLength = 200): string {
  const text = typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value));
  const cleaned = text.replace(
    // biome-ignore lint/suspicious/noControlCharactersInRegex: removing control characters is the point.
    /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g,
    '?',
  );
  return cleaned.length > maxLength ? `${cleaned.slice(0, maxLength - 1)}…` : cleaned;
}

/** How long a call ID may be shown: a tenant, a tool and a key, each of bounded length, and some. */
const callIdWidth = 400;
/** Names: tools, tenants, principals, approvers, operators. */
const nameWidth = 130;

/** What `call`, `run` and `input` say for a record that no workflow run wrote. */
function describeIdentity(record: CallRecord): string[] {
  // A call refused before any workflow started (KEY_MISMATCH, PAYLOAD_TOO_LARGE, a malformed key,
  // an absurd tool name): there is no call ID, no run, and the input was not kept.
  if (record.callId === '') {
    return [
      'call      (none: refused before a call was started)',
      'run       (none: no run was started)',
      `input     ${record.input === null || record.input === undefined ? '(not kept: the call was refused before it started)' : safeText(record.input)}`,
    ];
  }
  // A run that was terminated or ended abnormally left no record: its run and input are unknown.
  const noRecord = '(unknown: the run ended without a record)';
  return [
    `call      ${safeText(record.callId, callIdWidth)}`,
    `run       ${record.runId === '' ? noRecord : safeText(record.runId, 64)}`,
    `input     ${record.synthetic === true && record.input === null ? noRecord : safeText(record.input)}`,
  ];
}

/**
 * A record as a short human-readable block. Every value goes through {@link safeText}: a model, a
 * caller or an approver wrote most of them, and a search attribute or a record can say anything.
 */
export function describeRecord(record: CallRecord): string[] {
  const [callLine, runLine, inputLine] = describeIdentity(record);
  return [
    callLine!,
    runLine!,
    `tool      ${safeText(record.tool, nameWidth)}${record.tier ? ` (${safeText(record.tier, 32)})` : ''}`,
    `status    ${safeText(record.status, 32)}   effect ${safeText(record.effect, 32)}${record.reason ? `   reason ${safeText(record.reason, 64)}` : ''}`,
    `requester ${safeText(record.principal, nameWidth)} (${safeText(record.principalKind, 32)}) in ${safeText(record.tenant, nameWidth)}`,
    ...(record.key !== undefined ? [`key       ${safeText(record.key, nameWidth)}`] : []),
    inputLine!,
    ...(record.message ? [`message   ${safeText(record.message, 400)}`] : []),
    ...(record.output !== undefined ? [`output    ${safeText(record.output)}`] : []),
    ...(record.approval ? describeApproval(record.approval) : []),
    ...(record.replay ? [describeReplay(record.replay)] : []),
    ...(record.undo ? [describeUndo(record.undo)] : []),
    ...describeTransitions(record.transitions),
    ...describeRefusedDecisions(record.refusedDecisions),
    ...(record.decisionsDroppedUnread
      ? [
          `decisions dropped unread: ${safeText(record.decisionsDroppedUnread, 32)} (the queue of decisions to check was full: a flood of signals; a valid one among them must be sent again)`,
        ]
      : []),
  ];
}

function describeApproval(approval: ApprovalState): string[] {
  const lines = [
    `approvers ${approval.approvers.map((approver) => safeText(approver, nameWidth)).join(', ')}   expires ${safeText(approval.expiresAt, 64)}`,
  ];
  if (approval.preview) lines.push(`preview   ${safeText(approval.preview, 400)}`);
  if (approval.decision) {
    lines.push(
      `decision  ${safeText(approval.decision, 32)} by ${approval.decidedBy === undefined ? '?' : safeText(approval.decidedBy, nameWidth)}${approval.comment ? `: ${safeText(approval.comment)}` : ''}`,
    );
  }
  return lines;
}

function describeReplay(replay: ReplayInfo): string {
  return `replay    of run ${safeText(replay.replacesRunId, 64)} by ${safeText(replay.operator, nameWidth)}${replay.force ? ' (forced)' : ''}${replay.reason ? `: ${safeText(replay.reason)}` : ''}`;
}

function describeUndo(undo: UndoInfo): string {
  return `undo      ${safeText(undo.status, 32)} by ${safeText(undo.operator, nameWidth)} at ${safeText(undo.at, 64)}${undo.message ? `: ${safeText(undo.message)}` : ''}`;
}

function describeTransitions(transitions: readonly Transition[]): string[] {
  return [
    'transitions',
    ...transitions.map(
      (transition) =>
        `  ${safeText(transition.at, 64)}  ${safeText(transition.status, 32)}${transition.note ? `  ${safeText(transition.note)}` : ''}`,
    ),
  ];
}

function describeRefusedDecisions(refusedDecisions: readonly RefusedDecision[]): string[] {
  if (refusedDecisions.length === 0) return [];
  return [
    'refused decisions',
    ...refusedDecisions.map(
      (refused) =>
        `  ${safeText(refused.at, 64)}  ${safeText(refused.decision, 32)} claimed by ${safeText(refused.claimedApprover, 64)}: ${safeText(refused.reason)}`,
    ),
  ];
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
      safeText(call.startedAt.replace('T', ' ').slice(0, 19), 32),
      safeText(call.status, 32),
      safeText(call.effect ?? '', 32),
      safeText(call.tool, 64),
      safeText(call.tenant ?? '', 64),
      safeText(call.principal ?? '', 32),
      safeText(call.callId, callIdWidth),
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
    const item = `${safeText(progress.item.outcome, 32)} ${safeText(progress.item.callId, callIdWidth)}`;
    if (stream.isTTY) {
      stream.write(`\r${bar} ${counts}`);
      if (progress.done === progress.total) stream.write('\n');
    } else {
      stream.write(`replay ${bar} ${counts}  ${item}\n`);
    }
  };
}

export function describeBulkSummary(summary: BulkReplaySummary): string[] {
  const rows = summary.items.map((item) => [
    safeText(item.outcome, 32),
    safeText(item.tool, 64),
    safeText(item.callId, callIdWidth),
    safeText(item.message ?? '', 80),
  ]);
  const table = summary.items.length > 0 ? formatTable(['OUTCOME', 'TOOL', 'CALL ID', 'NOTE'], rows) : [];
  return [...table, '', summary.dryRun ? describeDryRunTotals(summary) : describeReplayTotals(summary)];
}

function describeReplayTotals(summary: BulkReplaySummary): string {
  return `Replayed ${summary.total}: ${summary.succeeded} succeeded, ${summary.failed} failed, ${summary.refused} refused.`;
}

/** A dry run checked each call as a replay would: some would be replayed, some refused. */
function describeDryRunTotals(summary: BulkReplaySummary): string {
  const planned = summary.items.filter((item) => item.outcome === 'planned').length;
  if (planned === summary.total) {
    return `Dry run: ${summary.total} call(s) would be replayed; nothing was started.`;
  }
  const errors = summary.items.filter(
    (item) => item.outcome !== 'planned' && item.outcome !== 'refused',
  ).length;
  return `Dry run: ${planned} of ${summary.total} call(s) would be replayed, ${summary.refused} would be refused${errors > 0 ? `, ${errors} could not be checked` : ''}; nothing was started.`;
}
