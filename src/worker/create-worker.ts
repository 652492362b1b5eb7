import { createHash } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve, sep } from 'node:path';
import {
  type BundleOptions,
  bundleWorkflowCode,
  type NativeConnection,
  Worker,
  type WorkerOptions,
} from '@temporalio/worker';
import { defaultTaskQueue } from '../client/connection-settings.ts';
import type { ToolgateActivities } from '../contracts/activity-types.ts';
import { heartbeatIntervalMs } from '../contracts/limits.ts';
import { modulePath } from '../support/module-path.ts';
import { keepModernSyntax } from './bundle-syntax.ts';
import { sharedLibrariesBundlerOptions } from './shared-libraries.ts';
import type { Tracing } from './tracing.ts';

/** Loaded only for a worker that traces: OpenTelemetry's packages cost about 50 ms of start-up. */
const tracingModule = () => import('./tracing.ts');

export interface CreateWorkerOptions {
  readonly connection: NativeConnection;
  readonly namespace?: string;
  readonly taskQueue?: string;
  readonly activities: ToolgateActivities;
  /**
   * A module exporting `toolCall = createToolCallWorkflow(yourCatalog)` (and `toolUndo`, for
   * reversible tools). Give this or `workflowBundle`.
   */
  readonly workflowsPath?: string;
  /** A prebuilt bundle (see `bundleToolgateWorkflows`), to skip bundling on every start. */
  readonly workflowBundle?: { readonly code: string };
  readonly identity?: string;
  /**
   * How long the worker lets its running tools finish once it is told to stop (SIGTERM, or
   * `shutdown()`), having stopped polling; tools still running then are cancelled. Default 5 s;
   * `drainGraceMsFor(catalog)` gives one that covers the catalog's longest tool deadline.
   */
  readonly drainGraceMs?: number;
  /**
   * Load zod and the hash once per workflow thread rather than once per workflow (default true):
   * about 4 ms less worker CPU per call. Shared modules are frozen, so workflow code must not call
   * `z.config()` or clear zod's registry; set false for a catalog that does (see
   * workflows/shared-libraries.ts). Ignored with `workflowBundle`, which was bundled already.
   */
  readonly shareLibraries?: boolean;
  /**
   * OpenTelemetry traces of the calls this worker runs: a span per workflow run and per tool
   * attempt, gate decisions as events (docs/operators.md "Traces"). With a `workflowBundle`, the
   * bundle must have been made with `bundleToolgateWorkflows(path, { tracing: true })`.
   */
  readonly tracing?: Tracing;
  /** Passed through to the Temporal worker: slots, cache size and the like. */
  readonly tuning?: Partial<
    Pick<
      WorkerOptions,
      | 'maxCachedWorkflows'
      | 'maxConcurrentWorkflowTaskExecutions'
      | 'maxConcurrentActivityTaskExecutions'
      | 'maxConcurrentLocalActivityExecutions'
      | 'workflowTaskPollerBehavior'
      | 'activityTaskPollerBehavior'
      | 'shutdownGraceTime'
      | 'stickyQueueScheduleToStartTimeout'
    >
  >;
}

/** Bundles the workflows once; pass the result to several workers or test runs. */
export async function bundleToolgateWorkflows(
  workflowsPath: string,
  options: { shareLibraries?: boolean; tracing?: boolean } = {},
): Promise<{ code: string }> {
  const bundle = await bundleWorkflowCode({
    workflowsPath: await withToolgateWorkflows(workflowsPath),
    logger: quietBundlerLogger,
    ...toolgateBundlerOptions(options.shareLibraries),
    ...(options.tracing
      ? { workflowInterceptorModules: [...(await tracingModule()).tracingWorkflowModules] }
      : {}),
  });
  return { code: bundle.code };
}

/**
 * How toolgate bundles workflow code: modern syntax kept (`bundle-syntax.ts`), and unless
 * `shareLibraries` is false, zod, the hash and the gates loaded once per workflow thread.
 */
export function toolgateBundlerOptions(
  shareLibraries = true,
): Pick<BundleOptions, 'preloadModules' | 'webpackConfigHook'> {
  if (!shareLibraries) return { webpackConfigHook: (config) => keepModernSyntax(findTemporal(config)) };
  const shared = sharedLibrariesBundlerOptions();
  const shareHook = shared.webpackConfigHook;
  return {
    ...shared,
    webpackConfigHook: (config) => keepModernSyntax(findTemporal(shareHook ? shareHook(config) : config)),
  };
}

