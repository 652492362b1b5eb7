import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exampleCatalog } from '../../examples/contracts.ts';
import { ToolgateClient } from '../../src/client/toolgate-client.ts';
import { callFingerprint } from '../../src/contracts/fingerprint.ts';
import { currentGatesProtocol, leanGatesProtocol } from '../../src/contracts/prepare-call.ts';
import { searchAttributeKeys } from '../../src/contracts/search-attributes.ts';
import type { ToolCallRequest } from '../../workflows/tool-call.ts';
import { agent, createHarness, type Harness } from '../support/harness.ts';
import { eventTypes as historyEventTypes, scheduledActivityTypes } from '../support/history.ts';
import { waitFor } from '../support/wait.ts';

/**
 * Gate protocol 2 (the lean path) admits a readonly call inside its execution activity; protocol 3
 * also checks its arguments there (test/integration/recorded-validation.test.ts). The outcomes must
 * be those of protocol 1, and a worker keeps serving the older protocols for calls started before.
 */
describe('gate protocols', () => {
  let harness: Harness;
  // read_config is enabled for tenant acme only; beta may not use it.
  const beta = { ...agent, tenant: 'beta' };
  beforeAll(async () => {
    harness = await createHarness({
      policy: { allow: ['transfer_funds'], tenants: { acme: ['read_config'] } },
    });
  });
  afterAll(async () => harness?.close());

  const executions = async (callId: string) =>
    (await harness.readLines(harness.tools.paths.executionsFile)).filter((line) => line['callId'] === callId);

  const eventTypes = (callId: string) => historyEventTypes(harness.temporal, callId);

  /** Starts read_config as a client of the given gate protocol would (undefined: protocol 1). */
  const startDirectly = async (
    options: {
      input?: Record<string, unknown>;
      context?: typeof agent;
      protocol?: number;
      tierIndexedAs?: string;
    } = {},
  ) => {
    const input = options.input ?? { name: 'region' };
    const context = options.context ?? agent;
    const callId = `toolgate/${context.tenant}/read_config/~${randomUUID()}`;
    const request: ToolCallRequest = {
      tool: 'read_config',
      input,
      context,
      fingerprint: callFingerprint('read_config', input),
      ...(options.protocol !== undefined ? { protocol: options.protocol } : {}),
    };
    await harness.temporal.workflow.start('toolCall', {
      workflowId: callId,
      taskQueue: harness.taskQueue,
      args: [request],
      ...(options.tierIndexedAs
        ? { typedSearchAttributes: [{ key: searchAttributeKeys.toolTier, value: options.tierIndexedAs }] }
        : {}),
    });
    return callId;
  };

  it('runs an allowed readonly call with no admission marker and one search-attribute write', async () => {
    const record = await harness.client.call({ tool: 'read_config', input: { name: 'region' } }, agent);
    expect(record).toMatchObject({ status: 'succeeded', effect: 'none', tier: 'readonly', attempts: 1 });
    expect(record.transitions.map((transition) => transition.status)).toEqual([
      'pending',
      'running',
      'succeeded',
    ]);
    const events = await eventTypes(record.callId);
    expect(events).not.toContain('markerRecordedEventAttributes');
    expect(events.filter((event) => event === 'upsertWorkflowSearchAttributesEventAttributes')).toHaveLength(
      1,
    );
    // The tier was indexed at start by the client; the final status by the workflow.
    const description = await waitFor(
      async () => {
        const described = await harness.temporal.workflow.getHandle(record.callId).describe();
        return described.typedSearchAttributes.get(searchAttributeKeys.callStatus) === 'succeeded'
          ? described
          : undefined;
      },
      { what: 'CallStatus=succeeded in visibility' },
    );
    expect(description.typedSearchAttributes.get(searchAttributeKeys.toolTier)).toBe('readonly');
  });

  it('denies a readonly tool the tenant may not use, before the tool starts: pending to denied', async () => {
    const record = await harness.client.call({ tool: 'read_config', input: { name: 'region' } }, beta);
    // Nothing ran: no attempt is counted, as when the workflow itself refuses.
    expect(record).toMatchObject({ status: 'denied', reason: 'NOT_ALLOWED', effect: 'none', attempts: 0 });
    expect(record.message).toMatch(/not enabled for you/);
    expect(record.transitions.map((transition) => transition.status)).toEqual(['pending', 'denied']);
    expect(await executions(record.callId)).toHaveLength(0);
  });

  it('keeps the gate order: the allowlist answers before validation, also on the lean path', async () => {
    const notAllowed = await harness.client.call({ tool: 'read_config', input: { name: 7 } }, beta);
    expect(notAllowed).toMatchObject({ status: 'denied', reason: 'NOT_ALLOWED', effect: 'none' });
    const invalid = await harness.client.call({ tool: 'read_config', input: { name: 7 } }, agent);
    expect(invalid).toMatchObject({ status: 'denied', reason: 'INVALID_INPUT', effect: 'none' });
    expect(invalid.message).toMatch(/name/);
  });

  it('corrects a wrong tier indexed at start: the index never trusts the caller', async () => {
    const callId = await startDirectly({ protocol: currentGatesProtocol, tierIndexedAs: 'approval' });
    expect(await harness.client.result(callId)).toMatchObject({ status: 'succeeded', tier: 'readonly' });
    const tier = await waitFor(
      async () => {
        const value = (
          await harness.temporal.workflow.getHandle(callId).describe()
        ).typedSearchAttributes.get(searchAttributeKeys.toolTier);
        return value === 'readonly' ? value : undefined;
      },
      { what: 'ToolTier corrected to readonly' },
    );
    expect(tier).toBe('readonly');
  });

  it('still serves protocol 1: a request without a protocol is admitted by the local activity', async () => {
    const run = async (context: typeof agent) => harness.client.result(await startDirectly({ context }));
    const allowed = await run(agent);
    expect(allowed).toMatchObject({ status: 'succeeded', effect: 'none' });
    const events = await eventTypes(allowed.callId);
    expect(events).toContain('markerRecordedEventAttributes');
    expect(events.filter((event) => event === 'upsertWorkflowSearchAttributesEventAttributes')).toHaveLength(
      3,
    );
    const denied = await run(beta);
    expect(denied).toMatchObject({ status: 'denied', reason: 'NOT_ALLOWED', effect: 'none' });
    expect(denied.transitions.map((transition) => transition.status)).toEqual(['pending', 'denied']);
    expect(await executions(denied.callId)).toHaveLength(0);
  });

  it('still serves protocol 2: the workflow validates, and runTool runs what it validated', async () => {
    const run = async (input: Record<string, unknown>) => {
      const callId = await startDirectly({ input, protocol: leanGatesProtocol });
      const record = await harness.client.result(callId);
      const scheduled = await scheduledActivityTypes(harness.temporal, callId);
      return { record, scheduled, events: await eventTypes(callId) };
    };
    const allowed = await run({ name: 'region' });
    expect(allowed.record).toMatchObject({
      status: 'succeeded',
      effect: 'none',
      output: { value: 'eu-west' },
    });
    expect(allowed.scheduled).toEqual(['runTool']);
    // Invalid arguments: the workflow's own verdict, after the admission local activity.
    const invalid = await run({ name: 7 });
    expect(invalid.record).toMatchObject({ status: 'denied', reason: 'INVALID_INPUT', effect: 'none' });
    expect(invalid.scheduled).toEqual([]);
    expect(invalid.events).toContain('markerRecordedEventAttributes');
  });

  it('starts protocol-2 calls from a client pinned to it, for a rollout with older workers, and refuses other pins', async () => {
    const pinned = new ToolgateClient({
      client: harness.temporal,
      taskQueue: harness.taskQueue,
      catalog: exampleCatalog,
      gateProtocol: 2,
    });
    const record = await pinned.call({ tool: 'read_config', input: { name: 'region' } }, agent);
    expect(record).toMatchObject({ status: 'succeeded', effect: 'none' });
    expect(await scheduledActivityTypes(harness.temporal, record.callId)).toEqual(['runTool']);
    for (const gateProtocol of [1, 4, '3']) {
      expect(
        () =>
          new ToolgateClient({
            client: harness.temporal,
            taskQueue: harness.taskQueue,
            gateProtocol: gateProtocol as never,
          }),
      ).toThrow(/gateProtocol must be one of 2, 3 .*Pin 2 only while workers older than gate protocol 3/);
    }
  });
});
