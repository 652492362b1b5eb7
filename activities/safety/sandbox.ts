import { randomUUID } from 'node:crypto';
import { constants, existsSync, type Stats } from 'node:fs';
import {
  type FileHandle,
  link,
  lstat,
  mkdir,
  open,
  readlink,
  realpath,
  rm,
  rmdir,
  stat,
  unlink,
} from 'node:fs/promises';
import { dirname, isAbsolute, join, relative, sep } from 'node:path';
import { relativePathProblem } from '../../src/contracts/sandboxed-path.ts';
import { ToolDenied, ToolError } from '../tool-implementation.ts';

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

/** Options for {@link sandboxedPath}. */
export interface SandboxOptions {
  /**
   * Test hook: runs after the folder was checked and before a file in it is opened (the temporary
   * file of a write, or the file a read asked for), so a test can swap a folder for a symlink
   * exactly inside the race window and prove the swap is caught.
   */
  readonly beforeOpenForTests?: (directory: string) => Promise<void> | void;
  /**
   * Test hook: which implementation to use. Default: 'anchored' where `/proc/self/fd` exists
   * (Linux), 'path-checked' elsewhere. Tests pick 'path-checked' on Linux too, so that the
   * implementation other systems run is tested; 'anchored' works only where `/proc/self/fd` does.
   */
  readonly implementationForTests?: 'anchored' | 'path-checked';
}

/**
 * A folder that tool code may read and write below, and nowhere else. Every path is checked twice:
 * lexically (the same rules as the contract's `sandboxedRelativePath`), then against the file
 * system right before the side effect.
 *
 * On Linux the file system is then only reached through descriptors (docs/security.md): each folder
 * is opened from the descriptor of the one above it, `/proc/self/fd/<n>/<name>` with `O_NOFOLLOW`,
 * and folders, temporary files and the file itself are created through the descriptor of the
 * folder that was opened. A folder swapped for a symlink at any moment is refused where it is
 * met, and nothing (no content, no file, no folder) is created through it. A write succeeds only
 * if its folder is still at the checked place afterwards; otherwise what it made is removed
 * through the same descriptor. Reads go the same way. Without `/proc/self/fd` (macOS, BSDs) the
 * paths are checked before and after each step instead: a swap in the window between can leave an
 * empty temporary file or an empty folder behind it, and is then refused.
 */
export function sandboxedPath(base: string, options: SandboxOptions = {}): Sandbox {
  let realBasePromise: Promise<string> | undefined;
  const realBase = () => {
    realBasePromise ??= mkdir(base, { recursive: true }).then(() => realpath(base));
    return realBasePromise;
  };
  const resolve = (relativePath: string) => resolveInside(realBase, relativePath);
  const implementation = options.implementationForTests ?? (descriptorsAnchor ? 'anchored' : 'path-checked');
  const operations =
    implementation === 'anchored'
      ? anchoredOperations({ realBase, options })
      : pathCheckedOperations({ realBase, resolve, options });
  return { base, resolve, readFile: operations.readFile, writeNewFile: operations.writeNewFile };
}

/**
 * A path that passed the lexical check, split into its parts below the sandbox's real folder. The
 * check comes first: a refused path never makes the sandbox's folder.
 */
async function checkedParts(
  realBase: () => Promise<string>,
  relativePath: string,
): Promise<{ root: string; parts: string[] }> {
  const problem = relativePathProblem(relativePath);
  if (problem) throw new ToolDenied(`Path refused: ${problem}.`);
  const root = await realBase();
  return { root, parts: relativePath.normalize('NFC').split('/') };
}

