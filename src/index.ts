/**
 * `toolgate`: the caller's side. Send tool calls through the gates with `ToolgateClient`, operate on
 * them with `ToolgateOperations`, and answer a model's tool calls with the Anthropic, OpenAI and
 * MCP adapters. Contracts come from `toolgate/contracts`, workers from `toolgate/worker`, workflow
 * code from `toolgate/workflow`, and the Vercel AI SDK adapter from `toolgate/ai-sdk`.
 *
 * ```ts
 * import { Client, Connection } from '@temporalio/client';
 * import { ToolgateClient } from 'toolgate';
 * import { catalog } from './contracts.js';
 *
 * const connection = await Connection.connect({ address: 'localhost:7233' });
 * const toolgate = new ToolgateClient({ client: new Client({ connection }), catalog });
 * const record = await toolgate.call(
 *   { tool: 'refund_order', input: { orderId: 'ord_123', reason: null } },
 *   { tenant: 'acme', principal: 'support-agent', principalKind: 'agent' },
 * );
 * console.log(record.status, record.effect, record.output);
 * ```
 *
 * Every name is listed here explicitly; nothing is re-exported wholesale, so an internal rename
 * never leaks into users' code.
 */

export type {
  AnthropicAssistantMessage,
  AnthropicToolResultMessage,
  AnthropicTurnResult,
  JsonSchema,
  KeyFunction,
  McpLogEvent,
  McpProtocolVersion,
  McpServer,
  McpServerOptions,
  McpToolResult,
  ModelToolCall,
  ModelToolResult,
  OpenAIChatAssistantMessage,
  OpenAIChatTurnResult,
  OpenAIResponsesTurnResult,
  RunToolCallsOptions,
  ToolCallOutcome,
  ToolCallState,
  ToolDefinitionOptions,
  ToolgateCaller,
} from './agent/index.ts';
export {
  ApprovalMode,
  answerAnthropicToolUse,
  answerOpenAIChatToolCalls,
  answerOpenAIResponsesFunctionCalls,
  anthropicToolCalls,
  anthropicToolResultMessage,
  anthropicTools,
  awaitPendingCall,
  defaultMaximumMessageBytes,
  deriveKey,
  McpErrorCode,
  maximumResultCharacters,
  mcpProtocolVersions,
  modelDescription,
  modelErrorText,
  modelResultForPending,
  modelResultForRecord,
  openAIChatToolCalls,
  openAIChatToolMessages,
  openAIChatTools,
  openAIResponsesOutputItems,
  openAIResponsesToolCalls,
  openAIResponsesTools,
  runOneToolCall,
  runToolCalls,
  scrubForModel,
  serveMcp,
  strictCompatibilityProblems,
  strictInputSchema,
} from './agent/index.ts';
export type { ApprovalKeyFiles, ApprovalSigner } from './client/approval-signer.ts';
export {
  createApprovalSigner,
  decisionClaims,
  loadOrCreateApprovalKeys,
  loadPublicKey,
} from './client/approval-signer.ts';
export { defaultTaskQueue } from './client/connection-settings.ts';
export type {
  BulkReplayItem,
  BulkReplayOptions,
  BulkReplayProgress,
  BulkReplaySummary,
  CallSummary,
  ListFilters,
  ReplayOptions,
  ReplayOutcome,
  ToolgateOperationsOptions,
  UndoOptions,
  UndoOutcome,
} from './client/operations.ts';
export { NotACallError, ToolgateOperations, UnknownRunError } from './client/operations.ts';
export type {
  CallRequest,
  CancelReceipt,
  DecisionOptions,
  DecisionOutcome,
  ResultOptions,
  StartDisposition,
  StartedCall,
  StartOptions,
  ToolgateClientOptions,
} from './client/toolgate-client.ts';
export {
  ClusterNotReadyError,
  NoWorkerAnsweredError,
  ToolgateClient,
  ToolgateUsageError,
} from './client/toolgate-client.ts';
export type {
  CallContext,
  CallRecord,
  PrincipalKind,
  ReasonCodeInfo,
  ToolCatalog,
  ToolContract,
  Transition,
} from './contracts/index.ts';
export {
  CallEffect,
  CallStatus,
  isTerminalStatus,
  ReasonCode,
  reasonCodes,
  retryableReasonCodes,
  SideEffectTier,
} from './contracts/index.ts';
