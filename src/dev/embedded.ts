import type { KeyObject } from 'node:crypto';
import { join, resolve } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, type Worker } from '@temporalio/worker';
import {
  type ApprovalSigner,
  createApprovalSigner,
  loadOrCreateApprovalKeys,
  loadPublicKey,
} from '../client/approval-signer.ts';
import { defaultTaskQueue } from '../client/connection-settings.ts';
import { ToolgateClient } from '../client/toolgate-client.ts';
import type { ToolgateActivities } from '../contracts/activity-types.ts';
import type { ToolCatalog } from '../contracts/define-tool.ts';
import { untilAborted } from '../support/until-aborted.ts';
import { createWorker } from '../worker/create-worker.ts';
import { drainGraceMsFor } from '../worker/drain-grace.ts';
import { installRuntimeLogging, type MetricsEndpoint } from '../worker/runtime-logging.ts';
import type { Tracing } from '../worker/tracing.ts';
import { tracesRequested } from '../worker/tracing-environment.ts';
import { type DevServer, startDevServer } from './dev-server.ts';
import { findTemporalCli } from './find-cli.ts';

/**
 * The tools an embedded toolgate serves: the contracts its client checks calls against, the
 * workflows module its worker bundles, and the activities that worker registers.
 */
export interface EmbeddedToolSet {
  /** The catalog the workflows module was built over. */
  readonly catalog: ToolCatalog;
  /** A module exporting `toolCall` (and `toolUndo`) built with `createToolCallWorkflow(catalog)`. */
  readonly workflowsPath: string;
  /** How long a stopping worker lets running tools finish; default `drainGraceMsFor(catalog)`. */
  readonly drainGraceMs?: number;
  /**
   * Builds the worker's activities once the data directory and the approval signer's public key
   * are known; called only when a worker is started.
   */
  activities(context: {
    readonly dataDir: string;
    readonly approvalPublicKeys: readonly KeyObject[];
  }): ToolgateActivities | Promise<ToolgateActivities>;
}

export interface EmbeddedOptions {
  /** The tools to serve. */
  readonly tools: EmbeddedToolSet;
  /** Where state lives: the SQLite file, approval keys, the tools' own data. Default `.toolgate`. */
  readonly dataDir?: string;
  readonly taskQueue?: string;
  /**
   * An existing cluster to join (see `resolveConnection`); no server is started. Without it a
   * local dev server is started on `<dataDir>/temporal.db`.
   */
  readonly cluster?: {
    readonly address: string;
    readonly namespace: string;
    readonly connectionOptions?: Record<string, unknown>;
  };
  /** Start a worker in this process (default true). */
  readonly worker?: boolean;
  readonly env?: NodeJS.ProcessEnv;
  /** Preferred ports for the embedded server. */
  readonly grpcPort?: number;
  readonly uiPort?: number;
  readonly headless?: boolean;
  readonly onProgress?: (line: string) => void;
  /** Ask for eager workflow start (the client shares the worker's process). */
  readonly eagerStart?: boolean;
  /**
   * Serve Prometheus metrics here (docs/operators.md "Metrics"). Taken only by the first runtime
   * of the process; a port in use is reported through `onProgress` and the worker runs without.
   */
  readonly metrics?: MetricsEndpoint;
  /**
   * Interrupts the start (a Ctrl-C during start-up): everything started so far is stopped, a dev
   * server gracefully, and the promise rejects with the signal's reason.
   */
  readonly signal?: AbortSignal;
}

export interface Embedded {
  readonly client: ToolgateClient;
  readonly temporal: Client;
  readonly address: string;
  readonly namespace: string;
  /** The embedded dev server, when toolgate started one. */
  readonly server?: DevServer;
  readonly uiUrl?: string;
  readonly dbFile?: string;
  readonly worker?: Worker;
  readonly signer?: ApprovalSigner;
  readonly dataDir: string;
  /** Where this process serves Prometheus metrics, when it does. */
  readonly metricsUrl?: string;
  /** Resolves when the worker stops (or never, without one). */
  readonly running: Promise<void>;
  stop(): Promise<void>;
}

