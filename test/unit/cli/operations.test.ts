import { type Client, ServiceError, WorkflowNotFoundError } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { exampleCatalog } from '../../../examples/contracts.ts';
import { ToolgateOperations, UnknownRunError } from '../../../src/client/operations.ts';
import { ToolgateClient } from '../../../src/client/toolgate-client.ts';
import type { CallRecord } from '../../../src/contracts/call-record.ts';
import { searchAttributeKeys } from '../../../src/contracts/search-attributes.ts';

/** One run of a workflow on the fake server: its type, whether it is open, and its record or result. */
interface FakeRun {
  readonly runId: string;
  readonly type: 'toolCall' | 'toolUndo';
  readonly open: boolean;
  readonly value: unknown;
}

const uuid = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;

/** An error shaped as @grpc/grpc-js raises one, wrapped as the Temporal client wraps it. */
function grpcFailure(code: number, details: string, message: string): ServiceError {
  const grpc = Object.assign(new Error(`${code} ${details}`), { code, details, metadata: {} });
  return new ServiceError(message, { cause: grpc });
}

/**
 * A Temporal client over an in-memory server that answers as the real one does: "not found" for an
 * unknown workflow or run, "invalid argument" for a run ID that is not a UUID. `result()` of an open
 * run fails at once instead of waiting for as long as the run stays open.
 */
function fakeServer(workflows: Record<string, readonly FakeRun[]>) {
  const starts: string[] = [];
  const find = (id: string, runId: string | undefined, message: string): FakeRun => {
    const runs = workflows[id];
    if (runId !== undefined && !/^[0-9a-f-]{36}$/.test(runId)) {
      throw grpcFailure(3, 'Invalid RunId.', message);
    }
    const run = runId === undefined ? runs?.at(-1) : runs?.find((candidate) => candidate.runId === runId);
    if (!run) throw new WorkflowNotFoundError(`workflow not found for ID: ${id}`, id, runId);
    return run;
  };
  const executions = (records: readonly CallRecord[]) =>
    records.map((record) => ({
      workflowId: record.callId,
      runId: record.runId,
      startTime: new Date('2026-12-04T07:00:00.000Z'),
      status: { name: 'COMPLETED' },
      typedSearchAttributes: {
        get: (key: { name: string }) =>
          ({
            [searchAttributeKeys.toolName.name]: record.tool,
            [searchAttributeKeys.callStatus.name]: 'failed',
          })[key.name],
      },
    }));
  let listed: readonly CallRecord[] = [];
  const client = {
    options: { namespace: 'default' },
    workflow: {
      getHandle: (id: string, runId?: string) => ({
        describe: async () => {
          const run = find(id, runId, 'Failed to describe workflow');
          return {
            type: run.type,
            runId: run.runId,
            status: { name: run.open ? 'RUNNING' : 'COMPLETED' },
            memo: {},
          };
        },
        query: async () => find(id, runId, 'Failed to query Workflow').value,
        result: async () => {
          const run = find(id, runId, 'Failed to get Workflow execution history');
          if (run.open) throw new Error(`result() of the open run ${run.runId} would wait until it closes`);
          return run.value;
        },
      }),
      list: () =>
        (async function* () {
          yield* executions(listed);
        })(),
      start: async (type: string, options: { workflowId: string }) => {
        starts.push(`${type} ${options.workflowId}`);
        throw new Error('a dry run must start nothing');
      },
    },
    connection: { withDeadline: (_deadline: number, fn: () => Promise<unknown>) => fn() },
  } as unknown as Client;
  const operations = new ToolgateOperations({
    client: new ToolgateClient({ client, taskQueue: 'unused', catalog: exampleCatalog }),
    catalog: exampleCatalog,
  });
  return {
    operations,
    starts,
    list: (records: readonly CallRecord[]) => {
      listed = records;
    },
  };
}

