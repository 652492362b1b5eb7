import { DefaultLogger, type LogLevel, type LogMetadata, Runtime } from '@temporalio/worker';
import { releasedFailureType } from '../contracts/call-record.ts';

let installed = false;

/**
 * Installs the Temporal runtime with a log level (default from TOOLGATE_LOG_LEVEL, else WARN; OFF
 * silences it), so
 * a worker's routine INFO chatter does not drown the operator's output. Safe to call repeatedly;
 * only the first call takes effect, as the runtime can be installed once per process.
 */
export function installRuntimeLogging(level?: LogLevel): void {
  if (installed) return;
  installed = true;
  const requested = (level ?? process.env['TOOLGATE_LOG_LEVEL'] ?? 'WARN').toUpperCase();
  // OFF exists for test runs that provoke hundreds of tool failures on purpose.
  const silent = requested === 'OFF';
  const configured = (silent ? 'ERROR' : requested) as LogLevel;
  const base = new DefaultLogger(configured);
  // A call that releases its key closes its workflow as Failed on purpose (a denial, an expiry);
  // the SDK reports every failed workflow as a warning, which would read as an incident.
  const logger = new DefaultLogger(configured, (entry) => {
    // The error crosses a worker thread by structured clone, which drops its class and `type`. A
    // toolCall workflow fails its run only deliberately (bugs fail the workflow task instead, and
    // are logged separately), so every such failure is a release.
    const meta = entry.meta as LogMetadata | undefined;
    const error = meta?.['error'] as { type?: unknown } | undefined;
    const released = error?.type === releasedFailureType || meta?.['workflowType'] === 'toolCall';
    if (silent || (entry.message === 'Workflow failed' && released)) return;
    base.log(entry.level, entry.message, entry.meta);
  });
  try {
    Runtime.install({ logger });
  } catch {
    // Already installed by the host application: keep its choice.
  }
}