/** The absolute path for a relative one, checked against the file system as it is now. */
async function resolveInside(realBase: () => Promise<string>, relativePath: string): Promise<string> {
  const { root, parts } = await checkedParts(realBase, relativePath);
  let current = root;
  // Walk every existing component with lstat: an intermediate symlink is refused, not followed.
  for (const part of parts) {
    current = join(current, part);
    const info = await lstat(current).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return undefined;
      // A name too long or a folder that may not be searched says so; ENOTDIR and the rest are a
      // file where a folder should be. Nothing was touched yet.
      throw fileSystemRefusal(error) ?? notAFolder();
    });
    if (!info) break;
    if (info.isSymbolicLink()) throw new ToolDenied('Path refused: it passes through a symbolic link.');
  }
  const target = join(root, ...parts);
  const deepestExisting = await deepestExistingAncestor(target);
  const real = await realpath(deepestExisting).catch(() => {
    throw new ToolDenied('Path refused: the folder changed while it was being checked.');
  });
  if (!isInside(root, real)) throw new ToolDenied('Path refused: it resolves outside the sandbox.');
  return target;
}

function isInside(root: string, candidate: string): boolean {
  const path = relative(root, candidate);
  // A name such as `..notes` is inside; only `..` itself or a `../` prefix leaves the root.
  return path === '' || (path !== '..' && !path.startsWith(`..${sep}`) && !isAbsolute(path));
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

async function stillReal(directory: string): Promise<boolean> {
  return (await realpath(directory).catch(() => '')) === directory;
}

/**
 * Creates the missing folders from `root` down to `directory` one level at a time. A recursive
 * mkdir would follow a folder swapped for a symlink on the way and create empty folders outside the
 * sandbox; here each folder, new or existing, must be a real folder still inside the sandbox (its
 * realpath is its own path) before anything is created below it. On a refusal, the folders this
 * call created are removed again, deepest first, and only if empty.
 */
async function createFolders(root: string, directory: string): Promise<void> {
  const parts = relative(root, directory)
    .split(sep)
    .filter((part) => part !== '');
  const created: string[] = [];
  let current = root;
  try {
    for (const part of parts) {
      current = join(current, part);
      const made = await mkdir(current).then(
        () => true,
        (error: NodeJS.ErrnoException) => {
          if (error.code === 'EEXIST') return false;
          if (error.code === 'ENOENT' || error.code === 'ELOOP') throw foldersChanged();
          throw fileSystemRefusal(error) ?? notAFolder();
        },
      );
      if (made) created.push(current);
      const info = await lstat(current).catch(() => undefined);
      if (!info || info.isSymbolicLink()) throw foldersChanged();
      if (!info.isDirectory()) throw notAFolder();
      if (!(await stillReal(current))) throw foldersChanged();
    }
  } catch (error) {
    for (const folder of created.reverse()) await rmdir(folder).catch(() => undefined);
    throw error;
  }
}

/**
 * Whether an open file is the one at `target`. O_NOFOLLOW guards only the last component, so a
 * folder on the way swapped for a symlink after the check would open a file elsewhere. On Linux
 * the kernel names the file behind a descriptor, and no later swap changes that name. Elsewhere
 * the file now at the checked place must be the one opened.
 */
async function isOpenedAt(handle: FileHandle, target: string): Promise<boolean> {
  const named = await readlink(`/proc/self/fd/${handle.fd}`).catch(() => undefined);
  if (named !== undefined) return named === target;
  return isStillAt(target, await handle.stat(), (path) => lstat(path));
}

/**
 * Whether the file at `path`, reached through a folder that is still real before and after the
 * look-up, is the same file (device and inode) as `opened`.
 */
async function isStillAt(
  path: string,
  opened: Stats,
  lookUp: (path: string) => Promise<Stats>,
): Promise<boolean> {
  const directory = dirname(path);
  if (!(await stillReal(directory))) return false;
  const seen = await lookUp(path).catch(() => undefined);
  if (!seen || seen.ino !== opened.ino || seen.dev !== opened.dev) return false;
  return stillReal(directory);
}

/** Reads and writes that check paths before and after each step (systems without /proc/self/fd). */
function pathCheckedOperations(context: {
  readonly realBase: () => Promise<string>;
  readonly resolve: (relativePath: string) => Promise<string>;
  readonly options: SandboxOptions;
}): Pick<Sandbox, 'readFile' | 'writeNewFile'> {
  return {
    async readFile(relativePath, readOptions = {}) {
      const target = await context.resolve(relativePath);
      await context.options.beforeOpenForTests?.(dirname(target));
      const handle = await openForReading(target);
      try {
        // Checked before a byte is read: a swap after the check must not read a file elsewhere.
        if (!(await isOpenedAt(handle, target))) {
          throw new ToolDenied('Path refused: the folder changed while the file was being opened.');
        }
        return await readRegularFile(handle, readOptions.maxBytes);
      } finally {
        await handle.close();
      }
    },
    async writeNewFile(relativePath, content, writeOptions = {}) {
      const target = await context.resolve(relativePath);
      const directory = dirname(target);
      await createFolders(await context.realBase(), directory);
      // Checked again right before the open; this also covers a file directly in the sandbox, where
      // createFolders walked no folder.
      if (!(await stillReal(directory))) throw folderChanged();
      await context.options.beforeOpenForTests?.(directory);
      const temporary = join(directory, `.tg-${randomUUID()}.tmp`);
      await writeTemporary(temporary, content, writeOptions.signal);
      await linkTemporary(temporary, target);
      return target;
    },
  };
}

/**
 * Writes `content` to a new temporary file at `temporary`, by path, and makes sure the file written
 * is the one at the checked place; on any failure the temporary file is removed again.
 */
async function writeTemporary(
  temporary: string,
  content: string,
  signal: AbortSignal | undefined,
): Promise<void> {
  // Any failure to open (the folder vanished or became a link) happens before content exists.
  const handle = await open(
    temporary,
    constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
    0o640,
  ).catch((error: NodeJS.ErrnoException) => {
    throw fileSystemRefusal(error) ?? folderChanged();
  });
  // The file just opened must be the one at the checked place: reached through a folder that is
  // still real, before and after looking it up. Checked before any content is written.
  const opened = await handle.stat();
  const isOurs = () => isStillAt(temporary, opened, (path) => stat(path));
  try {
    if (!(await isOurs())) throw folderChanged();
    await handle.writeFile(content, { signal });
    await handle.sync();
    if (!(await isOurs())) throw folderChanged();
  } catch (error) {
    await handle.close();
    await rm(temporary, { force: true }).catch(() => undefined);
    throw error;
  }
  await handle.close();
}

/** Gives the written temporary file its name, never over an existing file; then removes the temporary name. */
async function linkTemporary(temporary: string, target: string): Promise<void> {
  try {
    // link() fails if the name exists, so a report is never overwritten and never half-written.
    // Both names go through the same folder: if it was swapped after the last check, the
    // temporary file is not there and link fails with ENOENT instead of writing outside.
    await link(temporary, target);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') {
      throw new ToolDenied('A file with that name already exists; choose a new name.');
    }
    if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'ELOOP') throw folderChanged();
    // Nothing was created under the target name, so the effect is known to be none.
    throw new ToolError('The file could not be written. Try again later.', {
      effect: 'none',
      cause: error,
    });
  } finally {
    await rm(temporary, { force: true }).catch(() => undefined);
  }
}

