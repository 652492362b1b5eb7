import { DefaultLogger, type LogEntry, type LogLevel, type LogMetadata, Runtime } from '@temporalio/worker';
import { releasedFailureType } from '../contracts/call-record.ts';

let installed = false;

/** How worker log lines are written: one JSON object per line, or the SDK's text. */
export type LogFormat = 'json' | 'text';

/** Where a worker serves Prometheus metrics: the runtime's own exporter, with toolgate's series. */
export interface MetricsEndpoint {
  readonly host: string;
  readonly port: number;
}

/**
 * Histogram buckets, in seconds, for toolgate's series (the exporter's default buckets are for
 * milliseconds): tool runs from a few milliseconds to a minute, approval waits up to a day.
 */
const secondsBuckets = {
  toolgate_tool_duration_seconds: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
  toolgate_approval_wait_seconds: [1, 5, 15, 30, 60, 300, 900, 1800, 3600, 14_400, 86_400],
};

/**
 * Installs the Temporal runtime with a log level (default from TOOLGATE_LOG_LEVEL, else WARN; OFF
 * silences it) and a format (default from TOOLGATE_LOG_FORMAT, else `json`: one JSON object per
 * line on stderr, see `jsonLogLine`), so a worker's routine INFO chatter does not drown the
 * operator's output and what it does log can be read by a log pipeline. With `metrics`, the
 * runtime also serves Prometheus at `http://host:port/metrics`: Temporal's own series and
 * toolgate's (`toolgate_calls_total` and the others, docs/operators.md "Metrics"). A port in use
 * does not stop the worker: it runs without metrics and the answer says why.
 *
 * Safe to call repeatedly; only the first call takes effect, as the runtime can be installed once
 * per process.
 */
export function installRuntimeLogging(
  options: {
    readonly level?: LogLevel;
    readonly format?: LogFormat;
    readonly metrics?: MetricsEndpoint;
  } = {},
): { readonly metricsUrl?: string; readonly metricsProblem?: string } {
  const { level, format, metrics } = options;
  if (installed) return {};
  installed = true;
  const requested = (level ?? process.env['TOOLGATE_LOG_LEVEL'] ?? 'WARN').toUpperCase();
  const chosenFormat =
    format ?? (process.env['TOOLGATE_LOG_FORMAT']?.toLowerCase() === 'text' ? 'text' : 'json');
  // OFF exists for test runs that provoke hundreds of tool failures on purpose.
  const silent = requested === 'OFF';
  const configured = (silent ? 'ERROR' : requested) as LogLevel;
  const text = new DefaultLogger(configured);
  const write =
    chosenFormat === 'json'
      ? (entry: LogEntry) => process.stderr.write(jsonLogLine(entry))
      : (entry: LogEntry) => text.log(entry.level, entry.message, withoutWithheld(entry.meta));
  const logger = new DefaultLogger(configured, (entry) => {
    if (silent || isDeliberateRelease(entry)) return;
    write(entry);
  });
  if (metrics) {
    const bindAddress = `${metrics.host}:${metrics.port}`;
    try {
      Runtime.install({
        logger,
        telemetryOptions: {
          metrics: { prometheus: { bindAddress, histogramBucketOverrides: secondsBuckets } },
        },
      });
      return { metricsUrl: `http://${bindAddress}/metrics` };
    } catch (error) {
      const problem = `Metrics are off: could not serve them on ${bindAddress} (${error instanceof Error ? error.message : String(error)}). Choose another port with --metrics-port, or 0 for none.`;
      installQuietly(logger);
      return { metricsProblem: problem };
    }
  }
  installQuietly(logger);
  return {};
}

function installQuietly(logger: DefaultLogger): void {
  try {
    // Native core logs are not forwarded here: forwarding runs a flush timer that keeps a process
    // alive after a command has failed and finished. The core prints its own (rare) warnings.
    Runtime.install({ logger });
  } catch {
    // Already installed by the host application: keep its choice.
  }
}

/**
 * A call that releases its key closes its workflow as Failed on purpose (a denial, an expiry); the
 * SDK reports every failed workflow as a warning, which would read as an incident.
 */
function isDeliberateRelease(entry: LogEntry): boolean {
  if (entry.message !== 'Workflow failed') return false;
  // The error crosses a worker thread by structured clone, which drops its class and `type`. A
  // toolCall workflow fails its run only deliberately (bugs fail the workflow task instead, and are
  // logged separately), so every such failure is a release.
  const meta = entry.meta as LogMetadata | undefined;
  const error = meta?.['error'] as { type?: unknown } | undefined;
  return error?.type === releasedFailureType || meta?.['workflowType'] === 'toolCall';
}

/** Attributes never written: a task token is a credential for the task, arguments are the caller's. */
const withheld = new Set(['taskToken', 'task_token', 'input', 'args', 'arguments', 'output', 'result']);

function withoutWithheld(meta: LogMetadata | undefined): LogMetadata | undefined {
  if (!meta) return meta;
  return Object.fromEntries(Object.entries(meta).filter(([key]) => !withheld.has(key)));
}

/**
 * One log entry as one JSON line: `time`, `level` (lower case), `message`, then `callId`, `tool` and
 * `tenant` where known (the ID of a toolCall workflow, or of its activity's workflow, is the call ID), then the other attributes,
 * minus task tokens and argument values. An error becomes `{ type, message }`, with its stack only
 * at level error, where it points at a bug rather than at an expected failure.
 */
export function jsonLogLine(entry: LogEntry): string {
  const meta: Record<string, unknown> = { ...(entry.meta ?? {}) };
  const line: Record<string, unknown> = {
    time: new Date(Number(entry.timestampNanos / 1_000_000n)).toISOString(),
    level: entry.level.toLowerCase(),
    message: entry.message,
  };
  const callId = meta['callId'] ?? (meta['workflowType'] === 'toolCall' ? meta['workflowId'] : undefined);
  if (callId !== undefined) line['callId'] = callId;
  for (const key of ['tool', 'tenant']) if (meta[key] !== undefined) line[key] = meta[key];
  for (const [key, value] of Object.entries(meta)) {
    if (withheld.has(key) || key === 'callId' || key === 'tool' || key === 'tenant') continue;
    // An attribute named like a field of the line (`message`, `time`, `level`) keeps its value
    // under another name rather than being lost.
    const name = key in line ? `${key}Attribute` : key;
    line[name] = key === 'error' ? describeError(value, entry.level === 'ERROR') : value;
  }
  return `${JSON.stringify(line, (_key, value: unknown) => (typeof value === 'bigint' ? value.toString() : value))}\n`;
}

function describeError(error: unknown, withStack: boolean): unknown {
  if (typeof error !== 'object' || error === null) return String(error);
  const { name, message, stack, type } = error as {
    name?: unknown;
    message?: unknown;
    stack?: unknown;
    type?: unknown;
  };
  return {
    type: type ?? name,
    message,
    ...(withStack && typeof stack === 'string' ? { stack } : {}),
  };
}
