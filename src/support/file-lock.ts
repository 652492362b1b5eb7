import { stat, unlink, writeFile } from 'node:fs/promises';

export interface FileLockOptions {
  /** A lock file older than this was left by a holder that died while holding it: it is removed. */
  readonly staleMs: number;
  /** How long to wait for a live holder before giving up. Default `staleMs`. */
  readonly waitMs?: number;
  /** The error thrown when the wait runs out. */
  readonly timeoutError: (lockFile: string) => Error;
}

/**
 * Runs `work` holding `lockFile`, created exclusively (`O_EXCL`), so processes that share a local
 * filesystem (or a container volume) take turns; waits while another holder has it. Holders must be
 * quick: a lock older than `staleMs` counts as abandoned, and one waiter at a time (holding
 * `<lockFile>.break`) checks its age again and removes it, so two waiters cannot both break the
 * same lock and remove each other's fresh one.
 */
export async function withFileLock<T>(
  lockFile: string,
  work: () => Promise<T>,
  options: FileLockOptions,
): Promise<T> {
  const deadline = Date.now() + (options.waitMs ?? options.staleMs);
  let pauseMs = 2;
  for (;;) {
    if (await tryCreate(lockFile)) break;
    const age = await ageOf(lockFile);
    // Gone between the two looks: try again at once.
    if (age === undefined) continue;
    if (age > options.staleMs) {
      await breakStale(lockFile, options.staleMs);
      continue;
    }
    if (Date.now() > deadline) throw options.timeoutError(lockFile);
    // Short, growing and jittered pauses: holders are quick, and waiters must not march in step.
    await new Promise((resolve) => setTimeout(resolve, pauseMs * (0.5 + Math.random())));
    pauseMs = Math.min(pauseMs * 2, 50);
  }
  try {
    return await work();
  } finally {
    await unlink(lockFile).catch(() => undefined);
  }
}

async function tryCreate(file: string): Promise<boolean> {
  try {
    await writeFile(file, `${process.pid}\n`, { flag: 'wx' });
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  }
}

/** Milliseconds since the file was last written, or undefined when it does not exist. */
async function ageOf(file: string): Promise<number | undefined> {
  return stat(file).then(
    (info) => Date.now() - info.mtimeMs,
    () => undefined,
  );
}

async function breakStale(lockFile: string, staleMs: number): Promise<void> {
  const breaker = `${lockFile}.break`;
  if (!(await tryCreate(breaker))) {
    // Someone else is breaking it; a breaker that died doing so is itself abandoned.
    if (((await ageOf(breaker)) ?? 0) > staleMs) await unlink(breaker).catch(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, 5));
    return;
  }
  try {
    if (((await ageOf(lockFile)) ?? 0) > staleMs) await unlink(lockFile).catch(() => undefined);
  } finally {
    await unlink(breaker).catch(() => undefined);
  }
}
