/** Shared pieces of the unit tests that run toolgate's activities in a mock activity environment. */
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import type { RunToolRequest } from '../../src/contracts/activity-types.ts';

export const activityAgent = { tenant: 'acme', principal: 'agent-7', principalKind: 'agent' } as const;

/** An operator logger that drops everything. */
export const quietLogger = { info() {}, warn() {}, error() {} };

/** A mock activity context on the given attempt, with the SDK's own log silenced. */
export const activityEnvironment = (attempt = 1) =>
  new MockActivityEnvironment({ attempt }, { logger: new DefaultLogger('ERROR', () => {}) });

/** A readonly read_config execution that asks to be admitted first (the lean path). */
export function readonlyRunRequest(callId: string, overrides: Partial<RunToolRequest> = {}): RunToolRequest {
  return {
    callId,
    tool: 'read_config',
    input: { name: 'region' },
    tier: 'readonly',
    timeoutMs: 2_000,
    context: activityAgent,
    admit: true,
    ...overrides,
  };
}
