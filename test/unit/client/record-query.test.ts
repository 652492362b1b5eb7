import { type Client, ServiceError } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { NoWorkerAnsweredError, ToolgateClient } from '../../../src/client/toolgate-client.ts';

/** An error shaped as @grpc/grpc-js raises one, wrapped the way the Temporal client wraps a failed query. */
function failedQuery(code: number, details: string): ServiceError {
  const grpc = Object.assign(new Error(`${code} ${details}`), { code, details, metadata: {} });
  return new ServiceError('Failed to query Workflow', { cause: grpc });
}

/** A Temporal client whose one call is open and whose record query does what `query` does. */
function openCall(query: () => Promise<unknown>) {
  const deadlines: number[] = [];
  const client = {
    workflow: {
      getHandle: () => ({ describe: async () => ({ status: { name: 'RUNNING' } }), query }),
    },
    connection: {
      withDeadline: (deadline: number, fn: () => Promise<unknown>) => {
        deadlines.push(deadline);
        return fn();
      },
    },
  } as unknown as Client;
  return { toolgate: new ToolgateClient({ client, taskQueue: 'unused' }), deadlines };
}

describe('get() on an open call: the record query', () => {
  it('puts the timeout on the RPC as a deadline and returns the live record', async () => {
    const { toolgate, deadlines } = openCall(async () => ({ callId: 'c-1', status: 'awaiting_approval' }));
    const before = Date.now();
    expect(await toolgate.get('c-1', { queryTimeoutMs: 1_500 })).toMatchObject({
      status: 'awaiting_approval',
    });
    expect(deadlines).toHaveLength(1);
    expect(deadlines[0]! - before).toBeGreaterThanOrEqual(1_500);
    expect(deadlines[0]! - before).toBeLessThan(1_500 + 1_000);
  });

  it('says no worker answered when the deadline passes', async () => {
    const { toolgate } = openCall(async () => {
      throw failedQuery(4, 'Deadline exceeded after 1.000s');
    });
    const failure = toolgate.get('c-2', { queryTimeoutMs: 1_000 });
    await expect(failure).rejects.toThrow(
      'No worker answered the record query for c-2 within 1000 ms; is a toolgate worker running on its task queue?',
    );
    // Its own class: the CLI maps it to exit code 6 (server or worker unreachable).
    await expect(failure).rejects.toBeInstanceOf(NoWorkerAnsweredError);
  });

  it('says so too when the server refuses the query early because it saw no worker poll', async () => {
    const { toolgate } = openCall(async () => {
      throw failedQuery(9, 'no poller seen for task queue recently, worker may be down');
    });
    const failure = toolgate.get('c-3', { queryTimeoutMs: 1_000 });
    await expect(failure).rejects.toBeInstanceOf(NoWorkerAnsweredError);
    await expect(failure).rejects.toThrow(
      'No worker answered the record query for c-3 and the server has seen none poll its task queue recently; ' +
        'is a toolgate worker running on its task queue?',
    );
  });

  it('passes any other failure through unchanged', async () => {
    const notReady = failedQuery(9, 'Unable to query workflow due to Workflow Task in failed state.');
    const { toolgate } = openCall(async () => {
      throw notReady;
    });
    await expect(toolgate.get('c-4')).rejects.toBe(notReady);
  });
});
