import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { closeSync, openSync, writeSync } from 'node:fs';
import { mkdir, open, rename, stat, unlink } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { ToolgateError } from '../contracts/errors.ts';
import { claimDatabase, type DatabaseClaim } from './database-claim.ts';
import { type FoundCli, findTemporalCli } from './find-cli.ts';
import { findFreePort } from './ports.ts';
import { toolgateSearchAttributes } from './search-attributes.ts';
import { readStartupLog } from './startup-log.ts';

/** Options for {@link startDevServer}. Every field has a default that suits local development. */
export interface DevServerOptions {
  /** SQLite file holding all server state. Default: `<cwd>/.toolgate/temporal.db`. */
  dbFile?: string;
  /** Preferred gRPC port; another free port is used when it is taken. 0 means any. Default 7233. */
  grpcPort?: number;
  /** Preferred Web UI port; another free port is used when it is taken. 0 means any. Default 8233. */
  uiPort?: number;
  /** Run without the Web UI. */
  headless?: boolean;
  /** Where the server's stdout and stderr are appended. Default: `temporal-server.log` next to dbFile. */
  logFile?: string;
  /** Namespace to create and to register search attributes in. Default 'default'. */
  namespace?: string;
  /** How long startup (readiness plus search attributes) may take. Default 60000. */
  readyTimeoutMs?: number;
  /** A CLI found earlier; found with {@link findTemporalCli} when absent. */
  cli?: FoundCli;
  /** Receives human-readable progress, one line at a time. Default: stderr. */
  onProgress?: (line: string) => void;
  /** Extra arguments appended to `temporal server start-dev`. */
  extraArgs?: string[];
  /**
   * Interrupts the start: a server already spawned is stopped gracefully (SIGTERM, so its SQLite
   * file is closed cleanly) and the promise rejects with the signal's reason.
   */
  signal?: AbortSignal;
}

/** A running embedded Temporal dev server. */
export interface DevServer {
  /** gRPC address, always `127.0.0.1:<port>`. */
  address: string;
  /** Web UI address, or undefined when headless. */
  uiUrl: string | undefined;
  dbFile: string;
  logFile: string;
  pid: number;
  namespace: string;
  /** Stops gracefully (SIGTERM, then SIGKILL after 10 s); resolves once the process has exited. */
  stop(): Promise<void>;
  /** Kills the process with SIGKILL, as a crash would; resolves once the process has exited. */
  kill(): Promise<void>;
}

const loopbackHost = '127.0.0.1';

/**
 * Dynamic config passed to every dev server. Eager activity execution lets a worker run an
 * activity in the same round trip that scheduled it, which keeps tool calls snappy; multi-operation
 * execution lets a client start a workflow and send an update in one call (update-with-start).
 * One partition per task queue: partitions spread a queue over matching hosts, and a single-node
 * dev server has one. With the default four, a task that landed on a partition whose pollers were
 * busy elsewhere waited about 2 s to be forwarded; measured at 16 callers, p99 went from 2.2 s in
 * half of the blocks to under 0.52 s in all of them (docs/benchmarks.md).
 * Transfer-queue reads up to 1000 a second instead of 20: every workflow or activity task goes from
 * history to matching through that queue, and a real cluster spreads it over hundreds of shards,
 * so the per-shard limit rarely binds; the dev server has one shard, so under any steady load
 * each hop waited for the next 50 ms read. Measured: a bare one-activity workflow at one caller
 * 100 ms → 28 ms, no change in server CPU per call (docs/benchmarks.md).
 * Search-attribute caches on, as on any production cluster: start-dev turns them off so that an
 * attribute created on a running server is usable at once, and then every start, upsert and
 * visibility write reads the cluster metadata and the namespace row from SQLite, under a global
 * lock. toolgate's attributes exist before any call (`--search-attribute` for a new file, and a
 * restart after registering them in an older one, see `ensureSearchAttributes`). Measured with a
 * perf profile of the server and side-by-side runs: server CPU per call −2.7 ms for bare Temporal,
 * −3.6 ms for a toolgate call, at 4 callers (docs/benchmarks.md). An attribute you create by hand
 * on a running `toolgate dev` server becomes usable within about a minute, as on a real cluster.
 * Up to 100 updates in flight per workflow, not 10: one admission entity answers every acquire of
 * its scope, and with the default, 16 callers of one rate-limited tool saw 3,013 acquires refused
 * by the server and a p50 of 3 s (docs/design.md, "Admission").
 */
