/**
 * Agent adapters: tool definitions for models, tool_use → tool_result for Anthropic and OpenAI, an
 * MCP server and bounded parallel calls. The AI SDK adapter is its own entry (`toolgate/ai-sdk`), so
 * only its users load `ai`; the lookup activity for agents written as workflows is a worker's
 * (`toolgate/worker`).
 */

export type {
  AnthropicAssistantMessage,
  AnthropicToolResultMessage,
  AnthropicTurnResult,
} from './anthropic.ts';
export { answerAnthropicToolUse, anthropicToolCalls, anthropicToolResultMessage } from './anthropic.ts';
export type {
  McpLogEvent,
  McpProtocolVersion,
  McpServer,
  McpServerOptions,
  McpToolResult,
} from './mcp.ts';
export { defaultMaximumMessageBytes, McpErrorCode, mcpProtocolVersions, serveMcp } from './mcp.ts';
export type { ModelToolResult } from './model-messages.ts';
export {
  maximumResultCharacters,
  modelErrorText,
  modelResultForPending,
  modelResultForRecord,
  scrubForModel,
} from './model-messages.ts';
export type {
  OpenAIChatAssistantMessage,
  OpenAIChatTurnResult,
  OpenAIResponsesTurnResult,
} from './openai.ts';
export {
  answerOpenAIChatToolCalls,
  answerOpenAIResponsesFunctionCalls,
  openAIChatToolCalls,
  openAIChatToolMessages,
  openAIResponsesOutputItems,
  openAIResponsesToolCalls,
} from './openai.ts';
export type {
  KeyFunction,
  ModelToolCall,
  RunToolCallsOptions,
  ToolCallOutcome,
  ToolCallState,
  ToolgateCaller,
} from './run-tool-calls.ts';
export {
  ApprovalMode,
  awaitPendingCall,
  deriveKey,
  mapWithConcurrency,
  runOneToolCall,
  runToolCalls,
} from './run-tool-calls.ts';
export type { JsonSchema, ToolDefinitionOptions } from './tool-definitions.ts';
export {
  anthropicTools,
  modelDescription,
  openAIChatTools,
  openAIResponsesTools,
  strictCompatibilityProblems,
  strictInputSchema,
} from './tool-definitions.ts';
