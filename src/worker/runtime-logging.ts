import { DefaultLogger, type LogLevel, Runtime } from '@temporalio/worker';

let installed = false;

/**
 * Installs the Temporal runtime with a log level (default from TOOLGATE_LOG_LEVEL, else WARN), so
 * a worker's routine INFO chatter does not drown the operator's output. Safe to call repeatedly;
 * only the first call takes effect, as the runtime can be installed once per process.
 */
export function installRuntimeLogging(level?: LogLevel): void {
  if (installed) return;
  installed = true;
  const configured = (level ?? process.env['TOOLGATE_LOG_LEVEL'] ?? 'WARN').toUpperCase() as LogLevel;
  try {
    Runtime.install({ logger: new DefaultLogger(configured) });
  } catch {
    // Already installed by the host application: keep its choice.
  }
}