export const devDynamicConfigValues = [
  'system.enableActivityEagerExecution=true',
  'frontend.enableExecuteMultiOperation=true',
  'history.maxInFlightUpdates=100',
  'matching.numTaskqueueReadPartitions=1',
  'matching.numTaskqueueWritePartitions=1',
  'history.transferProcessorMaxPollRPS=1000',
  'system.forceSearchAttributesCacheRefreshOnRead=false',
] as const;

/**
 * SQLite settings of the embedded server. A write-ahead log commits with one sync of the log
 * instead of a rollback journal's several, and `synchronous=full` keeps every commit durable, as
 * before: a commit the server acknowledged survives a power cut. Measured with 100 cancels at once
 * (test/faults/mass-cancel.test.ts): the cancels' workflow tasks completed p99 1.3–2.0 s after the
 * cancel with the default journal, 0.45–0.95 s with the log (docs/design.md "Liveness and
 * cancellation").
 */
const sqlitePragmas = ['journal_mode=wal', 'synchronous=full'] as const;

/** The files SQLite keeps beside a database in write-ahead-log mode. */
const walSuffixes = ['-wal', '-shm'] as const;

const stopGraceMilliseconds = 10_000;
const pollIntervalMilliseconds = 250;
const cliCommandTimeoutMilliseconds = 10_000;
/** Another process can grab a probed port before the server binds it, so startup is retried. */
const maximumStartAttempts = 3;

/**
 * Starts a Temporal dev server on loopback, persisting to a SQLite file, and resolves once it
 * serves requests and every toolgate search attribute is registered in the namespace.
 *
 * Throws, after killing the process, when the server exits early or is not ready within
 * `readyTimeoutMs`; the error quotes the end of the server log and names its path.
 *
 * One server per file: throws DatabaseInUseError when a live process has the file open, and
 * first stops a server that a killed toolgate left running on it (see `claimDatabase`).
 */
export async function startDevServer(options: DevServerOptions = {}): Promise<DevServer> {
  const onProgress = options.onProgress ?? writeProgressToStderr;
  options.signal?.throwIfAborted();
  const cli =
    options.cli ??
    (await findTemporalCli({ onProgress, ...(options.signal ? { signal: options.signal } : {}) }));
  const dbFile = resolve(options.dbFile ?? join(process.cwd(), '.toolgate', 'temporal.db'));
  const logFile = resolve(options.logFile ?? join(dirname(dbFile), 'temporal-server.log'));
  await mkdir(dirname(dbFile), { recursive: true });
  await mkdir(dirname(logFile), { recursive: true });

  // Before anything touches the file: another server may have it open.
  const claim = await claimDatabase(dbFile, { onProgress });
  try {
    const server = await startClaimed(options, { cli, dbFile, logFile, onProgress, claim });
    return {
      ...server,
      stop: async () => {
        await server.stop();
        await claim.release();
      },
      kill: async () => {
        await server.kill();
        await claim.release();
      },
    };
  } catch (error) {
    await claim.release();
    throw error;
  }
}

async function startClaimed(
  options: DevServerOptions,
  resolved: Pick<ResolvedOptions, 'cli' | 'dbFile' | 'logFile' | 'onProgress' | 'claim'>,
): Promise<DevServer> {
  const { dbFile, onProgress } = resolved;
  await removeEmptyDatabase(dbFile, onProgress);

  let preferredGrpcPort = options.grpcPort ?? 7233;
  let preferredUiPort = options.uiPort ?? 8233;
  let movedIncompleteDatabase = false;
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce({
        ...options,
        ...resolved,
        grpcPort: preferredGrpcPort,
        uiPort: preferredUiPort,
      });
    } catch (error) {
      if (attempt >= maximumStartAttempts || options.signal?.aborted) {
        throw error;
      }
      if (error instanceof PortTakenError) {
        onProgress('A port was taken while the dev server started; retrying on other ports.');
        preferredGrpcPort = 0;
        preferredUiPort = 0;
      } else if (error instanceof IncompleteDatabaseError && !movedIncompleteDatabase) {
        const asideFile = `${dbFile}.incomplete-${new Date().toISOString().replace(/[:.]/g, '-')}`;
        await moveDatabase(dbFile, asideFile);
        movedIncompleteDatabase = true;
        onProgress(
          `${dbFile} has no Temporal schema (an earlier first start was interrupted); ` +
            `moved it to ${asideFile} and starting with a fresh one.`,
        );
      } else {
        throw error;
      }
    }
  }
}

