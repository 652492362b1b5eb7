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
 * quick: a lock older than `staleMs` counts as abandoned. Two waiters that both find the same stale
 * lock may both remove it, which only matters if a holder really held it that long.
 */
export async function withFileLock<T>(
  lockFile: string,
  work: () => Promise<T>,
  options: FileLockOptions,
): Promise<T> {
  const deadline = Date.now() + (options.waitMs ?? options.staleMs);
  let pauseMs = 2;
  for (;;) {
    try {
      await writeFile(lockFile, `${process.pid}\n`, { flag: 'wx' });
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const age = await stat(lockFile).then(
      (info) => Date.now() - info.mtimeMs,
      () => 0,
    );
    if (age > options.staleMs) {
      await unlink(lockFile).catch(() => undefined);
    } else if (Date.now() > deadline) {
      throw options.timeoutError(lockFile);
    } else {
      // Short, growing and jittered pauses: holders are quick, and waiters must not march in step.
      await new Promise((resolve) => setTimeout(resolve, pauseMs * (0.5 + Math.random())));
      pauseMs = Math.min(pauseMs * 2, 50);
    }
  }
  try {
    return await work();
  } finally {
    await unlink(lockFile).catch(() => undefined);
  }
}
