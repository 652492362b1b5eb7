import type { ContentBlock, MessageParam, ToolResultBlockParam } from '@anthropic-ai/sdk/resources/messages';

/** The part of an Anthropic `Message` the agent loop reads. */
export interface AssistantTurn {
  readonly content: ContentBlock[];
  readonly stop_reason: 'tool_use' | 'end_turn';
}

/**
 * A stand-in for the model, so the example runs without an API key. It answers the conversation the
 * way a model would for "pay this invoice": read a setting, ask for the transfer, then summarise.
 * It reads only the conversation, so it gives the same answer on every replay.
 */
export function scriptedAssistantTurn(conversation: readonly MessageParam[]): AssistantTurn {
  const firstUser = conversation[0];
  const request = typeof firstUser?.content === 'string' ? firstUser.content : '';
  const reference = /\bINV-[A-Za-z0-9-]{1,40}\b/.exec(request)?.[0] ?? 'INV-0001';
  const results = conversation.flatMap((message) =>
    message.role === 'user' && Array.isArray(message.content)
      ? message.content.filter((block): block is ToolResultBlockParam => block.type === 'tool_result')
      : [],
  );
  const resultFor = (id: string) => results.find((result) => result.tool_use_id === id);
  const regionResult = resultFor('toolu_example_read_config');
  if (!regionResult) {
    return toolUse('Let me check which region the payment goes out from.', {
      id: 'toolu_example_read_config',
      name: 'read_config',
      input: { name: 'region' },
    });
  }
  const transferResult = resultFor('toolu_example_transfer');
  if (!transferResult) {
    const region = textOf(regionResult).match(/"value":"([^"]+)"/)?.[1] ?? 'unknown';
    return toolUse(`The payment region is ${region}. I will request the transfer now; it needs approval.`, {
      id: 'toolu_example_transfer',
      name: 'transfer_funds',
      input: {
        reference,
        from: 'ACME-OPS',
        to: 'SUPPLIER-7',
        amountCents: 125_000,
        currency: 'EUR',
        memo: `Invoice ${reference} (${region})`,
      },
    });
  }
  const summary = transferResult.is_error
    ? `The transfer for ${reference} did not go through: ${textOf(transferResult)}`
    : `Done: 1250.00 EUR was transferred to SUPPLIER-7 for ${reference} after approval.`;
  return { content: [{ type: 'text', text: summary, citations: null }], stop_reason: 'end_turn' };
}

function toolUse(
  text: string,
  call: { id: string; name: string; input: Record<string, unknown> },
): AssistantTurn {
  return {
    content: [
      { type: 'text', text, citations: null },
      { type: 'tool_use', id: call.id, name: call.name, input: call.input, caller: { type: 'direct' } },
    ],
    stop_reason: 'tool_use',
  };
}

function textOf(result: ToolResultBlockParam): string {
  if (typeof result.content === 'string') return result.content;
  return (result.content ?? []).map((block) => (block.type === 'text' ? block.text : '')).join('');
}
