import { spawn } from 'node:child_process';
import { constants } from 'node:fs';
import { access, mkdir, mkdtemp, rename, rm, rmdir, stat, utimes } from 'node:fs/promises';
import { homedir } from 'node:os';
import { delimiter, isAbsolute, join } from 'node:path';
import { createInterface } from 'node:readline';
import { type DownloadOptions, downloadTemporalCli, temporalReleaseBaseUrl } from './download-cli.ts';

/**
 * The pinned Temporal CLI release. v1.5.1 is the newest release whose go.mod has no `replace`
 * directive; from 1.6 on, `go install module@version` refuses to build it.
 */
export const temporalCliVersion = 'v1.5.1';

const temporalCliModule = 'github.com/temporalio/cli/cmd/temporal';

const executableSuffix = process.platform === 'win32' ? '.exe' : '';

/** A lock older than this belongs to a build that died without cleaning up. */
const lockStaleMilliseconds = 15 * 60 * 1000;

/** How often a waiting process looks at the lock again. */
const lockPollMilliseconds = 1000;

/** How often the building process refreshes the lock so slow builds are not taken for dead ones. */
const lockRefreshMilliseconds = 60 * 1000;

/** Where a usable Temporal CLI binary came from. */
export interface FoundCli {
  path: string;
  source: 'env' | 'path' | 'cache' | 'downloaded' | 'built';
}

/** Knobs for {@link findTemporalCli}; tests use them to run without touching the real machine. */
export interface FindCliOptions {
  /** Environment to read TEMPORAL_CLI_PATH, PATH and XDG_CACHE_HOME from. Defaults to process.env. */
  env?: NodeJS.ProcessEnv;
  /** Directory holding cached builds. Defaults to {@link defaultCacheDir}. */
  cacheDir?: string;
  /** Whether downloading or building the CLI is allowed when nothing else is found. Defaults to true. */
  allowBuild?: boolean;
  /**
   * Where to download the pinned release from before building it with Go, or `false` to go
   * straight to the build. Defaults to TOOLGATE_TEMPORAL_CLI_MIRROR, else Temporal's GitHub releases.
   */
  download?: DownloadOptions | false;
  /** Receives human-readable progress, one line at a time. Defaults to writing to stderr. */
  onProgress?: (line: string) => void;
  /** Absolute paths tried for `go` after PATH. Defaults to the official installer's location. */
  goCandidates?: readonly string[];
  /** Stops a Go build in progress (the build's temp dir and lock are cleaned up); rejects with its reason. */
  signal?: AbortSignal;
}

const defaultGoCandidates = ['/usr/local/go/bin/go'];

/**
 * Returns the per-user cache directory for toolgate: `$XDG_CACHE_HOME/toolgate`, or
 * `~/.cache/toolgate` when XDG_CACHE_HOME is unset or not absolute (the XDG spec says to ignore
 * relative values).
 */
export function defaultCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  const { XDG_CACHE_HOME: xdgCacheHome, HOME: home } = env;
  if (xdgCacheHome && isAbsolute(xdgCacheHome)) {
    return join(xdgCacheHome, 'toolgate');
  }
  return join(home || homedir(), '.cache', 'toolgate');
}

/**
 * Finds a Temporal CLI binary, downloading or building it as a last resort.
 *
 * Order: TEMPORAL_CLI_PATH, then `temporal` on PATH, then the cache, then the pinned official
 * release downloaded and checked against its pinned SHA-256, then `go install` into the cache.
 * Throws an error naming every way to provide a CLI when none works.
 */
export async function findTemporalCli(options: FindCliOptions = {}): Promise<FoundCli> {
  const env = options.env ?? process.env;
  const cacheDir = options.cacheDir ?? defaultCacheDir(env);
  const allowBuild = options.allowBuild ?? true;
  const onProgress = options.onProgress ?? writeProgressToStderr;
  const goCandidates = options.goCandidates ?? defaultGoCandidates;
  options.signal?.throwIfAborted();

  const { TEMPORAL_CLI_PATH: explicitPath } = env;
  if (explicitPath) {
    const problem = await describeExecutableProblem(explicitPath);
    if (problem) {
      throw new Error(
        `TEMPORAL_CLI_PATH is set to "${explicitPath}", but that path is wrong: ${problem}. ` +
          'Point it at an executable Temporal CLI binary, or unset it to let toolgate look elsewhere.',
      );
    }
    return { path: explicitPath, source: 'env' };
  }

  const onPath = await findOnPath(`temporal${executableSuffix}`, env);
  if (onPath) {
    return { path: onPath, source: 'path' };
  }

  const cachedBinary = cachedCliPath(cacheDir);
  if (await isExecutableFile(cachedBinary)) {
    return { path: cachedBinary, source: 'cache' };
  }

  const go = allowBuild ? await findGo(env, goCandidates) : undefined;
  const download = allowBuild ? downloadOptions(options.download, env) : undefined;
  if (!go && !download) {
    throw new Error(noCliMessage(cacheDir, allowBuild));
  }
  return obtainCli({
    ...(go ? { go } : {}),
    ...(download ? { download } : {}),
    env,
    cacheDir,
    onProgress,
    ...(options.signal ? { signal: options.signal } : {}),
  });
}

