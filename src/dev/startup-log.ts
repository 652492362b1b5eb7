/**
 * Reading a failed dev-server start from its log. A Go panic prints its cause first and then one
 * stack per goroutine, so the cause can sit hundreds of lines above the end of the log; the
 * classification looks at everything the start wrote, and the excerpt keeps the cause.
 */

/** Why a start failed, as far as the log tells. */
export type StartupFailureKind = 'port-taken' | 'incomplete-database' | 'other';

export interface StartupLogReading {
  kind: StartupFailureKind;
  /** The panic or fatal lines, if any, then the last lines of the log. */
  excerpt: string;
}

const tailLineCount = 30;
const causeLineLimit = 5;
const causeLineWidth = 600;

/** Lines that state why the process died, as opposed to the goroutine dumps that follow them. */
const causePattern = /^(panic: |fatal error: )|level=(ERROR|FATAL)|"level":"(error|fatal)"/;

export function readStartupLog(logText: string): StartupLogReading {
  const kind: StartupFailureKind = logText.includes('address already in use')
    ? 'port-taken'
    : // The namespaces table is among the first the schema creates, so a file without it was cut
      // off before any workflow could be stored in it.
      logText.includes('no such table: namespaces')
      ? 'incomplete-database'
      : 'other';

  const lines = logText.split('\n');
  const tail = lines.slice(-tailLineCount - 1);
  const tailStart = lines.length - tail.length;
  const causes = lines
    .map((line, index) => ({ line, index }))
    .filter(({ line, index }) => index < tailStart && causePattern.test(line))
    .slice(0, causeLineLimit)
    .map(({ line }) => (line.length > causeLineWidth ? `${line.slice(0, causeLineWidth)}…` : line));

  const tailText = tail.join('\n').trimEnd();
  const parts: string[] = [];
  if (causes.length > 0) {
    parts.push(causes.join('\n'), '…');
  }
  parts.push(tailText || '(the log is empty)');
  return { kind, excerpt: parts.join('\n') };
}