/** A port taken between the probe and the bind: the start is tried again on other ports. */
class PortTakenError extends ToolgateError {
  constructor(message: string) {
    super('UNAVAILABLE', message);
  }
}

/** A database file without a schema, left by a first start that was killed: moved aside, started again. */
class IncompleteDatabaseError extends ToolgateError {
  constructor(message: string) {
    super('CONFIG', message);
  }
}

/**
 * Renames a database with its write-ahead log: a new file must never start from the old log, so
 * the log goes first and the main file last (a crash in between leaves the old database whole).
 */
async function moveDatabase(dbFile: string, asideFile: string): Promise<void> {
  for (const suffix of walSuffixes) {
    await rename(`${dbFile}${suffix}`, `${asideFile}${suffix}`).catch(ignoreMissing);
  }
  await rename(dbFile, asideFile);
}

/**
 * start-dev creates the schema only when the DB file does not exist, so a file left empty by a
 * first start that was killed early would make every later start fail. An empty file with no
 * write-ahead log beside it (or an empty one) holds no data, so removing it loses nothing.
 */
async function removeEmptyDatabase(dbFile: string, onProgress: (line: string) => void): Promise<void> {
  const size = async (file: string) => (await stat(file).catch(ignoreMissing))?.size ?? 0;
  if ((await stat(dbFile).catch(ignoreMissing)) === undefined) return;
  if ((await size(dbFile)) > 0 || (await size(`${dbFile}-wal`)) > 0) return;
  for (const suffix of walSuffixes) await unlink(`${dbFile}${suffix}`).catch(ignoreMissing);
  await unlink(dbFile);
  onProgress(`Removed the empty DB file ${dbFile} left by an interrupted start.`);
}

/** For a file operation whose file may not exist: a missing file is not an error. */
function ignoreMissing(error: unknown): undefined {
  if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
  throw error;
}

type ResolvedOptions = DevServerOptions & {
  cli: FoundCli;
  dbFile: string;
  logFile: string;
  onProgress: (line: string) => void;
  grpcPort: number;
  uiPort: number;
  claim: DatabaseClaim;
  /** Set on the start that follows registering attributes in an older file. */
  restartedForAttributes?: boolean;
};

