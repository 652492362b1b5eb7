import type {
  ContentBlock,
  ContentBlockParam,
  TextBlockParam,
  ToolResultBlockParam,
  ToolUseBlock,
  ToolUseBlockParam,
} from '@anthropic-ai/sdk/resources/messages';
import {
  type ModelToolCall,
  outcomesInCallOrder,
  type RunToolCallsOptions,
  runToolCalls,
  type ToolCallOutcome,
} from './run-tool-calls.ts';

/** An assistant message as the API returned it (`Message`) or as it sits in the history (`MessageParam`). */
export interface AnthropicAssistantMessage {
  readonly content: string | ReadonlyArray<ContentBlock | ContentBlockParam>;
}

/** A `user` message made of tool results (and optional trailing text); assignable to `MessageParam`. */
export interface AnthropicToolResultMessage {
  readonly role: 'user';
  content: Array<ToolResultBlockParam | TextBlockParam>;
}

export interface AnthropicTurnResult {
  /** The next `user` message: one tool_result per tool_use, in call order, before any text. */
  readonly message: AnthropicToolResultMessage;
  readonly outcomes: ToolCallOutcome[];
}

/**
 * The client tool calls in an assistant message, in order. Server tools (`server_tool_use`) run at
 * Anthropic and are answered there, so they are not included.
 */
export function anthropicToolCalls(message: AnthropicAssistantMessage): ModelToolCall[] {
  if (typeof message.content === 'string') return [];
  return message.content
    .filter((block): block is ToolUseBlock | ToolUseBlockParam => block.type === 'tool_use')
    .map((block) => ({ id: block.id, name: block.name, input: block.input }));
}

/**
 * Runs every tool_use of an assistant message through toolgate and builds the next user message.
 * The format rules hold whatever the outcomes: every tool_use is answered, the tool_result blocks
 * come first, their ids match, and they follow the order of the calls.
 */
export async function answerAnthropicToolUse(
  message: AnthropicAssistantMessage,
  options: RunToolCallsOptions & { readonly followUpText?: string },
): Promise<AnthropicTurnResult> {
  const calls = anthropicToolCalls(message);
  const outcomes = await runToolCalls(calls, options);
  return { message: anthropicToolResultMessage(calls, outcomes, options.followUpText), outcomes };
}

/**
 * Builds the user message from calls and their outcomes. Pure: agent workflows use it too. Outcomes
 * are matched by position, then by id, so their order does not matter (see `outcomesInCallOrder`);
 * a call without one is answered with an error
 * rather than left out, because an unanswered tool_use makes the next request fail.
 */
export function anthropicToolResultMessage(
  calls: readonly Pick<ModelToolCall, 'id'>[],
  outcomes: readonly Pick<ToolCallOutcome, 'id' | 'isError' | 'text'>[],
  followUpText?: string,
): AnthropicToolResultMessage {
  const paired = outcomesInCallOrder(calls, outcomes);
  const content: Array<ToolResultBlockParam | TextBlockParam> = calls.map((call, index) => {
    const outcome = paired[index];
    return {
      type: 'tool_result',
      tool_use_id: call.id,
      content:
        outcome?.text ??
        'Error TOOL_FAILED: No result was produced for this call. Retrying the same call may help.',
      ...(outcome && !outcome.isError ? {} : { is_error: true }),
    };
  });
  // Text after the results is allowed; text before them is not.
  if (followUpText) content.push({ type: 'text', text: followUpText });
  return { role: 'user', content };
}
