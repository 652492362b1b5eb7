/**
 * `toolgate/worker`: the side that does the work. Build a Temporal worker that runs the gates and
 * your tools' implementations, with the executor's deadline, heartbeats and AbortSignal, and the
 * helpers that make I/O safe (sandboxed paths, safe URLs).
 *
 * ```ts
 * import { NativeConnection } from '@temporalio/worker';
 * import { createActivities, createWorker, loadPublicKey } from 'toolgate/worker';
 * import { refundOrderTool } from './tools.js';
 *
 * const worker = await createWorker({
 *   connection: await NativeConnection.connect({ address: 'localhost:7233' }),
 *   workflowsPath: new URL('./workflows.js', import.meta.url).pathname,
 *   activities: createActivities({
 *     tools: [refundOrderTool],
 *     policy: { allow: ['refund_order'] },
 *     approvalPublicKeys: [await loadPublicKey('approval-public.pem')],
 *   }),
 * });
 * await worker.run();
 * ```
 */

export type {
  AdmissionGate,
  CreateActivitiesOptions,
  GateContext,
  GateRequest,
  OperatorLogger,
  ToolPolicy,
} from '../../activities/create-activities.ts';
export { createActivities } from '../../activities/create-activities.ts';
export { createToolCallLookupActivities } from '../../activities/lookup-tool-call.ts';
export type { LoadGateOptions } from '../../activities/safety/admission-gates.ts';
export {
  createBreakerGate,
  createLoadGate,
  createQuotaGate,
} from '../../activities/safety/admission-gates.ts';
export type {
  SafeFetchResponse,
  SafeUrlGuard,
  SafeUrlOptions,
  VettedUrl,
} from '../../activities/safety/safe-url.ts';
export { addressProblem, safeUrl } from '../../activities/safety/safe-url.ts';
export type { Sandbox, SandboxOptions } from '../../activities/safety/sandbox.ts';
export { sandboxedPath } from '../../activities/safety/sandbox.ts';
export type {
  CompensationExecution,
  CompensationImplementation,
  ToolExecution,
  ToolImplementation,
} from '../../activities/tool-implementation.ts';
export {
  implementCompensation,
  implementTool,
  ToolDenied,
  ToolError,
} from '../../activities/tool-implementation.ts';
export type { ApprovalKeyFiles } from '../client/approval-signer.ts';
export { loadOrCreateApprovalKeys, loadPublicKey } from '../client/approval-signer.ts';
export { defaultTaskQueue } from '../client/connection-settings.ts';
export type { ToolCallLookupActivities, ToolgateActivities } from '../contracts/activity-types.ts';
export type { AllowlistPolicy } from '../policy/allowlist.ts';
export type { QuotaLimit, QuotaPolicy } from '../policy/quotas.ts';
export type { BreakerSettings } from '../policy/scope-state.ts';
export type { CreateWorkerOptions } from './create-worker.ts';
export { bundleToolgateWorkflows, createWorker, toolgateBundlerOptions } from './create-worker.ts';
export { installRuntimeLogging } from './runtime-logging.ts';
export type { Tracing } from './tracing.ts';
export { tracingClientInterceptor } from './tracing.ts';
export type { TracingFromEnvironment } from './tracing-environment.ts';
export { tracingFromEnvironment } from './tracing-environment.ts';
