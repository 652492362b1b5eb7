/**
 * The example agent's workflows module. The worker bundles it as a whole, so it exports the
 * `toolCall` workflow the agent's child calls run, the agent itself, and `toolCallChild`, a one-call
 * workflow that shows (and tests) the child entry on its own.
 *
 * Workflow code: import only workflow-safe modules here.
 */
import type { ContentBlockParam, MessageParam } from '@anthropic-ai/sdk/resources/messages';
import { defineQuery, proxyActivities, setHandler } from '@temporalio/workflow';
import { anthropicToolCalls, anthropicToolResultMessage } from '../../src/agent/anthropic.ts';
import { modelResultForRecord } from '../../src/agent/model-messages.ts';
import { mapWithConcurrency, type ToolCallOutcome } from '../../src/agent/run-tool-calls.ts';
import type { CallContext } from '../../src/contracts/call-record.ts';
import {
  type ChildCallOptions,
  type ChildCallOutcome,
  type ChildCallRequest,
  callToolAsChild,
  startToolCallChild,
} from '../../workflows/child-call.ts';
import { createToolCallWorkflow } from '../../workflows/tool-call.ts';
import { exampleCatalog } from '../contracts.ts';
import type { ModelActivities } from './model-activities.ts';

/** The toolCall workflow over the example catalog: the agent's tool calls run as this child. */
export const toolCall = createToolCallWorkflow(exampleCatalog);

export interface ExampleAgentInput {
  /** The application's trusted context for every call the agent makes. */
  readonly context: CallContext;
  readonly userMessage: string;
  readonly maxTurns?: number;
  /** How many tool calls of one turn run at once. */
  readonly maxConcurrency?: number;
}

export interface ExampleAgentState {
  readonly conversation: MessageParam[];
  /** Calls the agent is waiting on, usually for a human approval. */
  readonly waitingOn: string[];
  finished: boolean;
  turns: number;
}

/** The agent's conversation so far and the calls it waits on. */
export const agentStateQuery = defineQuery<ExampleAgentState>('agentState');

const model = proxyActivities<ModelActivities>({
  startToCloseTimeout: '2 minutes',
  retry: { maximumAttempts: 5, initialInterval: '1 second' },
});

/**
 * A durable agent loop: ask the model, run its tool calls as child workflows through toolgate, hand
 * the results back in Anthropic's format, repeat until the model ends its turn. Every step is in
 * history, so a worker crash while a call waits for approval loses nothing: a new worker replays to
 * the same point and the approval, when it comes, resumes the loop.
 */
export async function exampleAgent(input: ExampleAgentInput): Promise<ExampleAgentState> {
  const state: ExampleAgentState = {
    conversation: [{ role: 'user', content: input.userMessage }],
    waitingOn: [],
    finished: false,
    turns: 0,
  };
  setHandler(agentStateQuery, () => state);
  const maxTurns = input.maxTurns ?? 8;

  while (state.turns < maxTurns) {
    state.turns++;
    const turn = await model.nextAssistantTurn({ conversation: state.conversation });
    state.conversation.push({ role: 'assistant', content: turn.content as ContentBlockParam[] });
    const calls = anthropicToolCalls(turn);
    if (calls.length === 0 || turn.stop_reason !== 'tool_use') {
      state.finished = true;
      break;
    }
    const outcomes = await mapWithConcurrency(
      calls,
      input.maxConcurrency ?? 4,
      async (call): Promise<Pick<ToolCallOutcome, 'id' | 'isError' | 'text'>> => {
        // The key comes from the contract (transfer_funds: its reference), never from call.id.
        const started = await startToolCallChild({ tool: call.name, input: call.input }, input.context, {
          catalog: exampleCatalog,
        });
        if (started.record) return { id: call.id, ...modelResultForRecord(started.record) };
        state.waitingOn.push(started.callId);
        try {
          return { id: call.id, ...modelResultForRecord(await started.result()) };
        } finally {
          state.waitingOn.splice(state.waitingOn.indexOf(started.callId), 1);
        }
      },
    );
    state.conversation.push(anthropicToolResultMessage(calls, outcomes));
  }
  return state;
}

/**
 * Runs one tool call as a child workflow and returns how it resolved. It is the workflow twin of
 * `ToolgateClient.call()`, over the example catalog.
 */
export async function toolCallChild(
  request: ChildCallRequest,
  context: CallContext,
  options: Pick<ChildCallOptions, 'duplicates' | 'duplicatePollMs'> = {},
): Promise<ChildCallOutcome> {
  return callToolAsChild(request, context, { catalog: exampleCatalog, ...options });
}
