import type { Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import { createActivities } from '../../activities/create-activities.ts';
import { implementTool } from '../../activities/tool-implementation.ts';
import { readConfig } from '../../examples/contracts.ts';
import { ToolgateClient } from '../../src/client/toolgate-client.ts';
import { ToolFailureType } from '../../src/contracts/activity-types.ts';
import { checkInputLimits, defaultPayloadLimits } from '../../src/contracts/limits.ts';

const agent = { tenant: 'acme', principal: 'agent-7', principalKind: 'agent' } as const;

const quietEnvironment = () =>
  new MockActivityEnvironment({}, { logger: new DefaultLogger('ERROR', () => {}) });

function nested(depth: number): unknown {
  let value: unknown = 'leaf';
  for (let index = 0; index < depth; index++) value = { next: value };
  return value;
}

/** A Temporal client whose every use is counted: nothing should reach it. */
function countingTemporal() {
  const calls = { start: 0 };
  const client = {
    workflow: {
      start: async () => {
        calls.start++;
        throw new Error('must not be reached');
      },
    },
  } as unknown as Client;
  return { client, calls };
}

describe('input limits before Temporal', () => {
  it.each([
    [
      'size',
      {
        blob: 'x'
          .repeat(40_000)
          .split('')
          .map(() => 'abcdefgh'),
      },
      'maxInputBytes',
      /bytes; the limit is/,
    ],
    ['depth', nested(100), 'maxDepth', /nest deeper than 32 levels/],
    ['string length', { text: 'y'.repeat(70_000) }, 'maxStringLength', /characters long; the limit is/],
  ])('refuses oversized %s with PAYLOAD_TOO_LARGE and guidance', async (_label, input, limit, message) => {
    expect(checkInputLimits(input)?.limit).toBe(limit);
    const temporal = countingTemporal();
    const client = new ToolgateClient({ client: temporal.client, taskQueue: 'unused' });
    const started = await client.start({ tool: 'read_config', input }, agent);
    expect(started.disposition).toBe('refused');
    expect(started.record).toMatchObject({ status: 'denied', effect: 'none', reason: 'PAYLOAD_TOO_LARGE' });
    expect(started.record?.message).toMatch(message);
    expect(started.record?.message).toMatch(/Send|Flatten/);
    expect(temporal.calls.start).toBe(0);
  });

  it('survives a value nested far beyond the stack without throwing', () => {
    expect(checkInputLimits(nested(200_000))?.limit).toBe('maxDepth');
  });

  it('keeps every limit well under the 2 MiB Temporal payload limit', () => {
    expect(defaultPayloadLimits.maxInputBytes).toBeLessThan(2 * 1024 * 1024);
    expect(defaultPayloadLimits.maxOutputBytes).toBeLessThan(2 * 1024 * 1024);
  });
});

describe('output limit in the executor', () => {
  it('refuses a result over the limit, non-retryable, and never truncates it', async () => {
    const bigTool = implementTool(readConfig, async () => ({ value: 'z'.repeat(5_000) }));
    const activities = createActivities({
      tools: [bigTool],
      policy: { allow: ['read_config'] },
      approvalPublicKeys: [],
      limits: { ...defaultPayloadLimits, maxOutputBytes: 1_000 },
      logger: { info() {}, warn() {}, error() {} },
    });
    const environment = quietEnvironment();
    const error = await environment
      .run(activities.runTool, {
        callId: 'call-1',
        tool: 'read_config',
        input: { name: 'x' },
        tier: 'readonly' as const,
        timeoutMs: 1_000,
        context: agent,
      })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ApplicationFailure);
    const failure = error as ApplicationFailure;
    expect(failure.type).toBe(ToolFailureType.outputTooLarge);
    expect(failure.message).toMatch(/5\d{3} bytes; the limit is 1000\. Ask for less data/);
    // The oversized value is not carried anywhere in the failure, cut or whole.
    expect(JSON.stringify(failure.details)).not.toContain('zzzz');
  });

  it('hides an unexpected error from the model but logs it for operators by call ID', async () => {
    const logged: Array<Record<string, unknown> | undefined> = [];
    const leaky = implementTool(readConfig, async () => {
      throw new Error('ECONNREFUSED db.internal.corp:5432 password=hunter2 at /srv/app/secret.ts:10');
    });
    const activities = createActivities({
      tools: [leaky],
      policy: { allow: ['read_config'] },
      approvalPublicKeys: [],
      logger: { info() {}, warn() {}, error: (_message, attributes) => logged.push(attributes) },
    });
    const error = (await quietEnvironment()
      .run(activities.runTool, {
        callId: 'call-leak',
        tool: 'read_config',
        input: { name: 'x' },
        tier: 'readonly' as const,
        timeoutMs: 1_000,
        context: agent,
      })
      .catch((caught: unknown) => caught)) as ApplicationFailure;
    const modelFacing = `${error.message} ${JSON.stringify(error.details)}`;
    expect(modelFacing).toBe(
      `The tool reported an internal error. ${JSON.stringify([{ message: 'The tool reported an internal error.', attempt: 1 }])}`,
    );
    expect(modelFacing).not.toMatch(/hunter2|db\.internal|\/srv\/|ECONNREFUSED/);
    expect(logged[0]).toMatchObject({ callId: 'call-leak', tool: 'read_config', error: { type: 'Error' } });
    expect(JSON.stringify(logged[0]?.['error'])).toContain('hunter2');
  });
});
