import { rm, writeFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agent, createHarness, type Harness } from '../support/harness.ts';

describe('retries follow the tier', () => {
  let harness: Harness;
  beforeAll(async () => {
    harness = await createHarness();
  });
  afterAll(async () => harness?.close());

  it('retries a failing readonly tool up to its attempts, then fails with the key released', async () => {
    await rm(harness.tools.paths.configFile);
    const record = await harness.client.call(
      { tool: 'read_config', input: { name: 'region' }, key: 'cfg-1' },
      agent,
    );
    expect(record).toMatchObject({ status: 'failed', reason: 'TOOL_FAILED', effect: 'none', attempts: 3 });
    expect(record.message).toBe('The configuration is not available right now.');
    // Released: once the cause is fixed, the same key runs again.
    await writeFile(harness.tools.paths.configFile, JSON.stringify({ region: 'eu-north' }));
    const retried = await harness.client.call(
      { tool: 'read_config', input: { name: 'region' }, key: 'cfg-1' },
      agent,
    );
    expect(retried).toMatchObject({ status: 'succeeded', output: { name: 'region', value: 'eu-north' } });
    expect(retried.runId).not.toBe(record.runId);
  });

  it('runs a failing irreversible tool once, reports the outcome unknown and keeps the key', async () => {
    // A file where the reports folder should be makes the write fail in an unplanned way.
    await writeFile(harness.tools.paths.reportsDir, 'not a folder');
    const request = { tool: 'write_report', input: { path: 'x.md', content: 'x' }, key: 'broken-1' };
    const record = await harness.client.call(request, agent);
    expect(record).toMatchObject({
      status: 'failed',
      reason: 'OUTCOME_UNKNOWN',
      effect: 'unknown',
      attempts: 1,
    });
    // Model-facing text stays generic: no path or stack from the underlying error.
    expect(record.message).toBe('The tool reported an internal error.');
    const again = await harness.client.start(request, agent);
    expect(again.disposition).toBe('existing');
    expect(again.record?.runId).toBe(record.runId);
  });
});
