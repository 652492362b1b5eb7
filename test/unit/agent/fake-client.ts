import type { ToolgateCaller } from '../../../src/agent/run-tool-calls.ts';
import { type CallRequest, refusedStart, type StartedCall } from '../../../src/client/toolgate-client.ts';
import type { CallContext, CallRecord, CallStatus } from '../../../src/contracts/call-record.ts';
import { prepareCall } from '../../../src/contracts/prepare-call.ts';
import type { ReasonCode } from '../../../src/contracts/reason-codes.ts';

/** A call record with sensible defaults, for tests. */
export function createRecord(overrides: Partial<CallRecord> & { status: CallStatus }): CallRecord {
  return {
    callId: 'toolgate/acme/tool/~1',
    runId: 'run-1',
    tool: 'tool',
    tenant: 'acme',
    principal: 'agent-7',
    principalKind: 'agent',
    fingerprint: 'f',
    input: {},
    effect: 'none',
    attempts: 1,
    transitions: [],
    refusedDecisions: [],
    ...overrides,
  };
}

/** How the fake answers one tool: a final record, a wait for approval, or a thrown error. */
export type FakeBehaviour =
  | {
      readonly kind: 'closed';
      readonly status: CallStatus;
      readonly reason?: ReasonCode;
      readonly output?: unknown;
      readonly message?: string;
      readonly delayMs?: number;
    }
  | { readonly kind: 'awaiting_approval'; readonly delayMs?: number }
  | { readonly kind: 'throws'; readonly message: string };

export interface FakeClient extends ToolgateCaller {
  readonly starts: Array<{ request: CallRequest; context: CallContext }>;
  maxConcurrent: number;
}

/** A stand-in for ToolgateClient that answers by tool name and tracks how many calls run at once. */
export function createFakeClient(behaviours: Record<string, FakeBehaviour>): FakeClient {
  const records = new Map<string, CallRecord>();
  const delays = new Map<string, number>();
  let running = 0;
  let counter = 0;
  const fake: FakeClient = {
    starts: [],
    maxConcurrent: 0,
    async start(given, context, options = {}): Promise<StartedCall> {
      // Prepared as the real client prepares it: key, refusals and tier come from prepareCall.
      const prepared = prepareCall(given, context, {
        ...(options.catalog ? { catalog: options.catalog } : {}),
        ...(options.keyFor ? { keyFor: options.keyFor } : {}),
        unique: String(counter + 1),
      });
      if (!prepared.ok) return refusedStart(prepared);
      const request = { ...given, ...(prepared.key !== undefined ? { key: prepared.key } : {}) };
      const tier = prepared.tier ? { tier: prepared.tier } : {};
      fake.starts.push({ request, context });
      const behaviour = behaviours[request.tool];
      if (!behaviour) throw new Error(`no behaviour for ${request.tool}`);
      if (behaviour.kind === 'throws') throw new Error(behaviour.message);
      const callId = `toolgate/acme/${request.tool}/${request.key ? `k/${request.key}` : `~${++counter}`}`;
      const status = behaviour.kind === 'closed' ? behaviour.status : 'awaiting_approval';
      records.set(
        callId,
        createRecord({
          callId,
          tool: request.tool,
          status,
          ...(request.key ? { key: request.key } : {}),
          ...(behaviour.kind === 'closed' && behaviour.reason ? { reason: behaviour.reason } : {}),
          ...(behaviour.kind === 'closed' && behaviour.message ? { message: behaviour.message } : {}),
          ...(behaviour.kind === 'closed' && behaviour.output !== undefined
            ? { output: behaviour.output }
            : {}),
        }),
      );
      delays.set(callId, behaviour.delayMs ?? 0);
      return { callId, runId: 'run-1', disposition: 'started', ...tier };
    },
    async result(callId) {
      running++;
      fake.maxConcurrent = Math.max(fake.maxConcurrent, running);
      try {
        await new Promise((resolve) => setTimeout(resolve, delays.get(callId) ?? 0));
        const record = records.get(callId);
        if (!record) throw new Error(`unknown call ${callId}`);
        return record;
      } finally {
        running--;
      }
    },
    async get(callId) {
      await new Promise((resolve) => setTimeout(resolve, delays.get(callId) ?? 0));
      return records.get(callId);
    },
  };
  return fake;
}