/**
 * The embedded default. Without a `cluster` it starts a local Temporal dev server (state in a
 * SQLite file, so it survives restarts) and a worker for the given tools; with one it joins that
 * cluster instead and starts no server.
 */
export async function startEmbedded(options: EmbeddedOptions): Promise<Embedded> {
  const telemetry = installRuntimeLogging(options.metrics ? { metrics: options.metrics } : {});
  if (telemetry.metricsProblem) {
    (options.onProgress ?? ((line: string) => process.stderr.write(`${line}\n`)))(telemetry.metricsProblem);
  }
  // What has been started so far, undone in reverse when the start fails or is interrupted: a
  // half-started toolgate must not leave a server running, or hold the process open on a
  // connection that nothing will close.
  const undo: Array<() => Promise<unknown>> = [];
  try {
    const embedded = await startEmbeddedParts(options, undo);
    return telemetry.metricsUrl ? { ...embedded, metricsUrl: telemetry.metricsUrl } : embedded;
  } catch (error) {
    for (const action of undo.reverse()) await action().catch(() => undefined);
    throw options.signal?.aborted ? options.signal.reason : error;
  }
}

async function startEmbeddedParts(
  options: EmbeddedOptions,
  undo: Array<() => Promise<unknown>>,
): Promise<Embedded> {
  const { signal } = options;
  signal?.throwIfAborted();
  const env = options.env ?? process.env;
  const dataDir = resolve(options.dataDir ?? '.toolgate');
  const taskQueue = options.taskQueue ?? defaultTaskQueue;
  const progress = options.onProgress ?? ((line: string) => process.stderr.write(`${line}\n`));

  // OpenTelemetry's variables turn traces on (docs/operators.md "Traces"); spans still buffered are
  // sent when toolgate stops.
  const tracing = tracesRequested(env)
    ? await (await import('../worker/tracing-environment.ts')).tracingFromEnvironment('toolgate', env)
    : undefined;
  if (tracing) undo.push(tracing.shutdown);
  const cluster = await openCluster(options, { env, dataDir, progress }, undo);
  const { server, address, namespace, connectionOptions } = cluster;
  const { publicKey, signer } = await loadApprovalKeys(env, dataDir);

  const connection = await untilAborted(
    Connection.connect({ ...connectionOptions, address }),
    signal,
    (opened) => opened.close(),
  );
  undo.push(() => connection.close());
  const temporal = new Client({
    connection,
    namespace,
    ...(tracing
      ? {
          interceptors: {
            workflow: [(await import('../worker/tracing.ts')).tracingClientInterceptor(tracing)],
          },
        }
      : {}),
  });
  const client = new ToolgateClient({
    client: temporal,
    taskQueue,
    catalog: options.tools.catalog,
    ...(signer ? { signer } : {}),
    ...(options.eagerStart ? { eagerStart: true } : {}),
  });

  const started =
    (options.worker ?? true)
      ? await startToolWorker(options, { cluster, taskQueue, dataDir, publicKey, tracing }, undo)
      : undefined;
  const worker = started?.worker;
  const running = started?.running ?? Promise.resolve();

  let stopped = false;
  return {
    client,
    temporal,
    address,
    namespace,
    ...(server ? { server, dbFile: server.dbFile, ...(server.uiUrl ? { uiUrl: server.uiUrl } : {}) } : {}),
    ...(worker ? { worker } : {}),
    ...(signer ? { signer } : {}),
    dataDir,
    running,
    async stop() {
      if (stopped) return;
      stopped = true;
      if (worker && worker.getState() === 'RUNNING') worker.shutdown();
      await running.catch(() => undefined);
      await started?.nativeConnection.close();
      await connection.close();
      await tracing?.shutdown().catch(() => undefined);
      await server?.stop();
    },
  };
}

