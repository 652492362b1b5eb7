import { ServiceError } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { queryFailureKind } from '../../../src/client/toolgate-client.ts';

/** A failed query as the TypeScript client throws it: a ServiceError around the gRPC status. */
function failedQuery(code: number, details: string): Error {
  const status = Object.assign(new Error(`${code} ${details}`), { code, details, metadata: {} });
  return new ServiceError('Failed to query Workflow', { cause: status });
}

describe('why a record query failed', () => {
  const deadline = 10_000;

  it('reads DEADLINE_EXCEEDED as the deadline, whenever it arrives', () => {
    expect(queryFailureKind(failedQuery(4, 'Deadline exceeded after 1.001s'), deadline, deadline)).toBe(
      'deadline',
    );
    expect(queryFailureKind(failedQuery(4, 'Deadline exceeded'), deadline, deadline - 500)).toBe('deadline');
  });

  it('reads CANCELLED as the deadline once the deadline has passed (the server reset the stream first)', () => {
    expect(queryFailureKind(failedQuery(1, 'Call cancelled'), deadline, deadline + 3)).toBe('deadline');
    expect(queryFailureKind(failedQuery(1, 'Call cancelled'), deadline, deadline - 10)).toBe('deadline');
  });

  it('leaves a CANCELLED well before the deadline to the caller: somebody else cancelled it', () => {
    expect(queryFailureKind(failedQuery(1, 'Call cancelled'), deadline, deadline - 500)).toBeUndefined();
  });

  it("reads the server's refusal for want of a poller", () => {
    expect(
      queryFailureKind(failedQuery(9, 'no poller seen for task queue recently'), deadline, deadline - 900),
    ).toBe('no-poller');
    expect(queryFailureKind(failedQuery(9, 'something else'), deadline, deadline)).toBeUndefined();
  });

  it('leaves every other failure to the caller', () => {
    expect(queryFailureKind(failedQuery(14, 'Connection refused'), deadline, deadline + 1)).toBeUndefined();
    expect(queryFailureKind(new Error('not a gRPC error'), deadline, deadline + 1)).toBeUndefined();
  });
});
