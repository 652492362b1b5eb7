import { mkdtemp, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { withFileLock } from '../../src/support/file-lock.ts';

describe('withFileLock', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'toolgate-lock-'));
  });
  afterEach(async () => rm(dir, { recursive: true, force: true }));
  const options = { staleMs: 5_000, timeoutError: (file: string) => new Error(`timed out on ${file}`) };

  it('lets one holder in at a time and frees the lock after each', async () => {
    const lock = join(dir, 'store.lock');
    let inside = 0;
    let most = 0;
    await Promise.all(
      Array.from({ length: 20 }, () =>
        withFileLock(
          lock,
          async () => {
            inside++;
            most = Math.max(most, inside);
            await new Promise((resolve) => setTimeout(resolve, 2));
            inside--;
          },
          options,
        ),
      ),
    );
    expect(most).toBe(1);
    await expect(withFileLock(lock, async () => 'free again', options)).resolves.toBe('free again');
  });

  it('removes a lock left by a holder that died, and times out on a live one', async () => {
    const lock = join(dir, 'store.lock');
    await writeFile(lock, '999999\n');
    const old = new Date(Date.now() - 10_000);
    await utimes(lock, old, old);
    await expect(withFileLock(lock, async () => 'took it', options)).resolves.toBe('took it');
    await writeFile(lock, `${process.pid}\n`);
    await expect(withFileLock(lock, async () => 'never', { ...options, waitMs: 100 })).rejects.toThrow(
      `timed out on ${lock}`,
    );
  });
});
