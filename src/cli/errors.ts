import { NamespaceNotFoundError, WorkflowNotFoundError } from '@temporalio/client';
import { NotACallError, UnknownRunError } from '../client/operations.ts';
import { NoWorkerAnsweredError } from '../client/toolgate-client.ts';
import { EndpointUnavailableError } from './endpoint.ts';
import { ExitCode } from './output.ts';

/** A data directory another live process holds (src/dev/database-claim.ts); matched by name. */
const databaseInUseErrorName = 'DatabaseInUseError';

/**
 * The exit code and the message for an error that ends a command, by the documented mapping:
 * 6 the cluster, its namespace or its workers cannot be reached, 5 no such call, 1 anything else
 * (usage mistakes, a data directory in use, internal errors). Every command's error, with `--json`
 * or without, goes through here, so one failure always gives the same code.
 */
export function describeCliError(error: unknown): { exitCode: ExitCode; message: string } {
  const message = error instanceof Error ? error.message : String(error);
  for (let current = error; current instanceof Error; current = current.cause) {
    if (current instanceof EndpointUnavailableError || current instanceof NoWorkerAnsweredError) {
      return { exitCode: ExitCode.unavailable, message };
    }
    if (current instanceof NamespaceNotFoundError || current.name === 'NamespaceNotFoundError') {
      const namespace = (current as { namespace?: unknown }).namespace;
      return {
        exitCode: ExitCode.unavailable,
        message: `The Temporal namespace ${JSON.stringify(String(namespace ?? '?'))} does not exist on this cluster. Check --namespace (or TEMPORAL_NAMESPACE, or the endpoint file), or create the namespace.`,
      };
    }
    // These two carry a message that says more than "not found": which call an undo belongs to,
    // or that the call exists but not that run.
    if (current instanceof NotACallError || current instanceof UnknownRunError) {
      return { exitCode: ExitCode.notFound, message: current.message };
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
    if (current.name === databaseInUseErrorName) return { exitCode: ExitCode.error, message };
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
    (/failed to connect|connection refused|ECONNREFUSED|UNAVAILABLE/i.test(message) ||
      error.name === 'TransportError' ||
      code === 14)
  ) {
    return new EndpointUnavailableError(
      `Cannot reach Temporal at ${address}: ${message}. Is the cluster running, and is the address right?`,
      { cause: error },
    );
  }
  return error;
}
