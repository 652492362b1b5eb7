import type {
  ChatCompletionAssistantMessageParam,
  ChatCompletionMessage,
  ChatCompletionMessageToolCall,
  ChatCompletionToolMessageParam,
} from 'openai/resources/chat/completions';
import type { ResponseFunctionToolCall, ResponseInputItem } from 'openai/resources/responses/responses';
import {
  type ModelToolCall,
  outcomesInCallOrder,
  type RunToolCallsOptions,
  runToolCalls,
  type ToolCallOutcome,
} from './run-tool-calls.ts';

/** An assistant message from Chat Completions, as returned or as kept in the history. */
export type OpenAIChatAssistantMessage = Pick<
  ChatCompletionMessage | ChatCompletionAssistantMessageParam,
  'tool_calls'
>;

export interface OpenAIChatTurnResult {
  /** One `tool` message per tool call, in call order. Append them right after the assistant message. */
  readonly messages: ChatCompletionToolMessageParam[];
  readonly outcomes: ToolCallOutcome[];
}

export interface OpenAIResponsesTurnResult {
  /** One `function_call_output` item per `function_call`, in call order. */
  readonly items: ResponseInputItem.FunctionCallOutput[];
  readonly outcomes: ToolCallOutcome[];
}

/** The tool calls of a Chat Completions assistant message, with their JSON arguments parsed. */
export function openAIChatToolCalls(message: OpenAIChatAssistantMessage): ModelToolCall[] {
  return (message.tool_calls ?? []).map((call: ChatCompletionMessageToolCall) => {
    if (call.type === 'function') {
      // Typed as always there, but a message kept in a history or built by hand may lack it.
      const fn = (call as { readonly function?: { readonly name?: unknown; readonly arguments?: unknown } })
        .function;
      return parsedCall(call.id, fn?.name, fn?.arguments);
    }
    // A custom tool, or a kind of call newer than this adapter: answered, never run.
    const named = call as { readonly custom?: { readonly name?: unknown } };
    return {
      id: call.id,
      name: typeof named.custom?.name === 'string' ? named.custom.name : '',
      input: undefined,
      inputError: 'Only function tools with JSON arguments are served here; call a function tool instead.',
    };
  });
}

/** The `function_call` items of a Responses API output, with their JSON arguments parsed. */
export function openAIResponsesToolCalls(
  items: ReadonlyArray<{ readonly type: string } | ResponseFunctionToolCall>,
): ModelToolCall[] {
  return items
    .filter((item): item is ResponseFunctionToolCall => item.type === 'function_call')
    .map((item) => parsedCall(item.call_id, item.name, item.arguments));
}

/**
 * Runs a Chat Completions assistant message's tool calls through toolgate and returns the `tool`
 * messages that answer them: every call answered, ids matched, in call order.
 */
export async function answerOpenAIChatToolCalls(
  message: OpenAIChatAssistantMessage,
  options: RunToolCallsOptions,
): Promise<OpenAIChatTurnResult> {
  const calls = openAIChatToolCalls(message);
  const outcomes = await runToolCalls(calls, options);
  return { messages: openAIChatToolMessages(calls, outcomes), outcomes };
}

/**
 * Runs the `function_call` items of a Responses API output through toolgate and returns the
 * `function_call_output` items for the next request's input.
 */
export async function answerOpenAIResponsesFunctionCalls(
  output: ReadonlyArray<{ readonly type: string } | ResponseFunctionToolCall>,
  options: RunToolCallsOptions,
): Promise<OpenAIResponsesTurnResult> {
  const calls = openAIResponsesToolCalls(output);
  const outcomes = await runToolCalls(calls, options);
  return { items: openAIResponsesOutputItems(calls, outcomes), outcomes };
}

/** Builds the `tool` messages from calls and outcomes, matched by id. Pure. */
export function openAIChatToolMessages(
  calls: readonly Pick<ModelToolCall, 'id'>[],
  outcomes: readonly Pick<ToolCallOutcome, 'id' | 'text'>[],
): ChatCompletionToolMessageParam[] {
  const paired = outcomesInCallOrder(calls, outcomes);
  return calls.map((call, index) => ({
    role: 'tool',
    tool_call_id: call.id,
    content: paired[index]?.text ?? missingResultText,
  }));
}

/** Builds the `function_call_output` items from calls and outcomes, matched by id. Pure. */
export function openAIResponsesOutputItems(
  calls: readonly Pick<ModelToolCall, 'id'>[],
  outcomes: readonly Pick<ToolCallOutcome, 'id' | 'text'>[],
): ResponseInputItem.FunctionCallOutput[] {
  const paired = outcomesInCallOrder(calls, outcomes);
  return calls.map((call, index) => ({
    type: 'function_call_output',
    call_id: call.id,
    output: paired[index]?.text ?? missingResultText,
  }));
}

const missingResultText =
  'Error TOOL_FAILED: No result was produced for this call. Retrying the same call may help.';

function parsedCall(id: string, name: unknown, argumentsText: unknown): ModelToolCall {
  // A name that is not a string reaches runOneToolCall as it is, which answers it as such.
  const toolName = name as string;
  if (argumentsText !== undefined && typeof argumentsText !== 'string') {
    return {
      id,
      name: toolName,
      input: undefined,
      inputError:
        'The arguments were not JSON text. Send a single JSON object, as a string, that matches the tool schema.',
    };
  }
  try {
    const input: unknown =
      argumentsText === undefined || argumentsText.trim() === '' ? {} : JSON.parse(argumentsText);
    return { id, name: toolName, input };
  } catch {
    return {
      id,
      name: toolName,
      input: undefined,
      inputError:
        'The arguments were not valid JSON. Send a single JSON object that matches the tool schema.',
    };
  }
}