// O_NONBLOCK: opening a named pipe must not wait for a writer; it is refused by readRegularFile.
const readFlags = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;

/** Opens a file to read it, never through a symlink as its last part; refusals the model can act on. */
function openForReading(path: string): Promise<FileHandle> {
  return open(path, readFlags).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ELOOP') throw new ToolDenied('Path refused: it is a symbolic link.');
    if (error.code === 'ENOENT') throw new ToolDenied('No such file in the sandbox.');
    if (error.code === 'ENOTDIR') throw notAFolder();
    throw fileSystemRefusal(error) ?? error;
  });
}

/** The text of an open file, if it is a regular file no larger than `maxBytes` (default 1 MiB). */
async function readRegularFile(handle: FileHandle, maxBytesOption: number | undefined): Promise<string> {
  const info = await handle.stat();
  if (!info.isFile()) {
    throw new ToolDenied('Path refused: it is a folder or a special file, not a file. Name a file.');
  }
  const maxBytes = maxBytesOption ?? 1024 * 1024;
  if (info.size > maxBytes) throw new ToolDenied(`The file is larger than ${maxBytes} bytes.`);
  return await handle.readFile({ encoding: 'utf8' });
}

/** Whether this system names an open descriptor's file under /proc/self/fd (Linux). */
const descriptorsAnchor = existsSync('/proc/self/fd');

