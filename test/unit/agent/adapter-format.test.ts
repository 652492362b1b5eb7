import type { ContentBlock } from '@anthropic-ai/sdk/resources/messages';
import type { ChatCompletionMessageToolCall } from 'openai/resources/chat/completions';
import { describe, expect, it } from 'vitest';
import { answerAnthropicToolUse } from '../../../src/agent/anthropic.ts';
import { answerOpenAIChatToolCalls, answerOpenAIResponsesFunctionCalls } from '../../../src/agent/openai.ts';
import type { CallContext } from '../../../src/contracts/call-record.ts';
import { exampleCatalog } from '../../../src/tools/example-contracts.ts';
import { createFakeClient, type FakeBehaviour } from './fake-client.ts';

const context: CallContext = { tenant: 'acme', principal: 'agent-7', principalKind: 'agent' };

/**
 * Mixed outcomes whose delays run backwards, so calls finish in the reverse of the order they were
 * made: a success, a denial, a pending approval, a tool failure and an infrastructure error.
 */
const mix: Array<{
  tool: string;
  input: unknown;
  behaviour: FakeBehaviour;
  isError: boolean;
  starts: string;
}> = [
  {
    tool: 'read_config',
    input: { name: 'region' },
    behaviour: { kind: 'closed', status: 'succeeded', output: { value: 'eu-west' }, delayMs: 50 },
    isError: false,
    starts: '{"value":"eu-west"}',
  },
  {
    tool: 'delete_everything',
    input: { confirm: true },
    behaviour: { kind: 'closed', status: 'denied', reason: 'NOT_ALLOWED', delayMs: 40 },
    isError: true,
    starts: 'Error NOT_ALLOWED',
  },
  {
    tool: 'transfer_funds',
    input: { reference: 'r1', from: 'AA', to: 'BB', amountCents: 5, currency: 'EUR', memo: null },
    behaviour: { kind: 'awaiting_approval', delayMs: 30 },
    isError: false,
    starts: 'Pending',
  },
  {
    tool: 'slow_search',
    input: { query: 'q', delayMs: 1 },
    behaviour: {
      kind: 'closed',
      status: 'failed',
      reason: 'TOOL_FAILED',
      message: 'The archive is offline.',
      delayMs: 20,
    },
    isError: true,
    starts: 'Error TOOL_FAILED: The archive is offline.',
  },
  {
    tool: 'add_label',
    input: { item: 'i1', label: 'x' },
    behaviour: { kind: 'throws', message: 'connect ECONNREFUSED 10.0.0.5:7233' },
    isError: true,
    starts: 'Error TOOL_FAILED',
  },
];

function scenario(count: number) {
  const chosen = count === 1 ? [mix[0]!] : count === 2 ? [mix[1]!, mix[0]!] : mix;
  const client = createFakeClient(Object.fromEntries(chosen.map((entry) => [entry.tool, entry.behaviour])));
  const options = { client, context, catalog: exampleCatalog, pendingPollIntervalMs: 5 };
  return { chosen, options };
}

describe.each([1, 2, 5])('%i parallel tool calls with mixed outcomes', (count) => {
  it('Anthropic: every tool_use answered, results first, ids in call order', async () => {
    const { chosen, options } = scenario(count);
    const content: ContentBlock[] = [
      { type: 'text', text: 'Working on it.', citations: null },
      ...chosen.map(
        (entry, index): ContentBlock => ({
          type: 'tool_use',
          id: `toolu_${index}`,
          name: entry.tool,
          input: entry.input,
          caller: { type: 'direct' },
        }),
      ),
    ];
    const { message, outcomes } = await answerAnthropicToolUse(
      { content },
      { ...options, followUpText: 'Continue.' },
    );
    expect(message.role).toBe('user');
    expect(message.content).toHaveLength(count + 1);
    const results = message.content.slice(0, count);
    expect(results.map((block) => block.type)).toEqual(Array(count).fill('tool_result'));
    expect(message.content[count]).toEqual({ type: 'text', text: 'Continue.' });
    results.forEach((block, index) => {
      if (block.type !== 'tool_result') throw new Error('not a tool_result');
      expect(block.tool_use_id).toBe(`toolu_${index}`);
      expect(block.is_error === true).toBe(chosen[index]!.isError);
      expect(String(block.content).startsWith(chosen[index]!.starts)).toBe(true);
    });
    expect(outcomes.map((outcome) => outcome.id)).toEqual(chosen.map((_, index) => `toolu_${index}`));
  });

  it('OpenAI Chat Completions: one tool message per call, ids in call order', async () => {
    const { chosen, options } = scenario(count);
    const toolCalls: ChatCompletionMessageToolCall[] = chosen.map((entry, index) => ({
      id: `call_${index}`,
      type: 'function',
      function: { name: entry.tool, arguments: JSON.stringify(entry.input) },
    }));
    const { messages } = await answerOpenAIChatToolCalls({ tool_calls: toolCalls }, options);
    expect(messages.map((message) => message.tool_call_id)).toEqual(
      chosen.map((_, index) => `call_${index}`),
    );
    messages.forEach((message, index) => {
      expect(message.role).toBe('tool');
      expect(String(message.content).startsWith(chosen[index]!.starts)).toBe(true);
    });
  });

  it('OpenAI Responses: one function_call_output per function_call, in call order', async () => {
    const { chosen, options } = scenario(count);
    const output = chosen.flatMap((entry, index) => [
      { type: 'reasoning', id: `rs_${index}`, summary: [] },
      {
        type: 'function_call' as const,
        call_id: `fc_${index}`,
        name: entry.tool,
        arguments: JSON.stringify(entry.input),
      },
    ]);
    const { items } = await answerOpenAIResponsesFunctionCalls(output, options);
    expect(items.map((item) => item.type)).toEqual(Array(count).fill('function_call_output'));
    expect(items.map((item) => item.call_id)).toEqual(chosen.map((_, index) => `fc_${index}`));
    items.forEach((item, index) => {
      expect(String(item.output).startsWith(chosen[index]!.starts)).toBe(true);
    });
  });
});

describe('argument problems', () => {
  it('answers unparsable OpenAI arguments with INVALID_INPUT and never starts the call', async () => {
    const client = createFakeClient({ read_config: { kind: 'closed', status: 'succeeded', output: 1 } });
    const { messages } = await answerOpenAIChatToolCalls(
      {
        tool_calls: [
          { id: 'a', type: 'function', function: { name: 'read_config', arguments: '{"name": ' } },
          { id: 'b', type: 'function', function: { name: 'read_config', arguments: '{"name":"x"}' } },
        ],
      },
      { client, context },
    );
    expect(messages[0]!.content).toMatch(/^Error INVALID_INPUT: The arguments were not valid JSON/);
    expect(messages[1]!.content).toBe('1');
    expect(client.starts).toHaveLength(1);
  });
});
