import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agent, createHarness, type Harness } from '../support/harness.ts';

describe('smoke', () => {
  let harness: Harness;
  beforeAll(async () => {
    harness = await createHarness();
  });
  afterAll(async () => harness?.close());

  it('runs read_config end to end', async () => {
    const record = await harness.client.call({ tool: 'read_config', input: { name: 'region' } }, agent);
    expect(record.status).toBe('succeeded');
    expect(record.output).toEqual({ name: 'region', value: 'eu-west' });
  });
});
