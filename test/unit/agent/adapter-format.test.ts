import type { ContentBlock } from '@anthropic-ai/sdk/resources/messages';
import type { ChatCompletionMessageToolCall } from 'openai/resources/chat/completions';
import { describe, expect, it } from 'vitest';
import { exampleCatalog } from '../../../examples/contracts.ts';
import { answerAnthropicToolUse, anthropicToolResultMessage } from '../../../src/agent/anthropic.ts';
import {
  answerOpenAIChatToolCalls,
  answerOpenAIResponsesFunctionCalls,
  openAIChatToolMessages,
  openAIResponsesOutputItems,
} from '../../../src/agent/openai.ts';
import type { CallContext } from '../../../src/contracts/call-record.ts';
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

  it('answers a call with no function, non-text arguments or a non-string name, and runs the rest', async () => {
    const client = createFakeClient({ read_config: { kind: 'closed', status: 'succeeded', output: 1 } });
    const malformed = [
      { id: 'a', type: 'function' },
      { id: 'b', type: 'function', function: { name: 'read_config', arguments: { name: 'x' } } },
      { id: 'c', type: 'function', function: { name: 42, arguments: '{}' } },
      { id: 'd', type: 'function', function: { name: 'read_config', arguments: '{"name":"x"}' } },
    ] as unknown as ChatCompletionMessageToolCall[];
    // Before, the first threw a TypeError out of the whole turn, and a numeric name came back as a
    // retryable infrastructure error.
    const { messages } = await answerOpenAIChatToolCalls({ tool_calls: malformed }, { client, context });
    expect(messages.map((message) => message.tool_call_id)).toEqual(['a', 'b', 'c', 'd']);
    expect(messages[0]!.content).toMatch(/^Error NOT_ALLOWED: The tool name was undefined, not a string\./);
    expect(messages[1]!.content).toMatch(/^Error INVALID_INPUT: The arguments were not JSON text/);
    expect(messages[2]!.content).toMatch(/^Error NOT_ALLOWED: The tool name was number, not a string\./);
    expect(messages[2]!.content).toContain('Retrying the same call unchanged will not help');
    expect(messages[3]!.content).toBe('1');
    expect(client.starts).toHaveLength(1);
  });
});

describe('call IDs a turn repeats', () => {
  const transferInput = {
    reference: 'r-dup',
    from: 'AA',
    to: 'BB',
    amountCents: 5,
    currency: 'EUR',
    memo: null,
  };
  const behaviours: Record<string, FakeBehaviour> = {
    read_config: { kind: 'closed', status: 'succeeded', output: 'eu-west' },
    transfer_funds: { kind: 'closed', status: 'succeeded', output: { transferred: true } },
  };

  it('Anthropic: runs neither of two tool_use blocks that share an ID, answers both, and runs the rest', async () => {
    const client = createFakeClient(behaviours);
    const block = (id: string, name: string, input: unknown) =>
      ({ type: 'tool_use', id, name, input, caller: { type: 'direct' } }) as const;
    const { message, outcomes } = await answerAnthropicToolUse(
      {
        content: [
          block('dup', 'transfer_funds', transferInput),
          block('own', 'read_config', { name: 'region' }),
          block('dup', 'read_config', { name: 'greeting' }),
        ],
      },
      { client, context, catalog: exampleCatalog, approvalMode: 'wait' },
    );
    expect(client.starts.map((start) => start.request.input)).toEqual([{ name: 'region' }]);
    expect(outcomes.map((outcome) => [outcome.id, outcome.state])).toEqual([
      ['dup', 'not_started'],
      ['own', 'closed'],
      ['dup', 'not_started'],
    ]);
    const results = message.content as Array<{ tool_use_id: string; content: string; is_error?: boolean }>;
    expect(results.map((result) => result.tool_use_id)).toEqual(['dup', 'own', 'dup']);
    expect(results[0]!.content).toMatch(
      /^Error INVALID_INPUT: 2 tool calls in this turn had the call ID "dup"/,
    );
    expect(results[0]!.is_error).toBe(true);
    expect(results[1]).toMatchObject({ content: '"eu-west"' });
    expect(results[1]!.is_error).toBeUndefined();
    expect(results[2]!.content).toBe(results[0]!.content);
  });

  it('OpenAI Chat and Responses: empty IDs shared by two calls run neither; a lone call runs', async () => {
    const chatClient = createFakeClient(behaviours);
    const { messages } = await answerOpenAIChatToolCalls(
      {
        tool_calls: [
          { id: '', type: 'function', function: { name: 'read_config', arguments: '{"name":"region"}' } },
          { id: '', type: 'function', function: { name: 'read_config', arguments: '{"name":"greeting"}' } },
          { id: 'c', type: 'function', function: { name: 'read_config', arguments: '{"name":"retries"}' } },
        ],
      },
      { client: chatClient, context },
    );
    expect(chatClient.starts.map((start) => start.request.input)).toEqual([{ name: 'retries' }]);
    const emptyId = /^Error INVALID_INPUT: 2 tool calls in this turn had an empty call ID/;
    expect(String(messages[0]!.content)).toMatch(emptyId);
    expect(String(messages[1]!.content)).toMatch(emptyId);
    expect(messages[2]!.content).toBe('"eu-west"');

    const responsesClient = createFakeClient(behaviours);
    const { items } = await answerOpenAIResponsesFunctionCalls(
      [
        { type: 'function_call', call_id: 'x', name: 'read_config', arguments: '{"name":"region"}' },
        {
          type: 'function_call',
          call_id: 'x',
          name: 'transfer_funds',
          arguments: JSON.stringify(transferInput),
        },
      ],
      { client: responsesClient, context },
    );
    expect(responsesClient.starts).toHaveLength(0);
    expect(items.map((item) => item.call_id)).toEqual(['x', 'x']);
    expect(items.every((item) => String(item.output).startsWith('Error INVALID_INPUT'))).toBe(true);
  });

  it('pairs outcomes by position when IDs repeat, and by ID when outcomes come in another order', () => {
    const calls = [{ id: 'a' }, { id: 'a' }, { id: 'b' }];
    const inOrder = [
      { id: 'a', text: 'first', isError: false },
      { id: 'a', text: 'second', isError: false },
      { id: 'b', text: 'third', isError: false },
    ];
    expect(openAIChatToolMessages(calls, inOrder).map((entry) => entry.content)).toEqual([
      'first',
      'second',
      'third',
    ]);
    const shuffled = [inOrder[2]!, inOrder[0]!];
    expect(
      openAIResponsesOutputItems([{ id: 'a' }, { id: 'b' }], shuffled).map((item) => item.output),
    ).toEqual(['first', 'third']);
    expect(
      anthropicToolResultMessage(calls, inOrder).content.map(
        (block) => (block as { content: string }).content,
      ),
    ).toEqual(['first', 'second', 'third']);
  });

  it('answers a Chat tool call of a kind it does not serve, without running it', async () => {
    const client = createFakeClient(behaviours);
    const unknownKind = {
      id: 'u',
      type: 'web_search',
      web_search: {},
    } as unknown as ChatCompletionMessageToolCall;
    const { messages } = await answerOpenAIChatToolCalls({ tool_calls: [unknownKind] }, { client, context });
    expect(client.starts).toHaveLength(0);
    expect(messages[0]).toMatchObject({ tool_call_id: 'u' });
    expect(String(messages[0]!.content)).toMatch(/^Error INVALID_INPUT: Only function tools/);
  });
});