function callRecord(overrides: Partial<CallRecord> & Pick<CallRecord, 'callId' | 'runId'>): CallRecord {
  return {
    tool: 'read_config',
    tier: 'readonly',
    tenant: 'acme',
    principal: 'agent-1',
    principalKind: 'agent',
    fingerprint: 'f'.repeat(64),
    input: { name: 'region' },
    status: 'failed',
    effect: 'none',
    attempts: 1,
    transitions: [{ status: 'pending', at: '2026-12-04T07:00:00.000Z' }],
    refusedDecisions: [],
    ...overrides,
  };
}

const labelId = 'toolgate/acme/add_label/k/L1';
const labelRecord = callRecord({
  callId: labelId,
  runId: uuid(1),
  tool: 'add_label',
  tier: 'reversible',
  input: { item: 'ticket-1', label: 'vip' },
  status: 'succeeded',
  effect: 'applied',
  output: { item: 'ticket-1', labels: ['vip'] },
});
const undoResult = {
  callId: labelId,
  runId: uuid(1),
  compensation: 'remove_label',
  operator: 'oscar',
  status: 'succeeded',
  at: '2026-12-04T07:01:00.000Z',
  output: null,
  attempts: 1,
};

describe('ToolgateOperations.get with --run', () => {
  const callId = 'toolgate/acme/transfer_funds/k/t-1';
  const closed = callRecord({ callId, runId: uuid(1), status: 'denied', reason: 'APPROVAL_REJECTED' });
  const open = callRecord({ callId, runId: uuid(2), status: 'awaiting_approval' });
  const server = () =>
    fakeServer({
      [callId]: [
        { runId: uuid(1), type: 'toolCall', open: false, value: closed },
        { runId: uuid(2), type: 'toolCall', open: true, value: open },
      ],
    });

  it('reads a run that is still open by query, without waiting for it to close', async () => {
    const { operations } = server();
    expect(await operations.get(callId, { runId: uuid(2) })).toMatchObject({
      runId: uuid(2),
      status: 'awaiting_approval',
    });
    expect(await operations.get(callId, { runId: uuid(1) })).toMatchObject({
      runId: uuid(1),
      status: 'denied',
    });
  });

  it('says that a run unknown for an existing call is unknown, as "not found"', async () => {
    const { operations } = server();
    for (const runId of [uuid(9), 'bogus']) {
      const failure = operations.get(callId, { runId });
      // A NOT_FOUND error of toolgate's family: the CLI maps it to exit 5, the not-found code.
      await expect(failure).rejects.toMatchObject({ code: 'NOT_FOUND', name: 'UnknownRunError' });
      await expect(failure).rejects.toBeInstanceOf(UnknownRunError);
      await expect(failure).rejects.toThrow(
        `The call ${callId} has no run ${runId}: that run ID is unknown for this call.`,
      );
    }
  });

  it('still says there is no call (undefined) when the call itself is unknown', async () => {
    const { operations } = server();
    expect(await operations.get('toolgate/acme/read_config/~nope', { runId: uuid(9) })).toBeUndefined();
    expect(await operations.get('toolgate/acme/read_config/~nope', { runId: 'bogus' })).toBeUndefined();
    expect(await operations.get('toolgate/acme/read_config/~nope')).toBeUndefined();
  });
});

describe('get and undo on the ID of an undo workflow', () => {
  const server = () =>
    fakeServer({
      [labelId]: [{ runId: uuid(1), type: 'toolCall', open: false, value: labelRecord }],
      [`${labelId}/undo`]: [{ runId: uuid(5), type: 'toolUndo', open: false, value: undoResult }],
    });

  it('get refuses it, naming the call the undo belongs to', async () => {
    const { operations } = server();
    const failure = operations.get(`${labelId}/undo`);
    await expect(failure).rejects.toMatchObject({ name: 'NotACallError', belongsTo: labelId });
    await expect(failure).rejects.toThrow(
      `${labelId}/undo is not a call: it is the undo of the call ${labelId}. \`toolgate get ${labelId}\` shows that call and its undo.`,
    );
    // The call itself shows the undo.
    expect((await operations.get(labelId))?.undo).toMatchObject({ status: 'succeeded', operator: 'oscar' });
  });

  it('undo refuses it, naming the call, and starts nothing', async () => {
    const { operations, starts } = server();
    const outcome = await operations.undo(`${labelId}/undo`, { operator: 'oscar' });
    expect(outcome.undone).toBe(false);
    if (!outcome.undone) {
      expect(outcome.refusal).toBe(
        `${labelId}/undo is the undo of the call ${labelId}, not a call, and an undo is not undone in turn. \`toolgate get ${labelId}\` shows that call and its undo.`,
      );
    }
    expect(starts).toEqual([]);
  });

  it('replay refuses it with the same explanation', async () => {
    const { operations } = server();
    const outcome = await operations.replay(`${labelId}/undo`, { operator: 'oscar' });
    expect(outcome).toMatchObject({ replayed: false });
    if (!outcome.replayed) expect(outcome.refusal).toMatch(`it is the undo of the call ${labelId}.`);
  });
});