/** Where the client and the worker connect, and the dev server when toolgate started one. */
interface OpenedCluster {
  readonly server?: DevServer;
  readonly address: string;
  readonly namespace: string;
  readonly connectionOptions: Record<string, unknown>;
}

/** The cluster given in the options, or a local dev server started on `<dataDir>/temporal.db`. */
async function openCluster(
  options: EmbeddedOptions,
  where: { env: NodeJS.ProcessEnv; dataDir: string; progress: (line: string) => void },
  undo: Array<() => Promise<unknown>>,
): Promise<OpenedCluster> {
  const { env, dataDir, progress } = where;
  if (options.cluster) {
    const { address, namespace } = options.cluster;
    progress(
      `Using the existing Temporal cluster at ${address} (namespace ${namespace}); no local server is started.`,
    );
    return { address, namespace, connectionOptions: { ...options.cluster.connectionOptions } };
  }
  const withSignal = options.signal ? { signal: options.signal } : {};
  const cli = await findTemporalCli({ env, onProgress: progress, ...withSignal });
  const server = await startDevServer({
    ...withSignal,
    cli,
    dbFile: join(dataDir, 'temporal.db'),
    grpcPort: options.grpcPort ?? 7233,
    uiPort: options.uiPort ?? 8233,
    headless: options.headless ?? false,
    onProgress: progress,
  });
  undo.push(server.stop);
  return { server, address: server.address, namespace: server.namespace, connectionOptions: {} };
}

/**
 * Workers only need the public key. The private key is for approval surfaces (inbox, CLI): with
 * a public key file given in the environment there is none here, and so no signer.
 */
async function loadApprovalKeys(
  env: NodeJS.ProcessEnv,
  dataDir: string,
): Promise<{ publicKey: KeyObject; signer?: ApprovalSigner }> {
  const publicKeyFile = env['TOOLGATE_APPROVAL_PUBLIC_KEY_FILE'];
  if (publicKeyFile) return { publicKey: await loadPublicKey(publicKeyFile) };
  const keys = await loadOrCreateApprovalKeys(join(dataDir, 'keys'));
  return { publicKey: keys.publicKey, signer: createApprovalSigner(keys.privateKey) };
}

/** Connects a worker for the tools on its own native connection and runs it. */
async function startToolWorker(
  options: EmbeddedOptions,
  where: {
    cluster: OpenedCluster;
    taskQueue: string;
    dataDir: string;
    publicKey: KeyObject;
    tracing: Tracing | undefined;
  },
  undo: Array<() => Promise<unknown>>,
): Promise<{ worker: Worker; nativeConnection: NativeConnection; running: Promise<void> }> {
  const { cluster, taskQueue, dataDir, publicKey, tracing } = where;
  const nativeConnection = await untilAborted(
    NativeConnection.connect({ ...cluster.connectionOptions, address: cluster.address } as never),
    options.signal,
    (late) => late.close(),
  );
  undo.push(() => nativeConnection.close());
  // Creating a worker bundles the workflow code, which takes seconds, and cannot be interrupted.
  // A worker that arrives after an interruption already owns its workflow threads, which keep
  // the process alive, so the undo waits for it and runs it down before its connection closes.
  const activities = await options.tools.activities({ dataDir, approvalPublicKeys: [publicKey] });
  const creating = createWorker({
    connection: nativeConnection,
    namespace: cluster.namespace,
    taskQueue,
    activities,
    workflowsPath: options.tools.workflowsPath,
    drainGraceMs: options.tools.drainGraceMs ?? drainGraceMsFor(options.tools.catalog),
    ...(tracing ? { tracing } : {}),
  });
  undo.push(async () => {
    const late = await creating.catch(() => undefined);
    if (late?.getState() === 'INITIALIZED') await late.runUntil(Promise.resolve());
  });
  const worker = await untilAborted(creating, options.signal);
  return { worker, nativeConnection, running: worker.run() };
}