async function startOnce(options: ResolvedOptions): Promise<DevServer> {
  const { cli, dbFile, logFile, onProgress } = options;
  const namespace = options.namespace ?? 'default';
  const headless = options.headless ?? false;
  const readyTimeoutMs = options.readyTimeoutMs ?? 60_000;
  options.signal?.throwIfAborted();

  const grpcPort = await findFreePort(options.grpcPort, loopbackHost);
  let uiPort: number | undefined;
  if (!headless) {
    uiPort = await findFreePort(options.uiPort, loopbackHost);
    if (uiPort === grpcPort) {
      uiPort = await findFreePort(0, loopbackHost);
    }
  }
  const address = `${loopbackHost}:${grpcPort}`;

  const args = [
    'server',
    'start-dev',
    '--db-filename',
    dbFile,
    '--ip',
    loopbackHost,
    '--port',
    String(grpcPort),
    ...(uiPort === undefined ? ['--headless'] : ['--ui-ip', loopbackHost, '--ui-port', String(uiPort)]),
    '--log-level',
    'warn',
    '--log-format',
    'text',
    ...(namespace === 'default' ? [] : ['--namespace', namespace]),
    ...toolgateSearchAttributes.flatMap((attribute) => [
      '--search-attribute',
      `${attribute.name}=${attribute.type}`,
    ]),
    ...devDynamicConfigValues.flatMap((value) => ['--dynamic-config-value', value]),
    ...sqlitePragmas.flatMap((pragma) => ['--sqlite-pragma', pragma]),
    ...(options.extraArgs ?? []),
  ];

  const logOffset = await sizeOf(logFile);
  const startedAt = Date.now();
  const child = await spawnWithLog(cli.path, args, logFile);
  const pid = child.pid!;
  const lifecycle = watchLifecycle(child);
  await options.claim.recordServer(pid, address);

  const failStartup = async (reason: string): Promise<never> => {
    await lifecycle.kill();
    const reading = readStartupLog(await readLogSince(logFile, logOffset));
    const message =
      `Temporal dev server (pid ${pid}, ${address}, db ${dbFile}) failed to start: ${reason}\n` +
      `Server log: ${logFile}\nFrom the log:\n${reading.excerpt}`;
    if (reading.kind === 'port-taken') {
      throw new PortTakenError(message);
    }
    if (reading.kind === 'incomplete-database') {
      throw new IncompleteDatabaseError(message);
    }
    throw new Error(message);
  };

  const { signal } = options;
  const stopIfInterrupted = async (): Promise<void> => {
    if (!signal?.aborted) return;
    await lifecycle.stop();
    throw signal.reason;
  };

  const deadline = startedAt + readyTimeoutMs;
  const readiness = await waitUntilServing(cli, address, deadline, lifecycle, signal);
  await stopIfInterrupted();
  if (readiness !== 'serving') {
    return failStartup(readiness);
  }
  const servingAfter = Date.now() - startedAt;

  const registration = await ensureSearchAttributes(cli, address, namespace, deadline, lifecycle, signal);
  await stopIfInterrupted();
  if ('problem' in registration) {
    return failStartup(registration.problem);
  }
  if (registration.created.length > 0) {
    // The server's search-attribute caches may already hold the list from before; a new process
    // reads the attributes from the file before it serves a call.
    if (options.restartedForAttributes) {
      return failStartup(
        `search attributes ${registration.created.join(', ')} were missing again after a restart.`,
      );
    }
    onProgress(
      `Registered the search attributes ${registration.created.join(', ')} in ${dbFile}, which predates ` +
        'them; restarting the server once so that every part of it sees them.',
    );
    await lifecycle.stop();
    return startOnce({
      ...options,
      grpcPort,
      ...(uiPort === undefined ? {} : { uiPort }),
      restartedForAttributes: true,
    });
  }
  onProgress(
    `Temporal dev server ready at ${address} (pid ${pid}): serving after ${servingAfter} ms, ` +
      `search attributes registered after ${Date.now() - startedAt} ms.`,
  );

  return {
    address,
    uiUrl: uiPort === undefined ? undefined : `http://${loopbackHost}:${uiPort}`,
    dbFile,
    logFile,
    pid,
    namespace,
    stop: lifecycle.stop,
    kill: lifecycle.kill,
  };
}

function writeProgressToStderr(line: string): void {
  process.stderr.write(`[toolgate] ${line}\n`);
}

async function sizeOf(path: string): Promise<number> {
  try {
    return (await stat(path)).size;
  } catch {
    return 0;
  }
}

/** Spawns `command` with stdout and stderr appended to `logFile`, resolving once it has started. */
async function spawnWithLog(command: string, args: string[], logFile: string): Promise<ChildProcess> {
  const logDescriptor = openSync(logFile, 'a');
  try {
    writeSync(logDescriptor, `\n=== toolgate: ${new Date().toISOString()} ${command} ${args.join(' ')}\n`);
    // Not detached: the server stays in our process group, so a Ctrl-C in the terminal reaches it too.
    const child = spawn(command, args, {
      stdio: ['ignore', logDescriptor, logDescriptor],
      env: withoutTemporalClientSettings(process.env),
    });
    await new Promise<void>((resolveSpawn, rejectSpawn) => {
      child.once('spawn', resolveSpawn);
      child.once('error', rejectSpawn);
    });
    return child;
  } finally {
    // The child holds its own copy of the descriptor; ours is no longer needed.
    closeSync(logDescriptor);
  }
}

interface Lifecycle {
  readonly exited: () => boolean;
  readonly exitDescription: () => string;
  readonly stop: () => Promise<void>;
  readonly kill: () => Promise<void>;
}

