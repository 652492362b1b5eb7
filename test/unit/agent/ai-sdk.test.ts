import { describe, expect, it } from 'vitest';
import { exampleCatalog } from '../../../examples/contracts.ts';
import { toolgateAiTools } from '../../../src/agent/ai-sdk.ts';
import type { CallContext } from '../../../src/contracts/call-record.ts';
import { createFakeClient } from './fake-client.ts';

const context: CallContext = { tenant: 'acme', principal: 'agent-7', principalKind: 'agent' };
const executionOptions = (toolCallId: string) => ({ toolCallId, messages: [] });

describe('Vercel AI SDK tools', () => {
  it('refuses a NaN maxConcurrency when the tools are built', () => {
    const client = createFakeClient({});
    expect(() =>
      toolgateAiTools({ client, context, catalog: exampleCatalog, maxConcurrency: Number.NaN }),
    ).toThrow(/maxConcurrency must be a finite number/);
  });

  it('executes through toolgate and maps failures to error-text', async () => {
    const client = createFakeClient({
      read_config: { kind: 'closed', status: 'succeeded', output: { value: 'eu-west' } },
      add_label: { kind: 'closed', status: 'denied', reason: 'NOT_ALLOWED' },
    });
    const tools = toolgateAiTools({
      client,
      context,
      catalog: exampleCatalog,
      include: ['read_config', 'add_label'],
    });
    expect(Object.keys(tools)).toEqual(['read_config', 'add_label']);
    const read = tools['read_config']!;
    const output = await read.execute!({ name: 'region' }, executionOptions('t1'));
    expect(output).toMatchObject({ state: 'closed', isError: false, text: '{"value":"eu-west"}' });
    const denied = await tools['add_label']!.execute!({ item: 'i', label: 'l' }, executionOptions('t2'));
    const modelOutput = await tools['add_label']!.toModelOutput!({
      toolCallId: 't2',
      input: {},
      output: denied as never,
    });
    expect(modelOutput).toMatchObject({
      type: 'error-text',
      value: expect.stringMatching(/^Error NOT_ALLOWED/),
    });
    expect(client.starts.map((start) => start.request.tool)).toEqual(['read_config', 'add_label']);
  });

  it('shares one concurrency limit across the tools of one set', async () => {
    const client = createFakeClient({
      read_config: { kind: 'closed', status: 'succeeded', output: 1, delayMs: 100 },
      slow_search: { kind: 'closed', status: 'succeeded', output: 2, delayMs: 100 },
    });
    const tools = toolgateAiTools({ client, context, catalog: exampleCatalog, maxConcurrency: 2 });
    const startedAt = performance.now();
    await Promise.all([
      tools['read_config']!.execute!({ name: 'a' }, executionOptions('1')),
      tools['slow_search']!.execute!({ query: 'b', delayMs: 1 }, executionOptions('2')),
      tools['read_config']!.execute!({ name: 'c' }, executionOptions('3')),
      tools['slow_search']!.execute!({ query: 'd', delayMs: 1 }, executionOptions('4')),
    ]);
    expect(client.maxConcurrent).toBe(2);
    expect(performance.now() - startedAt).toBeGreaterThanOrEqual(190);
  });
});
