import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { createBreakerGate, createQuotaGate } from '../../activities/safety/admission-gates.ts';
import type { CallRecord } from '../../src/contracts/call-record.ts';
import { callFingerprint } from '../../src/contracts/fingerprint.ts';
import { admissionWorkflowId, scopeStateQuery } from '../../workflows/admission-entity.ts';
import type { ToolCallRequest } from '../../workflows/tool-call.ts';
import { agent, createHarness, type Harness } from '../support/harness.ts';
import { type LoopbackServer, startLoopbackServer } from '../support/loopback-server.ts';

const harnesses: Harness[] = [];
const servers: LoopbackServer[] = [];
afterEach(async () => {
  await Promise.all(harnesses.splice(0).map((harness) => harness.close()));
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

describe('overload protection', () => {
  it('refuses calls past a concurrency limit at once with RATE_LIMITED, and admits again after release', async () => {
    const gate = createQuotaGate({ perTool: { slow_search: { maxConcurrent: 3 } } });
    const harness = await createHarness({ admissionGates: [gate] });
    harnesses.push(harness);
    const startedAt = Date.now();
    const closedAfter: number[] = [];
    const records = await Promise.all(
      Array.from({ length: 10 }, (_, index) =>
        harness.client
          .call({ tool: 'slow_search', input: { query: `q${index}`, delayMs: 4_000 } }, agent)
          .then((record) => {
            closedAfter.push(Date.now() - startedAt);
            return record;
          }),
      ),
    );
    const succeeded = records.filter((record) => record.status === 'succeeded');
    const limited = records.filter((record) => record.reason === 'RATE_LIMITED');
    expect(succeeded).toHaveLength(3);
    expect(limited).toHaveLength(7);
    for (const record of limited) {
      expect(record).toMatchObject({ status: 'denied', effect: 'none', retryAfterSeconds: 1 });
      expect(record.message).toMatch(/Wait 1 s, then try again/);
    }
    // Refused, not queued: the seven refusals came back long before any running call finished.
    const sorted = [...closedAfter].sort((left, right) => left - right);
    expect(sorted[6]!).toBeLessThan(4_000);
    // Every slot is back in the tool's admission entity, which every worker asks.
    const entity = harness.temporal.workflow.getHandle(
      admissionWorkflowId(harness.taskQueue, 'tool:slow_search'),
    );
    expect(Object.keys((await entity.query(scopeStateQuery)).holders)).toEqual([]);
    const again = await harness.client.call(
      { tool: 'slow_search', input: { query: 'after', delayMs: 10 } },
      agent,
    );
    expect(again.status).toBe('succeeded');
  });

  it('rate-limits a tenant past its quota with a retry-after hint', async () => {
    const harness = await createHarness({
      admissionGates: [createQuotaGate({ perTenant: { beta: { maxPerWindow: 5, windowMs: 60_000 } } })],
    });
    harnesses.push(harness);
    const beta = { ...agent, tenant: 'beta' };
    const records: CallRecord[] = [];
    for (let index = 0; index < 8; index++) {
      records.push(await harness.client.call({ tool: 'read_config', input: { name: 'region' } }, beta));
    }
    expect(records.filter((record) => record.status === 'succeeded')).toHaveLength(5);
    const limited = records.filter((record) => record.reason === 'RATE_LIMITED');
    expect(limited).toHaveLength(3);
    for (const record of limited) expect(record.retryAfterSeconds).toBeGreaterThanOrEqual(10);
    // Another tenant is not affected.
    expect(
      (await harness.client.call({ tool: 'read_config', input: { name: 'region' } }, agent)).status,
    ).toBe('succeeded');
  });

  it('opens the breaker on a 503 storm: sequential calls stay within the budget', async () => {
    const downstream = await startLoopbackServer((_request, response) => {
      response.statusCode = 503;
      response.end('unavailable');
    });
    servers.push(downstream);
    const harness = await createHarness({
      admissionGates: [createBreakerGate({ http_fetch: { failureThreshold: 5, cooldownMs: 60_000 } })],
      toolOptions: { http: { ports: 'any', allowLoopbackForTests: true } },
    });
    harnesses.push(harness);
    const records: CallRecord[] = [];
    for (let index = 0; index < 10; index++) {
      records.push(
        await harness.client.call(
          { tool: 'http_fetch', input: { url: `${downstream.url}/${index}` } },
          agent,
        ),
      );
    }
    // Budget (docs/security.md): at most failureThreshold attempts while calls run one at a time.
    // The first call fails its three attempts; the second fails two, and its third is refused by
    // the breaker, which every later call meets at admission.
    expect(downstream.stats.requests).toBe(5);
    expect(records[0]).toMatchObject({ status: 'failed', reason: 'TOOL_FAILED', attempts: 3 });
    expect(records[1]).toMatchObject({
      status: 'denied',
      reason: 'RATE_LIMITED',
      effect: 'none',
      attempts: 2,
    });
    expect(
      records.slice(2).every((record) => record.reason === 'RATE_LIMITED' && record.effect === 'none'),
    ).toBe(true);
    expect(records[9]?.retryAfterSeconds).toBeGreaterThan(50);
    const entity = harness.temporal.workflow.getHandle(
      admissionWorkflowId(harness.taskQueue, 'tool:http_fetch'),
    );
    expect((await entity.query(scopeStateQuery)).breaker).toMatchObject({ open: true, opened: 1 });
  });

  it('opens the breaker on a 503 storm: concurrent calls stay within the budget', async () => {
    const downstream = await startLoopbackServer((_request, response) => {
      response.statusCode = 503;
      response.end('unavailable');
    });
    servers.push(downstream);
    const harness = await createHarness({
      admissionGates: [createBreakerGate({ http_fetch: { failureThreshold: 5, cooldownMs: 60_000 } })],
      toolOptions: { http: { ports: 'any', allowLoopbackForTests: true } },
    });
    harnesses.push(harness);
    const concurrent = 20;
    const records = await Promise.all(
      Array.from({ length: concurrent }, (_, index) =>
        harness.client.call({ tool: 'http_fetch', input: { url: `${downstream.url}/c${index}` } }, agent),
      ),
    );
    // Without the breaker: 20 calls × 3 attempts = 60. Budget: failureThreshold + in-flight − 1.
    expect(downstream.stats.requests).toBeLessThanOrEqual(5 + concurrent - 1);
    expect(records.every((record) => record.effect === 'none' && record.status !== 'succeeded')).toBe(true);
    console.info(
      `503 storm, ${concurrent} concurrent calls: ${downstream.stats.requests} downstream attempts`,
    );
  });
});

describe('payload limits through the workflow', () => {
  it('refuses an oversized tool result with PAYLOAD_TOO_LARGE instead of truncating it', async () => {
    const harness = await createHarness({ config: { huge: 'h'.repeat(1_100_000), region: 'eu' } });
    harnesses.push(harness);
    const record = await harness.client.call({ tool: 'read_config', input: { name: 'huge' } }, agent);
    expect(record).toMatchObject({ status: 'failed', effect: 'none', reason: 'PAYLOAD_TOO_LARGE' });
    expect(record.message).toMatch(/bytes; the limit is 1048576\. Ask for less data/);
    expect(record.output).toBeUndefined();
  });

  it('denies a deep input that bypassed the client, in the workflow, before validation', async () => {
    const harness = await createHarness();
    harnesses.push(harness);
    let input: unknown = { name: 'region' };
    for (let index = 0; index < 40; index++) input = { nested: input };
    const request: ToolCallRequest = {
      tool: 'read_config',
      input,
      context: agent,
      fingerprint: callFingerprint('read_config', input),
    };
    const handle = await harness.temporal.workflow.start('toolCall', {
      workflowId: `toolgate/acme/read_config/~${randomUUID()}`,
      taskQueue: harness.taskQueue,
      args: [request],
    });
    const record = await harness.client.result(handle.workflowId);
    expect(record).toMatchObject({ status: 'denied', effect: 'none', reason: 'PAYLOAD_TOO_LARGE' });
    expect(record.message).toMatch(/nest deeper than 32 levels\. Flatten/);
  });
});
