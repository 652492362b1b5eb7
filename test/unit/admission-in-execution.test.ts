import { ApplicationFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { createActivities } from '../../activities/create-activities.ts';
import { implementTool } from '../../activities/tool-implementation.ts';
import { readConfig } from '../../examples/contracts.ts';
import { ToolFailureType } from '../../src/contracts/activity-types.ts';
import {
  activityEnvironment as environment,
  quietLogger as quiet,
  readonlyRunRequest as request,
} from '../support/activity-requests.ts';
import { createMemoryQuotaGate } from '../support/memory-gate.ts';

/**
 * Gate protocol 2: a readonly call is admitted by the activity that runs it (`admit: true`). The
 * activity must refuse exactly as the admitCall local activity would, before the tool starts.
 */
function countingReadConfig(holdMs = 0) {
  const runs = { started: 0 };
  const tool = implementTool(readConfig, async () => {
    runs.started++;
    await new Promise((resolve) => setTimeout(resolve, holdMs));
    return { value: 'eu-west-1' };
  });
  return { tool, runs };
}

const activitiesFor = (
  tool: ReturnType<typeof implementTool>,
  allow: string[],
  admissionGates: Parameters<typeof createActivities>[0]['admissionGates'] = [],
) =>
  createActivities({
    tools: [tool],
    policy: { allow },
    approvalPublicKeys: [],
    admissionGates,
    logger: quiet,
  });

describe('admission inside the execution activity', () => {
  it('refuses a tool the policy does not list, non-retryable, before the tool starts', async () => {
    const { tool, runs } = countingReadConfig();
    const activities = activitiesFor(tool, []);
    const error = await environment()
      .run(activities.runTool, request('call-1'))
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ApplicationFailure);
    const failure = error as ApplicationFailure;
    expect(failure.type).toBe(ToolFailureType.denied);
    expect(failure.nonRetryable).toBe(true);
    expect(failure.details?.[0]).toMatchObject({
      reason: 'NOT_ALLOWED',
      effect: 'none',
      admission: true,
      attempt: 1,
    });
    expect(failure.message).toMatch(/not enabled for you/);
    expect(runs.started).toBe(0);
  });

  it('takes a concurrency slot for the attempt, refuses past the limit with a retry-after, and hands it back', async () => {
    const { tool, runs } = countingReadConfig(300);
    const gate = createMemoryQuotaGate({ perTool: { read_config: { maxConcurrent: 1 } } });
    const activities = activitiesFor(tool, ['read_config'], [gate]);
    const first = environment().run(activities.runTool, request('call-a'));
    // The first attempt is running and holds the only slot.
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(gate.running('tool:read_config')).toBe(1);
    const refused = await environment()
      .run(activities.runTool, request('call-b'))
      .catch((caught: unknown) => caught as ApplicationFailure);
    expect(refused).toBeInstanceOf(ApplicationFailure);
    expect((refused as ApplicationFailure).details?.[0]).toMatchObject({
      reason: 'RATE_LIMITED',
      admission: true,
      effect: 'none',
      retryAfterSeconds: 1,
    });
    await expect(first).resolves.toMatchObject({ output: { value: 'eu-west-1' }, attempt: 1 });
    expect(gate.running('tool:read_config')).toBe(0);
    // The slot is free again: the next call runs.
    await expect(environment().run(activities.runTool, request('call-c'))).resolves.toMatchObject({
      attempt: 1,
    });
    expect(runs.started).toBe(2);
  });

  it('hands the slot back when the tool fails', async () => {
    const failing = implementTool(readConfig, async () => {
      throw new Error('backend down');
    });
    const gate = createMemoryQuotaGate({ perTool: { read_config: { maxConcurrent: 1 } } });
    const activities = activitiesFor(failing, ['read_config'], [gate]);
    const error = await environment()
      .run(activities.runTool, request('call-f'))
      .catch((caught: unknown) => caught as ApplicationFailure);
    expect((error as ApplicationFailure).type).toBe(ToolFailureType.failed);
    expect(gate.running('tool:read_config')).toBe(0);
  });

  it('checks the allowlist again on a retry, but not the load gates: admission belongs to the call', async () => {
    const { tool, runs } = countingReadConfig();
    // The only slot is taken: a first attempt would be refused, a retry of an admitted call is not.
    const gate = createMemoryQuotaGate({ perTool: { read_config: { maxConcurrent: 1 } } });
    gate.take('tool:read_config', 'other');
    const activities = activitiesFor(tool, ['read_config'], [gate]);
    await expect(environment(2).run(activities.runTool, request('call-r'))).resolves.toMatchObject({
      attempt: 2,
    });
    expect(runs.started).toBe(1);
    // Deny by default holds on every attempt, even if the first one died before its check ran.
    const unlisted = activitiesFor(tool, []);
    const refused = await environment(2)
      .run(unlisted.runTool, request('call-s'))
      .catch((caught: unknown) => caught as ApplicationFailure);
    expect((refused as ApplicationFailure).details?.[0]).toMatchObject({
      reason: 'NOT_ALLOWED',
      admission: true,
      attempt: 2,
    });
    expect(runs.started).toBe(1);
  });

  it('leaves admission to the workflow when the request does not ask for it', async () => {
    const { tool, runs } = countingReadConfig();
    const activities = activitiesFor(tool, []);
    await environment().run(activities.runTool, request('call-w', { admit: false }));
    expect(runs.started).toBe(1);
  });
});
