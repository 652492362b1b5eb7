import { randomUUID } from 'node:crypto';
import { constants } from 'node:fs';
import { link, lstat, mkdir, open, realpath, rm, stat } from 'node:fs/promises';
import { dirname, join, relative, sep } from 'node:path';
import { relativePathProblem } from '../../src/contracts/sandboxed-path.ts';
import { ToolDenied } from '../tool-implementation.ts';

/**
 * The execution-time half of a sandboxed path: the lexical check runs again (the contract may have
 * been bypassed), then the file system is consulted before any side effect.
 */
export interface Sandbox {
  readonly base: string;
  /** Resolves a relative path to an absolute one inside the sandbox, or throws ToolDenied. */
  resolve(relativePath: string): Promise<string>;
  /** Reads a file inside the sandbox without following a symlink at any level. */
  readFile(relativePath: string, options?: { maxBytes?: number }): Promise<string>;
  /** Creates a new file atomically; refuses to overwrite, and refuses any symlink on the way. */
  writeNewFile(relativePath: string, content: string, options?: { signal?: AbortSignal }): Promise<string>;
}

export function sandboxedPath(base: string): Sandbox {
  let realBasePromise: Promise<string> | undefined;
  const realBase = () => {
    realBasePromise ??= mkdir(base, { recursive: true }).then(() => realpath(base));
    return realBasePromise;
  };

  const isInside = (root: string, candidate: string) => {
    const path = relative(root, candidate);
    return path === '' || (!path.startsWith('..') && !path.startsWith(sep) && path !== '..');
  };

  async function resolve(relativePath: string): Promise<string> {
    const problem = relativePathProblem(relativePath);
    if (problem) throw new ToolDenied(`Path refused: ${problem}.`);
    const root = await realBase();
    const parts = relativePath.normalize('NFC').split('/');
    let current = root;
    // Walk every existing component with lstat: an intermediate symlink is refused, not followed.
    for (const part of parts) {
      current = join(current, part);
      const info = await lstat(current).catch((error: NodeJS.ErrnoException) => {
        if (error.code === 'ENOENT') return undefined;
        throw error;
      });
      if (!info) break;
      if (info.isSymbolicLink()) throw new ToolDenied('Path refused: it passes through a symbolic link.');
    }
    const target = join(root, ...parts);
    const deepestExisting = await deepestExistingAncestor(target);
    const real = await realpath(deepestExisting);
    if (!isInside(root, real)) throw new ToolDenied('Path refused: it resolves outside the sandbox.');
    return target;
  }

  async function deepestExistingAncestor(path: string): Promise<string> {
    let current = path;
    for (;;) {
      try {
        await lstat(current);
        return current;
      } catch {
        const parent = dirname(current);
        if (parent === current) return current;
        current = parent;
      }
    }
  }

  return {
    base,
    resolve,
    async readFile(relativePath, options = {}) {
      const target = await resolve(relativePath);
      const handle = await open(target, constants.O_RDONLY | constants.O_NOFOLLOW).catch(
        (error: NodeJS.ErrnoException) => {
          if (error.code === 'ELOOP') throw new ToolDenied('Path refused: it is a symbolic link.');
          if (error.code === 'ENOENT') throw new ToolDenied('No such file in the sandbox.');
          throw error;
        },
      );
      try {
        const info = await handle.stat();
        const maxBytes = options.maxBytes ?? 1024 * 1024;
        if (info.size > maxBytes) throw new ToolDenied(`The file is larger than ${maxBytes} bytes.`);
        return await handle.readFile({ encoding: 'utf8' });
      } finally {
        await handle.close();
      }
    },
    async writeNewFile(relativePath, content, options = {}) {
      const target = await resolve(relativePath);
      const root = await realBase();
      const directory = dirname(target);
      await mkdir(directory, { recursive: true });
      // Re-check after mkdir: a directory swapped for a symlink meanwhile is caught here.
      const realDirectory = await realpath(directory);
      if (realDirectory !== directory) {
        throw new ToolDenied('Path refused: the folder changed while the file was being written.');
      }
      const temporary = join(directory, `.tg-${randomUUID()}.tmp`);
      const handle = await open(
        temporary,
        constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
        0o640,
      );
      try {
        await handle.writeFile(content, { signal: options.signal });
        await handle.sync();
        const written = await handle.stat();
        // The file we wrote must still be the file at the checked location; otherwise a folder
        // was replaced by a symlink between the check and the write.
        const seen = await stat(temporary).catch(() => undefined);
        const stillThere = (await realpath(directory).catch(() => '')) === directory;
        if (!seen || !stillThere || seen.ino !== written.ino || seen.dev !== written.dev) {
          throw new ToolDenied('Path refused: the folder changed while the file was being written.');
        }
      } catch (error) {
        await handle.close();
        await rm(temporary, { force: true });
        throw error;
      }
      await handle.close();
      try {
        // link() fails if the name exists, so a report is never overwritten and never half-written.
        await link(temporary, target);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'EEXIST') {
          throw new ToolDenied('A file with that name already exists; choose a new name.');
        }
        throw error;
      } finally {
        await rm(temporary, { force: true });
      }
      return target;
    },
  };
}
