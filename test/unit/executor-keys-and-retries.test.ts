import { ApplicationFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { createActivities } from '../../activities/create-activities.ts';
import { implementCompensation, implementTool, ToolDenied } from '../../activities/tool-implementation.ts';
import { addLabel } from '../../examples/contracts.ts';
import { ToolFailureType } from '../../src/contracts/activity-types.ts';
import { activityAgent, activityEnvironment, quietLogger } from '../support/activity-requests.ts';

const callId = 'toolgate/acme/add_label/~0f3c9a';
const request = (overrides: Record<string, unknown> = {}) => ({
  callId,
  tool: 'add_label',
  input: { item: 'order-1', label: 'vip' },
  tier: 'reversible' as const,
  timeoutMs: 2_000,
  context: activityAgent,
  ...overrides,
});

/** A reversible tool that records what each attempt saw, and behaves as `onAttempt` says. */
function reversible(onAttempt: (attempt: number) => unknown) {
  const seen: { attempt: number; key: string }[] = [];
  const activities = createActivities({
    tools: [
      implementTool(addLabel, async ({ attempt, key }) => {
        seen.push({ attempt, key });
        return onAttempt(attempt);
      }),
    ],
    compensations: [
      implementCompensation(addLabel, async ({ attempt, key }) => {
        seen.push({ attempt, key });
        return { removed: true };
      }),
    ],
    policy: { allow: ['add_label'] },
    approvalPublicKeys: [],
    logger: quietLogger,
  });
  return { activities, seen };
}

async function failureOf(run: Promise<unknown>): Promise<ApplicationFailure> {
  const error = await run.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(ApplicationFailure);
  return error as ApplicationFailure;
}

describe('the key a tool sees', () => {
  it('is the call ID on every attempt of a call without a key, and the key when there is one', async () => {
    const { activities, seen } = reversible(() => ({ added: true }));
    for (const attempt of [1, 2, 3]) await activityEnvironment(attempt).run(activities.runTool, request());
    await activityEnvironment(1).run(activities.runTool, request({ key: 'label-order-1-vip' }));
    expect(seen.map((entry) => entry.key)).toEqual([callId, callId, callId, 'label-order-1-vip']);
  });

  it("is the original's key or call ID with :undo for its compensation", async () => {
    const { activities, seen } = reversible(() => ({ added: true }));
    const undo = { tool: 'remove_label', compensationOf: { output: { added: true } } };
    await activityEnvironment(1).run(activities.runTool, request(undo));
    await activityEnvironment(1).run(activities.runTool, request({ ...undo, key: 'label-order-1-vip' }));
    expect(seen.map((entry) => entry.key)).toEqual([`${callId}:undo`, 'label-order-1-vip:undo']);
  });
});

describe('a refusal from the tool itself', () => {
  it('is a denial, effect none, on the first attempt', async () => {
    const { activities } = reversible(() => {
      throw new ToolDenied('That label is reserved.');
    });
    const failure = await failureOf(activityEnvironment(1).run(activities.runTool, request()));
    expect(failure.type).toBe(ToolFailureType.denied);
    expect(failure.details?.[0]).toMatchObject({ effect: 'none', attempt: 1 });
  });

  it('on a later attempt of a reversible call is a failure with an unknown effect, never a denial', async () => {
    // Attempt 1 may have acted (say it timed out after the downstream applied it); attempt 2 is refused.
    const { activities } = reversible(() => {
      throw new ToolDenied('That label is reserved.');
    });
    const failure = await failureOf(activityEnvironment(2).run(activities.runTool, request()));
    expect(failure.type).toBe(ToolFailureType.failed);
    expect(failure.nonRetryable).toBe(true);
    expect(failure.details?.[0]).toMatchObject({ effect: 'unknown', attempt: 2 });
    expect(failure.message).toMatch(/earlier attempt .* may have acted/);
  });

  it('on a later attempt of a readonly call is still a denial: nothing could have acted', async () => {
    const { activities } = reversible(() => {
      throw new ToolDenied('That label is reserved.');
    });
    const failure = await failureOf(
      activityEnvironment(2).run(activities.runTool, request({ tier: 'readonly' })),
    );
    expect(failure.type).toBe(ToolFailureType.denied);
    expect(failure.details?.[0]).toMatchObject({ effect: 'none', attempt: 2 });
  });
});
