import { describe, expect, it } from 'vitest';
import { faultSetup, useFaultRun } from '../support/fault-run.ts';
import { agent } from '../support/harness.ts';

/**
 * What a worker process writes to stderr at level DEBUG, read whole: JSON lines only, never an
 * argument value or a task token, and an expected tool failure as one warn line.
 */
const run = useFaultRun('toolgate-logs-');

const secret = 'sk_live_51Hq8vSECRETtoolgateLOGcheck';

describe('worker logs', () => {
  it('are one JSON object per line, hold no argument values, and say an expected failure once, as a warning', async () => {
    const { client, startWorker } = await faultSetup(run, 'logs');
    const worker = await startWorker({ logLevel: 'DEBUG' });
    const written = await client.call(
      { tool: 'write_report', input: { path: 'logs/secret.md', content: secret }, key: 'logs-1' },
      agent,
    );
    // The same path again: refused by the sandbox at execution time (a denial, logged once).
    const refused = await client.call(
      { tool: 'write_report', input: { path: 'logs/secret.md', content: `${secret} again` }, key: 'logs-2' },
      agent,
    );
    // A ToolError: without a config file the tool says the configuration is not available.
    const failed = await client.call({ tool: 'read_config', input: { name: 'no_such_setting' } }, agent);
    expect(written.status).toBe('succeeded');
    expect(refused).toMatchObject({ status: 'denied', effect: 'none' });
    expect(failed).toMatchObject({ status: 'failed' });
    await worker.stop();

    const text = worker.stderr();
    // Up to the last line end: a write cut short by the exit is not a line.
    const lines = text
      .slice(0, text.lastIndexOf('\n'))
      .split('\n')
      .filter((line) => line.length > 0);
    expect(lines.length).toBeGreaterThan(3);
    const entries = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    for (const entry of entries) {
      expect(typeof entry['time']).toBe('string');
      expect(['trace', 'debug', 'info', 'warn', 'error']).toContain(entry['level']);
      expect(typeof entry['message']).toBe('string');
    }
    expect(text).not.toContain(secret);
    expect(text).not.toContain('taskToken');

    const about = (callId: string) =>
      entries.filter(
        (entry) => entry['callId'] === callId && (entry['level'] === 'warn' || entry['level'] === 'error'),
      );
    // One warn line per failed attempt (this ToolError may be retried: no config file here).
    expect(failed.attempts).toBeGreaterThanOrEqual(1);
    expect(about(failed.callId)).toEqual(
      Array.from({ length: failed.attempts }, (_, index) =>
        expect.objectContaining({
          level: 'warn',
          message: 'tool failed',
          callId: failed.callId,
          tool: 'read_config',
          tenant: 'acme',
          attempt: index + 1,
          error: { type: 'ToolError', message: 'The configuration is not available right now.' },
        }),
      ),
    );
    expect(about(refused.callId)).toEqual([
      expect.objectContaining({
        level: 'warn',
        message: 'tool denied at execution time',
        tool: 'write_report',
        tenant: 'acme',
      }),
    ]);
    expect(about(written.callId)).toEqual([]);
    // The SDK's own activity lines carry the call ID too.
    expect(
      entries.some((entry) => entry['callId'] === written.callId && entry['message'] === 'Activity started'),
    ).toBe(true);
  });
});
