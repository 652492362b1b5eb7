import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const productDirectories = ['src', 'workflows', 'activities'] as const;
const root = fileURLToPath(new URL('..', import.meta.url));

/**
 * A digest of the product code a run measures: every file under src/, workflows/ and activities/,
 * by path and content. Each result records it, so that two results can be told apart by the code
 * they measured even when they came from the same commit with local edits. The bench's own files
 * are left out: how results are printed does not change what was measured.
 */
export async function productDigest(base = root): Promise<string> {
  const files: string[] = [];
  for (const directory of productDirectories) {
    const entries = await readdir(join(base, directory), { recursive: true, withFileTypes: true });
    for (const entry of entries) {
      if (entry.isFile())
        files.push(relative(base, join(entry.parentPath, entry.name)).split('\\').join('/'));
    }
  }
  const hash = createHash('sha256');
  for (const file of files.sort()) {
    hash.update(file).update('\0');
    hash.update(await readFile(join(base, file))).update('\0');
  }
  return hash.digest('hex');
}