function downloadOptions(
  given: DownloadOptions | false | undefined,
  env: NodeJS.ProcessEnv,
): DownloadOptions | undefined {
  if (given === false) return undefined;
  return given ?? { baseUrl: env['TOOLGATE_TEMPORAL_CLI_MIRROR'] || temporalReleaseBaseUrl };
}

/** The path a cached build of the pinned CLI lives at inside `cacheDir`. */
export function cachedCliPath(cacheDir: string): string {
  return join(cacheDir, `temporal-cli-${temporalCliVersion}`, `temporal${executableSuffix}`);
}

function writeProgressToStderr(line: string): void {
  process.stderr.write(`[toolgate] ${line}\n`);
}

function noCliMessage(cacheDir: string, allowBuild: boolean, downloadFailure?: string): string {
  const reason = !allowBuild
    ? 'downloading or building one is disabled'
    : downloadFailure
      ? `the download failed (${downloadFailure}) and Go was not found to build one`
      : 'Go was not found either, so toolgate cannot build one';
  return [
    `No Temporal CLI found (${reason}). Any one of these fixes it:`,
    '  - set TEMPORAL_CLI_PATH to the path of a temporal binary;',
    '  - put `temporal` on your PATH (https://docs.temporal.io/cli);',
    `  - allow a download from GitHub, or set TOOLGATE_TEMPORAL_CLI_MIRROR to a mirror of Temporal's release files;`,
    `  - install Go (>= 1.22) so toolgate can build the CLI ${temporalCliVersion} into ${cacheDir} (takes a few minutes, once);`,
    '  - or set TEMPORAL_ADDRESS to use an existing Temporal cluster instead of the embedded dev server.',
  ].join('\n');
}

/** Returns undefined when `path` is an executable regular file, otherwise why it is not. */
async function describeExecutableProblem(path: string): Promise<string | undefined> {
  let info: Awaited<ReturnType<typeof stat>>;
  try {
    info = await stat(path);
  } catch {
    return 'it does not exist';
  }
  if (!info.isFile()) {
    return 'it is not a regular file';
  }
  try {
    await access(path, constants.X_OK);
  } catch {
    return 'it is not executable';
  }
  return undefined;
}

async function isExecutableFile(path: string): Promise<boolean> {
  return (await describeExecutableProblem(path)) === undefined;
}

async function findOnPath(name: string, env: NodeJS.ProcessEnv): Promise<string | undefined> {
  const { PATH: searchPath = '' } = env;
  for (const directory of searchPath.split(delimiter)) {
    // An empty entry means "current directory" to a shell; a repo's cwd is not a trusted place
    // to pick up binaries from, so it is skipped.
    if (directory === '') {
      continue;
    }
    const candidate = join(directory, name);
    if (await isExecutableFile(candidate)) {
      return candidate;
    }
  }
  return undefined;
}

async function findGo(env: NodeJS.ProcessEnv, goCandidates: readonly string[]): Promise<string | undefined> {
  const onPath = await findOnPath(`go${executableSuffix}`, env);
  if (onPath) {
    return onPath;
  }
  for (const candidate of goCandidates) {
    if (await isExecutableFile(candidate)) {
      return candidate;
    }
  }
  return undefined;
}

interface BuildContext {
  go: string;
  download?: DownloadOptions;
  env: NodeJS.ProcessEnv;
  cacheDir: string;
  onProgress: (line: string) => void;
  signal?: AbortSignal;
}

/**
 * Puts the pinned CLI into the cache, under a lock so that concurrent starts fetch it once: the
 * official release when it downloads and verifies, else a Go build.
 */
async function obtainCli(context: Omit<BuildContext, 'go'> & { go?: string }): Promise<FoundCli> {
  const { cacheDir, onProgress } = context;
  await mkdir(cacheDir, { recursive: true });
  const finalBinary = cachedCliPath(cacheDir);
  const lockDir = join(cacheDir, `temporal-cli-${temporalCliVersion}.lock`);

  const releaseLock = await acquireLock(lockDir, onProgress);
  try {
    // Another process may have finished while this one waited for the lock.
    if (await isExecutableFile(finalBinary)) {
      return { path: finalBinary, source: 'cache' };
    }
    let downloadFailure: string | undefined;
    if (context.download) {
      try {
        await downloadTemporalCli({
          version: temporalCliVersion,
          target: finalBinary,
          options: context.download,
          onProgress,
          ...(context.signal ? { signal: context.signal } : {}),
        });
        return { path: finalBinary, source: 'downloaded' };
      } catch (error) {
        context.signal?.throwIfAborted();
        downloadFailure = error instanceof Error ? error.message : String(error);
        onProgress(
          `The Temporal CLI download failed: ${downloadFailure}.${context.go ? ' Building it with Go instead.' : ''}`,
        );
      }
    }
    if (!context.go) throw new Error(noCliMessage(cacheDir, true, downloadFailure));
    return await buildWithGo({ ...context, go: context.go }, finalBinary);
  } finally {
    await releaseLock();
  }
}