describe('bulk replay --dry-run', () => {
  it('plans only the calls a replay would start, and reports the others refused with the reason', async () => {
    const failedReadonly = callRecord({ callId: 'toolgate/acme/read_config/~a', runId: uuid(1) });
    const oldFailed = callRecord({ callId: 'toolgate/acme/read_config/~b', runId: uuid(2) });
    const nowSucceeded = { ...oldFailed, runId: uuid(3), status: 'succeeded' as const };
    const transfer = callRecord({
      callId: 'toolgate/acme/write_report/k/r-1',
      runId: uuid(4),
      tool: 'write_report',
      tier: 'irreversible',
      key: 'r-1',
      effect: 'unknown',
    });
    const reopened = callRecord({ callId: 'toolgate/acme/read_config/~c', runId: uuid(5) });
    const { operations, starts, list } = fakeServer({
      [failedReadonly.callId]: [{ runId: uuid(1), type: 'toolCall', open: false, value: failedReadonly }],
      // Listed from its failed run, but its latest run (a replay) succeeded.
      [oldFailed.callId]: [
        { runId: uuid(2), type: 'toolCall', open: false, value: oldFailed },
        { runId: uuid(3), type: 'toolCall', open: false, value: nowSucceeded },
      ],
      [transfer.callId]: [{ runId: uuid(4), type: 'toolCall', open: false, value: transfer }],
      // Listed from its failed run; a replay of it is running now.
      [reopened.callId]: [
        { runId: uuid(5), type: 'toolCall', open: false, value: reopened },
        {
          runId: uuid(6),
          type: 'toolCall',
          open: true,
          value: { ...reopened, runId: uuid(6), status: 'running' },
        },
      ],
    });
    list([failedReadonly, oldFailed, transfer, reopened]);

    const summary = await operations.replayMany({ status: 'failed' }, { operator: 'oscar', dryRun: true });
    expect(summary.dryRun).toBe(true);
    expect(summary.total).toBe(4);
    expect(summary.refused).toBe(3);
    const byId = new Map(summary.items.map((item) => [item.callId, item]));
    expect(byId.get(failedReadonly.callId)).toMatchObject({ outcome: 'planned', replacesRunId: uuid(1) });
    expect(byId.get(oldFailed.callId)).toMatchObject({ outcome: 'refused' });
    expect(byId.get(oldFailed.callId)?.message).toMatch(
      /The call succeeded, so replaying it would run it twice/,
    );
    expect(byId.get(transfer.callId)).toMatchObject({ outcome: 'refused' });
    expect(byId.get(transfer.callId)?.message).toMatch(/it may already have acted.*--force --reason/);
    expect(byId.get(reopened.callId)?.message).toMatch(/The call is still open/);
    expect(starts).toEqual([]);

    // With --force --reason, the irreversible call would be replayed too; the others still not.
    const forced = await operations.replayMany(
      { status: 'failed' },
      { operator: 'oscar', dryRun: true, force: true, reason: 'ledger checked' },
    );
    expect(
      forced.items
        .filter((item) => item.outcome === 'planned')
        .map((item) => item.callId)
        .sort(),
    ).toEqual([failedReadonly.callId, transfer.callId].sort());
    expect(starts).toEqual([]);
  });
});
