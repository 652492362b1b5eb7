// The public API of toolgate. Everything a user calls is listed here by name; nothing is
// re-exported wholesale, so an internal rename never leaks into users' code.

export type {
  AdmissionGate,
  CreateActivitiesOptions,
  OperatorLogger,
  ToolPolicy,
} from '../activities/create-activities.ts';
export { createActivities } from '../activities/create-activities.ts';
export type { QuotaGate } from '../activities/safety/admission-gates.ts';
export { createBreakerGate, createQuotaGate } from '../activities/safety/admission-gates.ts';
export type {
  SafeFetchResponse,
  SafeUrlGuard,
  SafeUrlOptions,
  VettedUrl,
} from '../activities/safety/safe-url.ts';
export { addressProblem, safeUrl } from '../activities/safety/safe-url.ts';
export type { Sandbox, SandboxOptions } from '../activities/safety/sandbox.ts';
export { sandboxedPath } from '../activities/safety/sandbox.ts';
export type {
  CompensationExecution,
  CompensationImplementation,
  ToolExecution,
  ToolImplementation,
} from '../activities/tool-implementation.ts';
export {
  implementCompensation,
  implementTool,
  ToolDenied,
  ToolError,
} from '../activities/tool-implementation.ts';
export type { ExampleToolOptions } from '../activities/tools/example-tools.ts';
export {
  createExampleActivities,
  createExampleTools,
  exampleToolPaths,
} from '../activities/tools/example-tools.ts';
export type { ToolCallRequest, ToolCallWorkflowOptions } from '../workflows/tool-call.ts';
export { createToolCallWorkflow } from '../workflows/tool-call.ts';
export type { ToolUndoRequest, ToolUndoResult } from '../workflows/tool-undo.ts';
export { createToolUndoWorkflow } from '../workflows/tool-undo.ts';
// The agent adapters (Anthropic, OpenAI, MCP, parallel calls); the AI SDK one stays in
// src/agent/ai-sdk.ts, so only its users load `ai`.
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
  createToolCallLookupActivities,
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
export { ExitCode } from './cli/output.ts';
export type { ApprovalKeyFiles, ApprovalSigner } from './client/approval-signer.ts';
export {
  createApprovalSigner,
  decisionClaims,
  loadOrCreateApprovalKeys,
  loadPublicKey,
} from './client/approval-signer.ts';
export {
  defaultTaskQueue,
  externalClusterRequested,
  loadExternalClusterConfig,
} from './client/connection-settings.ts';
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
export { buildListQuery, parseSince, ToolgateOperations } from './client/operations.ts';
export type {
  CallRequest,
  DecisionOptions,
  DecisionOutcome,
  StartDisposition,
  StartedCall,
  ToolgateClientOptions,
} from './client/toolgate-client.ts';
export {
  ClusterNotReadyError,
  NoWorkerAnsweredError,
  ToolgateClient,
  ToolgateUsageError,
} from './client/toolgate-client.ts';
export type { DecisionClaims, SignedDecision } from './contracts/approval.ts';
export { callId, idempotencyKeyPattern } from './contracts/call-id.ts';
export type {
  ApprovalState,
  CallContext,
  CallRecord,
  PrincipalKind,
  RefusedDecision,
  ReplayInfo,
  Transition,
  UndoInfo,
} from './contracts/call-record.ts';
export { CallEffect, CallStatus, isTerminalStatus, terminalStatuses } from './contracts/call-record.ts';
export { canonicalJson } from './contracts/canonical-json.ts';
export type {
  DefineToolOptions,
  ToolApprovalSettings,
  ToolCatalog,
  ToolContract,
  ToolRetryOptions,
} from './contracts/define-tool.ts';
export { createCatalog, defineTool, lookupTool } from './contracts/define-tool.ts';
export { callFingerprint, sha256Hex } from './contracts/fingerprint.ts';
export type { PayloadLimits } from './contracts/limits.ts';
export { checkInputLimits, defaultPayloadLimits } from './contracts/limits.ts';
export type { ReasonCodeInfo } from './contracts/reason-codes.ts';
export { ReasonCode, reasonCodes, retryableReasonCodes } from './contracts/reason-codes.ts';
export type { ParsedSafeUrl, SafeUrlRules } from './contracts/safe-url.ts';
export { hostMatches, parseSafeUrl, safeUrlProblem, safeUrlSchema } from './contracts/safe-url.ts';
export { relativePathProblem, sandboxedRelativePath } from './contracts/sandboxed-path.ts';
export { searchAttributeKeys } from './contracts/search-attributes.ts';
export { SideEffectTier, tierRequiresKey } from './contracts/tier.ts';
export type { DevServer, DevServerOptions, FoundCli } from './dev/index.ts';
export { DatabaseInUseError, findTemporalCli, startDevServer } from './dev/index.ts';
export type { Embedded, EmbeddedOptions } from './embedded.ts';
export { startEmbedded } from './embedded.ts';
export type { ApproverDirectory, InboxApprover } from './inbox/approver-tokens.ts';
export { createApproverDirectory, loadOrCreateApproverDirectory } from './inbox/approver-tokens.ts';
export type { InboxOptions, RunningInbox } from './inbox/inbox-app.ts';
export { createInboxApp, mayDecide, startInbox } from './inbox/inbox-app.ts';
export { renderOverviewSvg, summarizeCalls } from './inbox/overview-chart.ts';
export type { AllowlistPolicy } from './policy/allowlist.ts';
export type { CircuitBreakerOptions } from './policy/circuit-breaker.ts';
export { CircuitBreaker, CircuitState } from './policy/circuit-breaker.ts';
export type { QuotaLimit, QuotaPolicy, QuotaVerdict } from './policy/quotas.ts';
export { QuotaLedger } from './policy/quotas.ts';
export { exampleAllowlist, exampleCatalog } from './tools/example-contracts.ts';
export type { CreateWorkerOptions } from './worker/create-worker.ts';
export {
  bundleToolgateWorkflows,
  createWorker,
  defaultWorkflowsPath,
  toolgateBundlerOptions,
} from './worker/create-worker.ts';
export { installRuntimeLogging } from './worker/runtime-logging.ts';