async function buildWithGo(context: BuildContext, finalBinary: string): Promise<FoundCli> {
  const { cacheDir, onProgress } = context;
  onProgress(
    `Building the Temporal CLI ${temporalCliVersion} with Go into ${cacheDir}. ` +
      'This takes a few minutes, once; later runs reuse the build.',
  );
  // The temp dir sits inside cacheDir so the final rename stays on one filesystem and is atomic.
  const buildDir = await mkdtemp(join(cacheDir, '.build-'));
  try {
    await runGoInstallWithFallback(context, buildDir);
    const builtBinary = join(buildDir, `temporal${executableSuffix}`);
    if (!(await isExecutableFile(builtBinary))) {
      throw new Error(`go install reported success but produced no binary at ${builtBinary}.`);
    }
    await mkdir(join(cacheDir, `temporal-cli-${temporalCliVersion}`), { recursive: true });
    await rename(builtBinary, finalBinary);
  } finally {
    await rm(buildDir, { recursive: true, force: true });
  }
  onProgress(`Temporal CLI built at ${finalBinary}.`);
  return { path: finalBinary, source: 'built' };
}

async function runGoInstallWithFallback(context: BuildContext, buildDir: string): Promise<void> {
  const first = await runGoInstall(context, buildDir, {});
  context.signal?.throwIfAborted();
  if (first.exitCode === 0) {
    return;
  }
  let result = first;
  if (isChecksumDatabaseFailure(first.output)) {
    context.onProgress('The Go checksum database could not be used; retrying with GOSUMDB=off.');
    // Acceptable for this one pinned build: the CLI module's own go.sum still verifies every
    // dependency, only the lookup of the top-level module in sum.golang.org is skipped.
    result = await runGoInstall(context, buildDir, { GOSUMDB: 'off' });
    if (result.exitCode === 0) {
      return;
    }
  }
  const tail = result.output.slice(-30).join('\n');
  throw new Error(
    `Building the Temporal CLI with \`go install ${temporalCliModule}@${temporalCliVersion}\` failed ` +
      `(exit code ${result.exitCode}). Last output:\n${tail}\n` +
      'Alternatively set TEMPORAL_CLI_PATH, put `temporal` on PATH, or set TEMPORAL_ADDRESS to use an existing cluster.',
  );
}

function isChecksumDatabaseFailure(output: readonly string[]): boolean {
  return output.some((line) => line.includes('sum.golang.org') || line.includes('verifying module'));
}

interface GoInstallResult {
  exitCode: number | null;
  output: string[];
}

function runGoInstall(
  context: BuildContext,
  buildDir: string,
  extraEnv: Record<string, string>,
): Promise<GoInstallResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(context.go, ['install', '-v', `${temporalCliModule}@${temporalCliVersion}`], {
      env: { ...context.env, ...extraEnv, GOBIN: buildDir },
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(context.signal ? { signal: context.signal } : {}),
    });
    const output: string[] = [];
    const forward = (line: string): void => {
      output.push(line);
      context.onProgress(line);
    };
    const streamsClosed = [child.stdout, child.stderr].map(
      (stream) =>
        new Promise<void>((resolveStream) => {
          const lines = createInterface({ input: stream, crlfDelay: Number.POSITIVE_INFINITY });
          lines.on('line', forward);
          lines.on('close', resolveStream);
        }),
    );
    child.once('error', reject);
    child.once('close', (exitCode) => {
      void Promise.all(streamsClosed).then(() => resolve({ exitCode, output }));
    });
  });
}

/**
 * Takes a lock by creating a directory, which is atomic on every filesystem Node supports.
 * Returns the function that releases it.
 */
async function acquireLock(
  lockDir: string,
  onProgress: (line: string) => void,
): Promise<() => Promise<void>> {
  let announcedWait = false;
  for (;;) {
    try {
      await mkdir(lockDir);
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') {
        throw error;
      }
    }
    const lockAge = await ageOf(lockDir);
    if (lockAge === undefined) {
      continue;
    }
    if (lockAge > lockStaleMilliseconds) {
      onProgress(`Removing a stale build lock at ${lockDir}.`);
      await rm(lockDir, { recursive: true, force: true });
      continue;
    }
    if (!announcedWait) {
      onProgress(`Another process is building the Temporal CLI (lock ${lockDir}); waiting for it.`);
      announcedWait = true;
    }
    await delay(lockPollMilliseconds);
  }

  const refresh = setInterval(() => {
    const now = new Date();
    utimes(lockDir, now, now).catch(() => {});
  }, lockRefreshMilliseconds);
  refresh.unref();

  return async () => {
    clearInterval(refresh);
    await rmdir(lockDir).catch(() => {});
  };
}

async function ageOf(path: string): Promise<number | undefined> {
  try {
    const info = await stat(path);
    return Date.now() - info.mtimeMs;
  } catch {
    // The holder released it between our mkdir and stat: just try again.
    return undefined;
  }
}

function delay(milliseconds: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, milliseconds));
}
