import type { ContentBlock, MessageParam } from '@anthropic-ai/sdk/resources/messages';
import { ApplicationFailure } from '@temporalio/common';
import { anthropicTools } from '../../src/agent/tool-definitions.ts';
import { exampleCatalog } from '../contracts.ts';
import { type AssistantTurn, scriptedAssistantTurn } from './scripted-model.ts';

/** The tools the example agent may use. */
export const exampleAgentTools = ['read_config', 'transfer_funds'] as const;

/** The model call, as an activity: its answer is recorded in history, so a replay never asks again. */
export interface ModelActivities {
  nextAssistantTurn(request: { readonly conversation: MessageParam[] }): Promise<AssistantTurn>;
}

const systemPrompt =
  'You are a payments assistant. Use the tools to look up settings and to request transfers. ' +
  'A transfer needs human approval; if a tool result says it is pending, wait for the outcome.';

/**
 * The scripted model, or the real Anthropic API when `apiKey` is given (optional, not tested; set
 * ANTHROPIC_MODEL to choose the model).
 */
export function createModelActivities(options: { apiKey?: string; model?: string } = {}): ModelActivities {
  return {
    async nextAssistantTurn({ conversation }) {
      if (!options.apiKey) return scriptedAssistantTurn(conversation);
      const response = await fetch('https://api.anthropic.com/v1/messages', {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-api-key': options.apiKey,
          'anthropic-version': '2023-06-01',
        },
        body: JSON.stringify({
          model: options.model ?? 'claude-sonnet-4-5',
          max_tokens: 1024,
          system: systemPrompt,
          tools: anthropicTools(exampleCatalog, { include: exampleAgentTools }),
          messages: conversation,
        }),
      });
      if (!response.ok) {
        // 429 and 5xx are worth retrying; anything else is a request the API will keep refusing.
        const retryable = response.status === 429 || response.status >= 500;
        const message = `The model API answered ${response.status}.`;
        throw retryable
          ? ApplicationFailure.retryable(message, 'ModelApiError')
          : ApplicationFailure.nonRetryable(message, 'ModelApiError');
      }
      const body = (await response.json()) as { content: ContentBlock[]; stop_reason: string };
      return {
        content: body.content,
        stop_reason: body.stop_reason === 'tool_use' ? 'tool_use' : 'end_turn',
      };
    },
  };
}
