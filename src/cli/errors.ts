import { NamespaceNotFoundError, WorkflowNotFoundError } from '@temporalio/client';
import { EndpointUnavailableError, ToolgateError, type ToolgateErrorCode } from '../contracts/errors.ts';
import { ExitCode } from './output.ts';

/** The exit code of each toolgate error code that has its own; every other one exits 1. */
const exitCodes: Partial<Record<ToolgateErrorCode, ExitCode>> = {
  UNAVAILABLE: ExitCode.unavailable,
  NOT_FOUND: ExitCode.notFound,
};

/**
 * The exit code and the message for an error that ends a command, by the documented mapping:
 * 6 the cluster, its namespace or its workers cannot be reached, 5 no such call, 1 anything else
 * (usage mistakes, a config or a data directory in use, internal errors). Every command's error,
 * with `--json` or without, goes through here, so one failure always gives the same code. The
 * first error along the cause chain that has its own exit code decides.
 */
export function describeCliError(error: unknown): { exitCode: ExitCode; message: string } {
  const message = error instanceof Error ? error.message : String(error);
  for (let current = error; current instanceof Error; current = current.cause) {
    const exitCode = current instanceof ToolgateError ? exitCodes[current.code] : undefined;
    // A "not found" says which call or run, and what to read instead: its own message is the one.
    if (exitCode === ExitCode.notFound) return { exitCode, message: current.message };
    if (exitCode !== undefined) return { exitCode, message };
    if (current instanceof NamespaceNotFoundError) {
      return {
        exitCode: ExitCode.unavailable,
        message: `The Temporal namespace ${JSON.stringify(current.namespace)} does not exist on this cluster. Check --namespace (or TEMPORAL_NAMESPACE, the config's connection.namespace, or the endpoint file), or create the namespace.`,
      };
    }
    if (current instanceof WorkflowNotFoundError) {
      const { workflowId, runId } = current;
      return {
        exitCode: ExitCode.notFound,
        message:
          runId === undefined
            ? `There is no call ${workflowId}.`
            : `There is no run ${runId} of the call ${workflowId}.`,
      };
    }
  }
  return { exitCode: ExitCode.error, message };
}

/**
 * A connection to a cluster that does not answer fails inside gRPC with a bare message ("Failed to
 * connect before the deadline"); it is an unreachable cluster (exit 6), said with its address.
 */
export function unreachable(error: unknown, address: string): unknown {
  const message = error instanceof Error ? error.message : String(error);
  const code = (error as { code?: unknown } | null)?.code;
  if (
    error instanceof Error &&
    (/failed to connect|connection refused|ECONNREFUSED|UNAVAILABLE/i.test(message) || code === 14)
  ) {
    return new EndpointUnavailableError(
      `Cannot reach Temporal at ${address}: ${message}. Is the cluster running, and is the address right?`,
      { cause: error },
    );
  }
  return error;
}