function watchLifecycle(child: ChildProcess): Lifecycle {
  let exitDescription: string | undefined;
  // A parent that exits without stopping the server must not leave it running: 'exit' handlers
  // run synchronously, which is all kill() needs.
  const killOnParentExit = (): void => {
    child.kill('SIGKILL');
  };
  process.on('exit', killOnParentExit);

  const exitedPromise = new Promise<void>((resolveExit) => {
    child.once('exit', (code, signal) => {
      exitDescription = signal ? `killed by ${signal}` : `exited with code ${code}`;
      process.off('exit', killOnParentExit);
      resolveExit();
    });
  });

  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      if (exitDescription !== undefined) {
        return;
      }
      child.kill('SIGTERM');
      let graceTimer: NodeJS.Timeout | undefined;
      const graceOver = new Promise<'grace-over'>((resolveGrace) => {
        graceTimer = setTimeout(() => resolveGrace('grace-over'), stopGraceMilliseconds);
      });
      const outcome = await Promise.race([exitedPromise, graceOver]);
      clearTimeout(graceTimer);
      if (outcome === 'grace-over') {
        child.kill('SIGKILL');
        await exitedPromise;
      }
    })();
    return stopping;
  };
  const kill = async (): Promise<void> => {
    if (exitDescription === undefined) {
      child.kill('SIGKILL');
    }
    await exitedPromise;
  };

  return {
    exited: () => exitDescription !== undefined,
    exitDescription: () => exitDescription ?? 'still running',
    stop,
    kill,
  };
}

interface CliResult {
  ok: boolean;
  stdout: string;
  stderr: string;
}

/**
 * The CLI reads TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_TLS*, TEMPORAL_API_KEY and similar
 * from the environment; a developer's settings for a remote cluster must not redirect or break
 * commands aimed at this local server, so they are dropped.
 */
function withoutTemporalClientSettings(environment: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(environment).filter(([name]) => !name.startsWith('TEMPORAL_')));
}

function runCli(cli: FoundCli, args: string[], signal?: AbortSignal): Promise<CliResult> {
  return new Promise((resolveRun) => {
    execFile(
      cli.path,
      args,
      {
        env: withoutTemporalClientSettings(process.env),
        timeout: cliCommandTimeoutMilliseconds,
        maxBuffer: 16 * 1024 * 1024,
        ...(signal ? { signal } : {}),
      },
      (error, stdout, stderr) => {
        resolveRun({ ok: error === null, stdout, stderr });
      },
    );
  });
}

async function waitUntilServing(
  cli: FoundCli,
  address: string,
  deadline: number,
  lifecycle: Lifecycle,
  signal: AbortSignal | undefined,
): Promise<'serving' | string> {
  for (;;) {
    if (signal?.aborted) return 'the start was interrupted.';
    if (lifecycle.exited()) {
      return `the server process ${lifecycle.exitDescription()} before it was ready.`;
    }
    const health = await runCli(cli, ['operator', 'cluster', 'health', '--address', address], signal);
    if (health.ok && health.stdout.includes('SERVING')) {
      return 'serving';
    }
    if (Date.now() >= deadline) {
      return `it did not report SERVING before the timeout (last health check: ${summarize(health)}).`;
    }
    await delay(pollIntervalMilliseconds, signal);
  }
}

/**
 * Registers any missing toolgate search attribute and waits until the server lists them all.
 * `--search-attribute` on start-dev only applies when it creates a new DB file, so a server
 * reopening an older file needs them created here. Returns a problem description, or the names
 * this call had to create (the caller then restarts the server, whose caches may predate them).
 */
async function ensureSearchAttributes(
  cli: FoundCli,
  address: string,
  namespace: string,
  deadline: number,
  lifecycle: Lifecycle,
  signal: AbortSignal | undefined,
): Promise<SearchAttributesOutcome> {
  const target = ['--address', address, '--namespace', namespace];
  let lastProblem = 'no attempt finished';
  const created = new Set<string>();
  for (;;) {
    if (signal?.aborted) return { problem: 'the start was interrupted.' };
    if (lifecycle.exited()) {
      return {
        problem: `the server process ${lifecycle.exitDescription()} while registering search attributes.`,
      };
    }
    const round = await registerSearchAttributes(cli, target, signal, created);
    if ('outcome' in round) return round.outcome;
    lastProblem = round.problem ?? lastProblem;
    if (Date.now() >= deadline) {
      return { problem: `search attributes were not all registered before the timeout (${lastProblem}).` };
    }
    await delay(pollIntervalMilliseconds, signal);
  }
}