const folderFlags = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;

/** A path that reaches `name` inside the folder open as `folder`, whatever its path is now. */
const inFolder = (folder: FileHandle, name: string) => `/proc/self/fd/${folder.fd}/${name}`;

/**
 * The folders of a path, each opened from the one above it. `create` makes missing ones (and says
 * which); a symlink, a file or an error anywhere is a refusal, with the folders this call made
 * removed again through their parents' descriptors, deepest first.
 */
async function openFolders(
  root: string,
  parts: readonly string[],
  create: boolean,
): Promise<{ folders: FileHandle[]; created: Array<[FileHandle, string]> }> {
  const folders: FileHandle[] = [
    await open(root, folderFlags).catch((error: NodeJS.ErrnoException) => {
      throw fileSystemRefusal(error) ?? error;
    }),
  ];
  const created: Array<[FileHandle, string]> = [];
  try {
    for (const part of parts) {
      const parent = folders.at(-1)!;
      if (create) {
        const made = await mkdir(inFolder(parent, part)).then(
          () => true,
          (error: NodeJS.ErrnoException) => {
            if (error.code === 'EEXIST') return false;
            throw fileSystemRefusal(error) ?? foldersChanged();
          },
        );
        if (made) created.push([parent, part]);
      }
      folders.push(await openFolder(parent, part));
    }
    return { folders, created };
  } catch (error) {
    await removeFolders(created);
    await closeAll(folders);
    throw error;
  }
}

/** One folder inside an open one, never through a symbolic link. */
async function openFolder(parent: FileHandle, part: string): Promise<FileHandle> {
  try {
    return await open(inFolder(parent, part), folderFlags);
  } catch (caught) {
    const error = caught as NodeJS.ErrnoException;
    if (error.code === 'ENOENT') throw new ToolDenied('No such file in the sandbox.');
    // O_DIRECTORY answers ENOTDIR for a symlink as for a file: tell them apart for the message.
    const isLink = await lstat(inFolder(parent, part)).then(
      (info) => info.isSymbolicLink(),
      () => false,
    );
    if (error.code === 'ELOOP' || isLink)
      throw new ToolDenied('Path refused: it passes through a symbolic link.');
    throw fileSystemRefusal(error) ?? notAFolder();
  }
}

async function removeFolders(created: ReadonlyArray<[FileHandle, string]>): Promise<void> {
  for (const [parent, part] of [...created].reverse())
    await rmdir(inFolder(parent, part)).catch(() => undefined);
}

async function closeAll(handles: readonly FileHandle[]): Promise<void> {
  for (const handle of handles) await handle.close().catch(() => undefined);
}

/**
 * Where an open folder is now: the kernel's name for it ('' once it is deleted). A place longer
 * than the kernel can name is refused as too long, as a path-based open of it would be.
 */
function placeOf(folder: FileHandle): Promise<string> {
  return readlink(`/proc/self/fd/${folder.fd}`).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENAMETOOLONG') throw fileSystemRefusal(error);
    return '';
  });
}