/**
 * The bundler's entry module sits next to the workflows module, which for toolgate is a generated
 * one among the system's temporary files (`withToolgateWorkflows`): the Temporal packages it
 * imports are found in the node_modules folder toolgate itself resolves them from.
 */
const temporalModules = (() => {
  const entry = createRequire(import.meta.url).resolve('@temporalio/workflow');
  const marker = `${sep}node_modules${sep}`;
  return entry.slice(0, entry.lastIndexOf(marker) + marker.length - 1);
})();

function findTemporal(config: Parameters<NonNullable<BundleOptions['webpackConfigHook']>>[0]) {
  return {
    ...config,
    resolve: {
      ...config.resolve,
      modules: [...(config.resolve?.modules ?? ['node_modules']), temporalModules],
    },
  };
}

/**
 * Assembles a toolgate worker. More workers on the same task queue, on any number of machines,
 * is how toolgate scales: Temporal spreads the calls.
 */
export async function createWorker(options: CreateWorkerOptions): Promise<Worker> {
  if (!options.workflowBundle && !options.workflowsPath) {
    throw new TypeError(
      'createWorker needs workflowsPath (a module that exports toolCall = createToolCallWorkflow(catalog)) or a workflowBundle.',
    );
  }
  const tracing = options.tracing ? await tracingModule() : undefined;
  if (tracing && options.workflowBundle && !tracing.bundleTraces(options.workflowBundle.code)) {
    throw new TypeError(
      'createWorker got tracing and a workflow bundle made without it: workflow spans would be missing. ' +
        'Make the bundle with bundleToolgateWorkflows(workflowsPath, { tracing: true }), or pass workflowsPath instead.',
    );
  }
  return Worker.create({
    connection: options.connection,
    namespace: options.namespace ?? 'default',
    taskQueue: options.taskQueue ?? defaultTaskQueue,
    ...(options.workflowBundle
      ? { workflowBundle: options.workflowBundle }
      : {
          workflowsPath: await withToolgateWorkflows(options.workflowsPath!),
          bundlerOptions: toolgateBundlerOptions(options.shareLibraries),
          // Temporal's tracing plugin adds its own module; the gate events come with it.
          ...(tracing ? { interceptors: { workflowModules: [tracing.gateEventsModule] } } : {}),
        }),
    activities: options.activities as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>,
    // Cancellation reaches an activity only with a heartbeat response: the throttle matches the
    // executor's heartbeat, three requests per second per running tool (docs/design.md "Liveness
    // and cancellation"); the SDK's default would wait up to 0.8 × the heartbeat timeout.
    maxHeartbeatThrottleInterval: heartbeatIntervalMs,
    defaultHeartbeatThrottleInterval: heartbeatIntervalMs,
    shutdownGraceTime: options.drainGraceMs ?? 5_000,
    ...(options.identity ? { identity: options.identity } : {}),
    ...(tracing && options.tracing ? { plugins: [tracing.tracingPlugin(options.tracing)] } : {}),
    ...options.tuning,
  });
}

const admissionEntityModule = modulePath('../../workflows/admission-entity', import.meta.url);

/**
 * The module the bundler starts from: the application's workflows module, plus toolgate's own
 * workflows (the admission entities, docs/design.md "Admission"), so that every toolgate worker
 * serves them on its task queue and an application exports nothing more. Written next to the
 * system's temporary files under a name taken from its content.
 */
async function withToolgateWorkflows(workflowsPath: string): Promise<string> {
  const source =
    `export * from ${JSON.stringify(resolve(workflowsPath))};\n` +
    `export { toolgateAdmission } from ${JSON.stringify(admissionEntityModule)};\n`;
  const digest = createHash('sha256').update(source).digest('hex').slice(0, 16);
  const entry = join(tmpdir(), `toolgate-workflows-${digest}.mjs`);
  await writeFile(entry, source);
  return entry;
}

const quietBundlerLogger = {
  trace() {},
  debug() {},
  info() {},
  warn(message: string, meta?: Record<string, unknown>) {
    process.stderr.write(`[workflow bundler] ${message} ${meta ? JSON.stringify(meta) : ''}\n`);
  },
  error(message: string, meta?: Record<string, unknown>) {
    process.stderr.write(`[workflow bundler] ${message} ${meta ? JSON.stringify(meta) : ''}\n`);
  },
  log() {},
};