type SearchAttributesOutcome = { problem: string } | { created: string[] };

/**
 * One round of {@link ensureSearchAttributes}: lists the attributes and creates the missing ones,
 * adding their names to `created`. An `outcome` ends the wait (all are there, or one has the wrong
 * type); otherwise `problem` says what failed this round, if anything did, and the caller tries again.
 */
async function registerSearchAttributes(
  cli: FoundCli,
  target: readonly string[],
  signal: AbortSignal | undefined,
  created: Set<string>,
): Promise<{ outcome: SearchAttributesOutcome } | { problem?: string }> {
  const listing = await runCli(
    cli,
    ['operator', 'search-attribute', 'list', ...target, '-o', 'json'],
    signal,
  );
  const existing = listing.ok ? parseCustomAttributes(listing.stdout) : undefined;
  if (existing === undefined) return { problem: `listing search attributes failed: ${summarize(listing)}` };
  const conflicting = toolgateSearchAttributes.filter(
    (attribute) =>
      existing[attribute.name] !== undefined &&
      existing[attribute.name] !== `INDEXED_VALUE_TYPE_${attribute.type.toUpperCase()}`,
  );
  if (conflicting.length > 0) {
    const details = conflicting.map((attribute) => `${attribute.name} is ${existing[attribute.name]}`);
    return {
      outcome: {
        problem: `search attributes exist with the wrong type (${details.join(', ')}); toolgate needs Keyword. Use a fresh DB file.`,
      },
    };
  }
  const missing = toolgateSearchAttributes.filter((attribute) => existing[attribute.name] === undefined);
  if (missing.length === 0) return { outcome: { created: [...created] } };
  let problem: string | undefined;
  // One attribute per command: the CLI accepts repeated --name but was seen to register only
  // the first of them.
  for (const attribute of missing) {
    const creation = await runCli(
      cli,
      [
        'operator',
        'search-attribute',
        'create',
        '--name',
        attribute.name,
        '--type',
        attribute.type,
        ...target,
      ],
      signal,
    );
    const output = `${creation.stdout}\n${creation.stderr}`;
    if (!creation.ok && !output.includes('already exists')) {
      problem = `creating search attribute ${attribute.name} failed: ${summarize(creation)}`;
    } else {
      created.add(attribute.name);
    }
  }
  return problem === undefined ? {} : { problem };
}

function parseCustomAttributes(json: string): Record<string, string> | undefined {
  try {
    const parsed: unknown = JSON.parse(json);
    if (parsed && typeof parsed === 'object' && 'customAttributes' in parsed) {
      const custom = (parsed as { customAttributes: unknown }).customAttributes;
      if (custom && typeof custom === 'object') {
        return custom as Record<string, string>;
      }
    }
    // A server with no custom attributes at all omits the field.
    return parsed && typeof parsed === 'object' ? {} : undefined;
  } catch {
    return undefined;
  }
}

function summarize(result: CliResult): string {
  const text = `${result.stdout} ${result.stderr}`.replace(/\s+/g, ' ').trim();
  return text.length > 300 ? `${text.slice(0, 300)}…` : text || '(no output)';
}

/** What the server wrote to its log since `fromOffset`, at most the last 1 MiB of it. */
async function readLogSince(logFile: string, fromOffset: number): Promise<string> {
  const maximumBytes = 1024 * 1024;
  try {
    const handle = await open(logFile, 'r');
    try {
      const size = (await handle.stat()).size;
      const start = Math.max(fromOffset, size - maximumBytes);
      const buffer = Buffer.alloc(Math.max(0, size - start));
      await handle.read(buffer, 0, buffer.length, start);
      return buffer.toString('utf8');
    } finally {
      await handle.close();
    }
  } catch (error) {
    return `(could not read the log: ${(error as Error).message})`;
  }
}

/** Waits, or less when `signal` aborts: the caller checks the signal next. */
function delay(milliseconds: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolveDelay) => {
    const timer = setTimeout(done, milliseconds);
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolveDelay();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
