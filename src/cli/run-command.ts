import type { CallRecord } from '../contracts/call-record.ts';
import type { CliSession, ConnectionFlags } from './endpoint.ts';
import type { ConfigFlags } from './options.ts';
import { ExitCode, printJson } from './output.ts';

/**
 * Prints a command's JSON document. A non-zero exit always carries `ok: false`, the `exitCode` and a
 * human `error`, whatever else the document holds, so a script can branch on one shape; the
 * document's own fields stay as they were.
 */
export function printJsonOutcome(value: object, exitCode: ExitCode, error: () => string): void {
  if (exitCode === ExitCode.ok) {
    printJson(value);
    return;
  }
  const head = { ok: false, exitCode, error: error() };
  // The head's keys come first; its values win over any the document has under the same names.
  printJson(Object.assign({}, head, value, head));
}

/** What a call's record says went wrong, for the `error` of a non-zero exit. */
export function recordError(record: Pick<CallRecord, 'status' | 'reason' | 'message'>): string {
  return `The call ended ${record.status}${record.reason ? ` (${record.reason})` : ''}${record.message ? `: ${record.message}` : ''}`;
}

/**
 * How a command that waits for a call behaves when no worker serves it: it gives up with exit 6
 * (the call stays open) instead of hanging in silence.
 */
export const cliWait = { noWorkerAfterMs: 15_000 } as const;

export interface CommonFlags extends ConnectionFlags, ConfigFlags {
  readonly json?: boolean;
}

/**
 * Runs one client command: loads the config, connects, runs, closes, and maps failures to exit
 * codes. With `--json` an error is a JSON document too, so scripts never parse prose. The modules
 * that connect are loaded here, not when the program starts, so `--help`, `--version` and usage
 * errors answer without them.
 */
export async function runWithSession(
  flags: CommonFlags,
  options: {
    signer?: boolean;
    /** Checks the flags before anything connects, signs or is sent; throws a usage error. */
    check?: () => Promise<void> | void;
  },
  body: (session: CliSession) => Promise<ExitCode>,
): Promise<void> {
  let session: CliSession | undefined;
  try {
    await options.check?.();
    const [{ loadCommandConfig }, { openSession }] = await Promise.all([
      import('./command-config.ts'),
      import('./endpoint.ts'),
    ]);
    const config = await loadCommandConfig(flags);
    session = await openSession(flags, { config, ...(options.signer ? { signer: true } : {}) });
    process.exitCode = await body(session);
  } catch (error) {
    const { describeCliError } = await import('./errors.ts');
    const { exitCode, message } = describeCliError(error);
    if (flags.json) printJson({ ok: false, exitCode, error: message });
    process.stderr.write(`toolgate: ${message}\n`);
    process.exitCode = exitCode;
  } finally {
    await session?.close().catch(() => undefined);
  }
}