/** Reads and writes that reach the file system only through descriptors (Linux). */
function anchoredOperations(context: {
  readonly realBase: () => Promise<string>;
  readonly options: SandboxOptions;
}): Pick<Sandbox, 'readFile' | 'writeNewFile'> {
  const split = async (relativePath: string) => {
    const { root, parts } = await checkedParts(context.realBase, relativePath);
    return { root, folders: parts.slice(0, -1), name: parts.at(-1)!, target: join(root, ...parts) };
  };
  return {
    async readFile(relativePath, readOptions = {}) {
      const path = await split(relativePath);
      const { folders } = await openFolders(path.root, path.folders, false);
      try {
        await context.options.beforeOpenForTests?.(dirname(path.target));
        const handle = await openForReading(inFolder(folders.at(-1)!, path.name));
        try {
          // The folders may have been moved since they were opened: read only from a folder that
          // is, now that the file is open, still at the checked place.
          if ((await placeOf(folders.at(-1)!)) !== dirname(path.target)) {
            throw new ToolDenied('Path refused: the folder changed while the file was being opened.');
          }
          return await readRegularFile(handle, readOptions.maxBytes);
        } finally {
          await handle.close();
        }
      } finally {
        await closeAll(folders);
      }
    },
    async writeNewFile(relativePath, content, writeOptions = {}) {
      const path = await split(relativePath);
      const { folders, created } = await openFolders(path.root, path.folders, true);
      const folder = folders.at(-1)!;
      const temporary = `.tg-${randomUUID()}.tmp`;
      let linked = false;
      try {
        await context.options.beforeOpenForTests?.(dirname(path.target));
        const handle = await open(
          inFolder(folder, temporary),
          constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
          0o640,
        ).catch((error: NodeJS.ErrnoException) => {
          throw fileSystemRefusal(error) ?? folderChanged();
        });
        try {
          await handle.writeFile(content, { signal: writeOptions.signal });
          await handle.sync();
        } finally {
          await handle.close();
        }
        // link() fails if the name exists, so a file is never overwritten and never half-written.
        await link(inFolder(folder, temporary), inFolder(folder, path.name)).catch(
          (error: NodeJS.ErrnoException) => {
            if (error.code === 'EEXIST')
              throw new ToolDenied('A file with that name already exists; choose a new name.');
            // The open folder was deleted meanwhile (its descriptor no longer reaches a name).
            if (error.code === 'ENOENT') throw folderChanged();
            // Nothing was created under the target name, so the effect is known to be none.
            throw (
              fileSystemRefusal(error) ??
              new ToolError('The file could not be written. Try again later.', {
                effect: 'none',
                cause: error,
              })
            );
          },
        );
        linked = true;
        // The folder the file went into must still be the checked one: one swapped or moved away
        // during the write leaves nothing behind, and the write is refused.
        if ((await placeOf(folder)) !== dirname(path.target)) throw folderChanged();
        return path.target;
      } catch (error) {
        // What this write made goes, in the folder it was made in: the file, the temporary file,
        // then the folders, deepest first.
        if (linked) await unlink(inFolder(folder, path.name)).catch(() => undefined);
        await unlink(inFolder(folder, temporary)).catch(() => undefined);
        await removeFolders(created);
        throw error;
      } finally {
        await unlink(inFolder(folder, temporary)).catch(() => undefined);
        await closeAll(folders);
      }
    },
  };
}

function folderChanged(): ToolDenied {
  return new ToolDenied('Path refused: the folder changed while the file was being written.');
}

function foldersChanged(): ToolDenied {
  return new ToolDenied(
    'Path refused: a folder on the path became a symbolic link or led outside the sandbox while the ' +
      'folders were being created. Nothing was written.',
  );
}

function notAFolder(): ToolDenied {
  return new ToolDenied('Path refused: a part of the path is not a folder.');
}

/**
 * The refusal for a file-system error the caller can act on (a name too long, a permission missing),
 * or undefined, so each call site keeps its own message for the rest. Nothing names the path: the
 * message goes to the model.
 */
function fileSystemRefusal(error: NodeJS.ErrnoException): ToolDenied | undefined {
  switch (error.code) {
    case 'ENAMETOOLONG':
      return new ToolDenied(
        'Path refused: the path or a name in it is too long for the file system. Use shorter names ' +
          '(each part at most 255 bytes) and fewer folders.',
      );
    case 'EACCES':
    case 'EPERM':
      return new ToolDenied(
        'Permission denied: the worker may not read or create this path in the sandbox. Choose another ' +
          'path; if this one is needed, the operator must fix the permissions of the sandbox folder.',
      );
    default:
      return undefined;
  }
}
