import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { context, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { exampleCatalog } from '../../examples/contracts.ts';
import { ToolgateClient } from '../../src/client/toolgate-client.ts';
import { tracerFor } from '../../src/worker/tracing.ts';
import { spawnNode } from '../support/child-processes.ts';
import { exampleEnv } from '../support/cli-runner.ts';
import { agent, createHarness, type Harness } from '../support/harness.ts';
import { startLoopbackServer } from '../support/loopback-server.ts';
import { waitFor } from '../support/wait.ts';

/**
 * One trace per call, caller → client → workflow → activity, with each gate's decision as an event on
 * the workflow's span, exported through a real worker and a real dev server into memory.
 */
const exporter = new InMemorySpanExporter();
const tracing = { spanProcessor: new SimpleSpanProcessor(exporter) };
let harness: Harness;

beforeAll(async () => {
  harness = await createHarness({ tracing });
}, 60_000);

afterAll(async () => {
  await harness?.close();
});

/** The caller's own span, active while it calls, as an agent framework's would be. */
async function inCallerSpan<T>(
  name: string,
  work: () => Promise<T>,
): Promise<{ result: T; span: ReadableSpan }> {
  const span = tracerFor(tracing).startSpan(name);
  const result = await context.with(trace.setSpan(context.active(), span), work);
  span.end();
  const finished = exporter
    .getFinishedSpans()
    .find((candidate) => candidate.spanContext().spanId === span.spanContext().spanId);
  return { result, span: finished! };
}

const runSpanOf = async (callId: string) =>
  waitFor(
    () =>
      exporter
        .getFinishedSpans()
        .find(
          (span) => span.name === 'RunWorkflow:toolCall' && span.attributes['toolgate.call_id'] === callId,
        ),
    { timeoutMs: 15_000, what: `the workflow span of ${callId}` },
  );

const childOf = (parent: ReadableSpan, name: string) =>
  exporter
    .getFinishedSpans()
    .filter((span) => span.name === name && span.parentSpanId === parent.spanContext().spanId);

const gateEvents = (span: ReadableSpan) =>
  span.events
    .filter((event) => event.name === 'toolgate.gate')
    .map((event) => [
      event.attributes?.['toolgate.gate'],
      event.attributes?.['toolgate.decision'],
      event.attributes?.['toolgate.reason'],
    ]);

describe('traces', () => {
  it('follow a call from the caller through the workflow to the activity, with the gates as events and no argument', async () => {
    const secret = 'sk-live-TRACE-ME-NOT-4242';
    const { result: record, span: caller } = await inCallerSpan('agent turn', () =>
      harness.client.call(
        { tool: 'write_report', input: { path: 'traced.md', content: secret }, key: 'traced-1' },
        agent,
      ),
    );
    expect(record.status).toBe('succeeded');

    const run = await runSpanOf(record.callId);

    const [start] = exporter
      .getFinishedSpans()
      .filter(
        (span) => span.name === 'StartWorkflow:toolCall' && span.parentSpanId === caller.spanContext().spanId,
      );
    expect(start).toBeDefined();
    expect(run.parentSpanId).toBe(start!.spanContext().spanId);
    const [scheduled] = childOf(run, 'StartActivity:checkAndRunTool');
    expect(scheduled).toBeDefined();
    const [ran] = childOf(scheduled!, 'RunActivity:checkAndRunTool');
    expect(ran).toBeDefined();
    const chain = [caller, start!, run, scheduled!, ran!];
    expect(new Set(chain.map((span) => span.spanContext().traceId)).size).toBe(1);

    expect(gateEvents(run)).toEqual([
      ['idempotency', 'pass', undefined],
      ['allowlist', 'pass', undefined],
      ['validation', 'pass', undefined],
      ['approval', 'pass', undefined],
      ['execution', 'succeeded', undefined],
    ]);
    expect(run.attributes).toMatchObject({
      'toolgate.tool': 'write_report',
      'toolgate.tier': 'irreversible',
      'toolgate.status': 'succeeded',
      'toolgate.effect': 'applied',
    });
    // Spans carry identifiers and decisions, never what the model passed.
    expect(
      JSON.stringify(
        exporter.getFinishedSpans().map(({ attributes, events, name }) => ({ name, attributes, events })),
      ),
    ).not.toContain('TRACE-ME-NOT');
    console.info(
      `trace of one call:\n${chain.map((span, depth) => `${'  '.repeat(depth)}${span.name} ${span.spanContext().spanId} ${durationMs(span)} ms`).join('\n')}\n  events: ${JSON.stringify(gateEvents(run))}`,
    );
  });

  it('record the gate that stopped a call, and why', async () => {
    const denied = await harness.client.call({ tool: 'drop_database', input: {} }, agent);
    expect(gateEvents(await runSpanOf(denied.callId))).toEqual([
      ['idempotency', 'pass', undefined],
      ['allowlist', 'denied', denied.reason],
    ]);

    const invalid = await harness.client.call(
      { tool: 'write_report', input: { path: 'x.md', content: 42 }, key: 'traced-invalid' },
      agent,
    );
    expect(invalid.status).toBe('denied');
    expect(gateEvents(await runSpanOf(invalid.callId))).toEqual([
      ['idempotency', 'pass', undefined],
      ['allowlist', 'pass', undefined],
      ['validation', 'denied', 'INVALID_INPUT'],
    ]);

    const transfer = await harness.client.start(
      {
        tool: 'transfer_funds',
        input: {
          reference: 'TR-1',
          from: 'ACC-1',
          to: 'ACC-2',
          amountCents: 100,
          currency: 'EUR',
          memo: null,
        },
        key: 'traced-transfer',
      },
      agent,
    );
    await waitFor(
      async () => (await harness.client.get(transfer.callId))?.status === 'awaiting_approval' || undefined,
      {
        timeoutMs: 10_000,
        what: 'the transfer to wait for approval',
      },
    );
    await harness.client.reject(transfer.callId, { approver: 'alice', comment: 'not today' });
    expect(gateEvents(await runSpanOf(transfer.callId))).toEqual([
      ['idempotency', 'pass', undefined],
      ['allowlist', 'pass', undefined],
      ['validation', 'pass', undefined],
      ['approval', 'denied', 'APPROVAL_REJECTED'],
    ]);
  });
});

/** A span as OTLP/HTTP JSON carries it. */
interface OtlpSpan {
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId?: string;
  readonly name: string;
  readonly attributes?: Array<{ key: string; value: { stringValue?: string } }>;
  readonly events?: Array<{
    name: string;
    attributes?: Array<{ key: string; value: { stringValue?: string } }>;
  }>;
}

describe('traces from toolgate worker', () => {
  it('go out as OTLP when OTEL_EXPORTER_OTLP_ENDPOINT is set, and continue the caller’s trace across processes', async () => {
    const received: Array<{ service: string | undefined; span: OtlpSpan }> = [];
    const collector = await startLoopbackServer((request, response) => {
      let body = '';
      request.on('data', (chunk: Buffer) => {
        body += chunk.toString('utf8');
      });
      request.on('end', () => {
        if (request.url === '/v1/traces' && request.headers['content-type']?.includes('json')) {
          const document = JSON.parse(body) as {
            resourceSpans: Array<{
              resource?: { attributes?: Array<{ key: string; value: { stringValue?: string } }> };
              scopeSpans: Array<{ spans: OtlpSpan[] }>;
            }>;
          };
          for (const resourceSpans of document.resourceSpans) {
            const service = resourceSpans.resource?.attributes?.find((entry) => entry.key === 'service.name')
              ?.value.stringValue;
            for (const scope of resourceSpans.scopeSpans)
              for (const span of scope.spans) received.push({ service, span });
          }
        }
        response.statusCode = 200;
        response.setHeader('content-type', 'application/json');
        response.end('{}');
      });
    });
    const dataDir = await mkdtemp(join(tmpdir(), 'toolgate-otlp-'));
    const taskQueue = `otlp-${randomUUID()}`;
    const binary = fileURLToPath(new URL('../../bin/toolgate.js', import.meta.url));
    const worker = await spawnNode([binary, 'worker', '--metrics-port', '0', '--json'], '{', {
      env: exampleEnv({
        TEMPORAL_ADDRESS: inject('temporalAddress'),
        TOOLGATE_TASK_QUEUE: taskQueue,
        TOOLGATE_DATA_DIR: dataDir,
        OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
        OTEL_SERVICE_NAME: 'toolgate-test-worker',
        OTEL_BSP_SCHEDULE_DELAY: '100',
      }),
    });
    try {
      // The caller traces into memory; the worker process into the collector: one trace.
      const client = new ToolgateClient({ client: harness.temporal, taskQueue, catalog: exampleCatalog });
      const { result: record, span: caller } = await inCallerSpan('agent turn (remote worker)', () =>
        client.call(
          { tool: 'write_report', input: { path: 'otlp.md', content: 'via OTLP' }, key: 'otlp-1' },
          agent,
        ),
      );
      expect(record.status).toBe('succeeded');
      const start = exporter
        .getFinishedSpans()
        .find(
          (span) =>
            span.name === 'StartWorkflow:toolCall' && span.parentSpanId === caller.spanContext().spanId,
        )!;
      const run = await waitFor(
        () =>
          received.find(
            ({ span }) =>
              span.name === 'RunWorkflow:toolCall' &&
              span.attributes?.some((entry) => entry.value.stringValue === record.callId),
          ),
        { timeoutMs: 15_000, what: 'the workflow span at the collector' },
      );
      expect(run.service).toBe('toolgate-test-worker');
      expect(run.span.traceId).toBe(caller.spanContext().traceId);
      expect(run.span.parentSpanId).toBe(start.spanContext().spanId);
      expect(run.span.events?.filter((event) => event.name === 'toolgate.gate')).toHaveLength(5);
      const activity = await waitFor(
        () =>
          received.find(
            ({ span }) =>
              span.name === 'RunActivity:checkAndRunTool' && span.traceId === caller.spanContext().traceId,
          ),
        { timeoutMs: 15_000, what: 'the activity span at the collector' },
      );
      expect(activity.service).toBe('toolgate-test-worker');
    } finally {
      await worker.stop();
      await collector.close();
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});

function durationMs(span: ReadableSpan): string {
  return (span.duration[0] * 1000 + span.duration[1] / 1e6).toFixed(1);
}
