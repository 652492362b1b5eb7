import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, inject, it } from 'vitest';
import { findFreePort } from '../../src/dev/index.ts';
import { spawnNode } from '../support/child-processes.ts';
import { createCliRunner, exampleEnv } from '../support/cli-runner.ts';
import { faultSetup, useFaultRun } from '../support/fault-run.ts';
import { agent } from '../support/harness.ts';
import { waitFor } from '../support/wait.ts';

/**
 * A worker process serving Prometheus through the Temporal runtime's exporter: Temporal's series
 * and toolgate's on one endpoint, moving with the calls, with labels that never take a per-call
 * value.
 */
const run = useFaultRun('toolgate-metrics-');

interface Sample {
  readonly name: string;
  readonly labels: Record<string, string>;
  readonly value: number;
}

function parseMetrics(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match) continue;
    const labels: Record<string, string> = {};
    for (const pair of (match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[pair[1]!] = pair[2]!;
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return samples;
}

/** The sum of a series over the samples whose labels include `where`. */
const total = (samples: readonly Sample[], name: string, where: Record<string, string>) =>
  samples
    .filter(
      (sample) =>
        sample.name === name && Object.entries(where).every(([key, value]) => sample.labels[key] === value),
    )
    .reduce((sum, sample) => sum + sample.value, 0);

/** toolgate's own labels and the values they may take: the catalog, the statuses, the reason codes. */
const perCallValue = /toolgate\/|acme|agent-7|[0-9a-f]{8}-[0-9a-f]{4}/;

describe('worker metrics', () => {
  it('serve Temporal and toolgate series on /metrics; the counters move with calls; no label holds a per-call value', async () => {
    const { client, startWorker } = await faultSetup(run, 'metrics');
    const port = await findFreePort(0, '127.0.0.1');
    await startWorker({ metricsPort: port });
    const url = `http://127.0.0.1:${port}/metrics`;
    const scrape = async () => parseMetrics(await (await fetch(url)).text());

    const before = await scrape();
    expect(before.some((sample) => sample.name.startsWith('temporal_'))).toBe(true);
    expect(total(before, 'toolgate_calls_total', {})).toBe(0);

    for (let index = 0; index < 3; index++) {
      const record = await client.call(
        {
          tool: 'write_report',
          input: { path: `metrics/${index}.md`, content: 'x' },
          key: `metrics-${index}`,
        },
        agent,
      );
      expect(record.status).toBe('succeeded');
    }
    const refused = await client.call(
      { tool: 'delete_everything', input: { confirm: true }, key: 'metrics-delete' },
      agent,
    );
    expect(refused).toMatchObject({ status: 'denied', reason: 'NOT_ALLOWED' });
    const transfer = await client.start(
      {
        tool: 'transfer_funds',
        input: {
          reference: 'metrics-1',
          from: 'ACC-1',
          to: 'ACC-2',
          amountCents: 100,
          currency: 'EUR',
          memo: null,
        },
        key: 'metrics-transfer',
      },
      agent,
    );
    await waitFor(async () =>
      (await client.get(transfer.callId))?.status === 'awaiting_approval' ? true : undefined,
    );
    expect((await client.approve(transfer.callId, { approver: 'alice' })).accepted).toBe(true);
    expect(await client.result(transfer.callId)).toMatchObject({ status: 'succeeded' });

    // Workflow metrics leave through the SDK's sinks: wait until the last call is counted.
    const after = await waitFor(
      async () => {
        const samples = await scrape();
        return total(samples, 'toolgate_calls_total', {}) >= 5 ? samples : undefined;
      },
      { timeoutMs: 15_000, what: 'five calls in toolgate_calls_total' },
    );
    expect(
      total(after, 'toolgate_calls_total', {
        tool: 'write_report',
        tier: 'irreversible',
        status: 'succeeded',
        reason: 'none',
        effect: 'applied',
      }),
    ).toBe(3);
    expect(
      total(after, 'toolgate_calls_total', {
        tool: 'delete_everything',
        status: 'denied',
        reason: 'NOT_ALLOWED',
      }),
    ).toBe(1);
    expect(total(after, 'toolgate_calls_total', { tool: 'transfer_funds', status: 'succeeded' })).toBe(1);
    expect(
      total(after, 'toolgate_admission_refusals_total', { tool: 'delete_everything', reason: 'NOT_ALLOWED' }),
    ).toBe(1);
    expect(
      total(after, 'toolgate_tool_duration_seconds_count', { tool: 'write_report', returned: 'true' }),
    ).toBeGreaterThanOrEqual(3);
    expect(
      total(after, 'toolgate_approval_wait_seconds_count', { tool: 'transfer_funds', outcome: 'approve' }),
    ).toBe(1);

    const ours = after.filter((sample) => sample.name.startsWith('toolgate_'));
    const labelValues = ours.flatMap((sample) =>
      ['tool', 'tier', 'status', 'reason', 'effect', 'outcome', 'returned'].flatMap((key) =>
        sample.labels[key] === undefined ? [] : [sample.labels[key]],
      ),
    );
    expect(labelValues.length).toBeGreaterThan(0);
    expect(labelValues.filter((value) => perCallValue.test(value))).toEqual([]);
    console.info(
      `metrics sample:\n${ours
        .filter((sample) => sample.name === 'toolgate_calls_total' || sample.name.endsWith('_count'))
        .map((sample) => `${sample.name}${JSON.stringify(sample.labels)} ${sample.value}`)
        .join('\n')}`,
    );
  });

  it('toolgate worker --metrics-port serves them; a port in use leaves the worker running without, and says so', async () => {
    const binary = fileURLToPath(new URL('../../bin/toolgate.js', import.meta.url));
    const env = exampleEnv({
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TOOLGATE_TASK_QUEUE: `metrics-cli-${randomUUID()}`,
      TOOLGATE_DATA_DIR: join(run.workDir, 'metrics-cli'),
    });
    const port = await findFreePort(0, '127.0.0.1');
    const first = await spawnNode([binary, 'worker', '--metrics-port', String(port), '--json'], '{', { env });
    run.children.push(first);
    const summary = JSON.parse(first.lines.find((line) => line.startsWith('{'))!) as Record<string, unknown>;
    expect(summary['metricsUrl']).toBe(`http://127.0.0.1:${port}/metrics`);
    const page = await fetch(String(summary['metricsUrl']));
    expect(page.status).toBe(200);
    expect(await page.text()).toMatch(/^temporal_/m);

    const second = await spawnNode([binary, 'worker', '--metrics-port', String(port), '--json'], '{', {
      env,
    });
    run.children.push(second);
    const secondSummary = JSON.parse(second.lines.find((line) => line.startsWith('{'))!) as Record<
      string,
      unknown
    >;
    expect(secondSummary['metricsUrl']).toBeNull();
    expect(second.stderr()).toContain(`Metrics are off: could not serve them on 127.0.0.1:${port}`);
    expect(second.stderr()).toContain('--metrics-port');

    const bad = await createCliRunner({})('worker', '--metrics-port', 'ninety');
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('--metrics-port must be a whole number from 0 to 65535 (0 for no metrics)');
  });
});
