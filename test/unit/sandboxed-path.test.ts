import { execFileSync } from 'node:child_process';
import {
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  realpath,
  rename,
  rm,
  stat,
  symlink,
  writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { sandboxedPath } from '../../activities/safety/sandbox.ts';
import { ToolDenied } from '../../activities/tool-implementation.ts';
import { relativePathProblem, sandboxedRelativePath } from '../../src/contracts/sandboxed-path.ts';
import { hostilePaths, legitimatePaths } from '../support/hostile-inputs.ts';

/**
 * A seam in node:fs/promises for what the real file system cannot be made to do on cue: a folder
 * swapped for a symlink inside a mkdir, or a permission error (these tests may run as root). With no
 * hook set, every call goes straight through.
 */
const fileSystem = vi.hoisted(() => ({
  before: undefined as undefined | ((call: 'mkdir' | 'lstat', path: string) => Promise<void> | void),
}));
vi.mock('node:fs/promises', async (importOriginal) => {
  const actual = await importOriginal<typeof import('node:fs/promises')>();
  return {
    ...actual,
    mkdir: async (...args: Parameters<typeof actual.mkdir>) => {
      await fileSystem.before?.('mkdir', String(args[0]));
      return actual.mkdir(...args);
    },
    lstat: async (...args: Parameters<typeof actual.lstat>) => {
      await fileSystem.before?.('lstat', String(args[0]));
      return actual.lstat(...args);
    },
  };
});

function fileSystemError(code: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${code}: injected by the test`), { code });
}

/** Every file below a folder, recursively, as relative paths. */
async function listFiles(root: string): Promise<string[]> {
  const entries = await readdir(root, { recursive: true, withFileTypes: true }).catch(() => []);
  return entries.filter((entry) => entry.isFile()).map((entry) => join(entry.parentPath, entry.name));
}

describe('sandboxed path: lexical check', () => {
  it(`refuses all ${hostilePaths.length} hostile paths, with a reason`, () => {
    expect(hostilePaths.length).toBeGreaterThanOrEqual(30);
    const accepted = hostilePaths.filter(([, path]) => relativePathProblem(path) === undefined);
    expect(accepted).toEqual([]);
    const schema = sandboxedRelativePath();
    for (const [label, path] of hostilePaths) {
      const result = schema.safeParse(path);
      expect(result.success, label).toBe(false);
      expect(result.error?.issues[0]?.message, label).toMatch(/^Path refused: /);
    }
  });

  it('accepts legitimate nested paths', () => {
    for (const path of legitimatePaths) expect(relativePathProblem(path), path).toBeUndefined();
  });

  it('normalises to NFC before checking and never decodes', () => {
    // "e" + combining acute is the same name as the precomposed "é" after NFC: accepted.
    expect(relativePathProblem('cafe\u0301.md')).toBeUndefined();
    // %2e stays literal text and is refused as an encoding, never turned into a dot.
    expect(relativePathProblem('%2e')).toMatch(/percent-encoded/);
  });

  it('refuses a lone UTF-16 surrogate, and accepts a character written as a proper pair', () => {
    for (const path of ['a\uD800b', 'notes/\uDC00.md', 'report\uD83D', '\uDE00report.md']) {
      expect(relativePathProblem(path), JSON.stringify(path)).toMatch(/broken character/);
      const result = sandboxedRelativePath().safeParse(path);
      expect(result.success).toBe(false);
      expect(result.error?.issues[0]?.message).toMatch(/^Path refused: .*valid Unicode text\.$/);
    }
    expect(relativePathProblem('notes/\uD83D\uDE00.md')).toBeUndefined();
  });

  it('refuses a path part longer than 255 bytes in UTF-8, though short in characters', () => {
    // 128 two-byte characters: 128 characters, 256 bytes. The file system would refuse the name.
    for (const part of ['é'.repeat(128), '日'.repeat(86), '\u{1F600}'.repeat(64)]) {
      expect(relativePathProblem(`notes/${part}`)).toMatch(/at most 255 bytes/);
      const result = sandboxedRelativePath().safeParse(part);
      expect(result.error?.issues[0]?.message).toMatch(/^Path refused: .*at most 255 bytes/);
    }
    // Exactly 255 bytes is a name the file system takes.
    expect(relativePathProblem(`${'é'.repeat(127)}a`)).toBeUndefined();
    expect(relativePathProblem('a'.repeat(255))).toBeUndefined();
  });
});

describe('sandboxed path: execution-time check', () => {
  let root: string;
  let base: string;
  let outside: string;
  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'toolgate-sandbox-'));
    base = join(root, 'reports');
    outside = join(root, 'reports_evil');
    await mkdir(base, { recursive: true });
    await mkdir(outside, { recursive: true });
  });
  afterEach(async () => {
    fileSystem.before = undefined;
    await rm(root, { recursive: true, force: true });
  });

  /** A sandbox whose checked folder is swapped for a link to `outside` right before each open. */
  function swappingSandbox() {
    let swapped = 0;
    const sandbox = sandboxedPath(base, {
      beforeOpenForTests: async (directory) => {
        // The attacker's move, exactly inside the race window: the checked folder becomes a link.
        await rename(directory, `${directory}.moved`);
        await symlink(outside, directory);
        swapped++;
      },
    });
    return { sandbox, swaps: () => swapped };
  }

  it('refuses every hostile path with ToolDenied and writes nothing anywhere', async () => {
    const sandbox = sandboxedPath(base);
    for (const [label, path] of hostilePaths) {
      await expect(sandbox.writeNewFile(path, 'x'), label).rejects.toBeInstanceOf(ToolDenied);
    }
    expect(await listFiles(root)).toEqual([]);
  });

  it('writes legitimate nested paths inside the sandbox', async () => {
    const sandbox = sandboxedPath(base);
    for (const path of legitimatePaths) await sandbox.writeNewFile(path, `content of ${path}`);
    const written = await listFiles(base);
    expect(written).toHaveLength(legitimatePaths.length);
    expect(await readFile(join(base, 'team-a/2024/q1/report.md'), 'utf8')).toBe(
      'content of team-a/2024/q1/report.md',
    );
    expect(await listFiles(outside)).toEqual([]);
  });

  it('refuses an intermediate symlink, even one pointing at a sibling with the same prefix', async () => {
    await symlink(outside, join(base, 'link'));
    const sandbox = sandboxedPath(base);
    await expect(sandbox.writeNewFile('link/x.md', 'x')).rejects.toThrow(/symbolic link/);
    await expect(sandbox.readFile('link/x.md')).rejects.toBeInstanceOf(ToolDenied);
    expect(await listFiles(outside)).toEqual([]);
  });

  it('refuses to read a final-component symlink (O_NOFOLLOW)', async () => {
    await writeFile(join(outside, 'secret.md'), 'secret');
    await symlink(join(outside, 'secret.md'), join(base, 'innocent.md'));
    await expect(sandboxedPath(base).readFile('innocent.md')).rejects.toBeInstanceOf(ToolDenied);
  });

  it('reads a file inside the sandbox, and refuses one over the size limit', async () => {
    await mkdir(join(base, 'q3'));
    await writeFile(join(base, 'q3/r.md'), 'inside');
    const sandbox = sandboxedPath(base);
    expect(await sandbox.readFile('q3/r.md')).toBe('inside');
    await expect(sandbox.readFile('q3/r.md', { maxBytes: 3 })).rejects.toThrow(/larger than 3 bytes/);
    await expect(sandbox.readFile('q3/missing.md')).rejects.toThrow(/No such file/);
  });

  it('refuses a folder, a named pipe, and a path through a file, each as a denial the model can act on', async () => {
    await mkdir(join(base, 'd'));
    await writeFile(join(base, 'plain.md'), 'x');
    execFileSync('mkfifo', [join(base, 'pipe')]);
    const sandbox = sandboxedPath(base);
    for (const [path, reason] of [
      ['d', /it is a folder or a special file/],
      // Opening a pipe would wait for a writer forever: it must be refused at once.
      ['pipe', /it is a folder or a special file/],
      ['plain.md/x.md', /a part of the path is not a folder/],
    ] as const) {
      const attempt = sandbox.readFile(path);
      await expect(attempt, path).rejects.toBeInstanceOf(ToolDenied);
      await expect(attempt, path).rejects.toThrow(reason);
    }
  });

  it('catches a folder swapped for a symlink between validation and read, before reading', async () => {
    await mkdir(join(base, 'q3'));
    await writeFile(join(base, 'q3/r.md'), 'inside');
    await writeFile(join(outside, 'r.md'), 'SECRET-OUTSIDE');
    const { sandbox, swaps } = swappingSandbox();
    const read = sandbox.readFile('q3/r.md');
    await expect(read).rejects.toBeInstanceOf(ToolDenied);
    await expect(read).rejects.toThrow(/folder changed/);
    expect(swaps()).toBe(1);
  });

  it('creates folders one level at a time: a folder swapped for a symlink during mkdir creates nothing outside', async () => {
    const sandbox = sandboxedPath(base);
    // A link that is there at the check is refused before any folder is made.
    await symlink(outside, join(base, 'static'));
    await expect(sandbox.writeNewFile('static/a/b/file.txt', 'x')).rejects.toThrow(/symbolic link/);
    expect(await readdir(outside, { recursive: true })).toEqual([]);
    // The attacker's move inside mkdir itself, after every check: `link` becomes a link to outside.
    await mkdir(join(base, 'link'));
    // The sandbox works on the real path of its folder, so the hook compares against that.
    const realBase = await realpath(base);
    let swapped = 0;
    fileSystem.before = async (call, path) => {
      if (call !== 'mkdir' || swapped > 0 || !path.startsWith(join(realBase, 'link/'))) return;
      await rename(join(base, 'link'), join(base, 'link.moved'));
      await symlink(outside, join(base, 'link'));
      swapped++;
    };
    const write = sandbox.writeNewFile('link/a/b/file.txt', 'confidential');
    await expect(write).rejects.toBeInstanceOf(ToolDenied);
    expect(swapped).toBe(1);
    // A recursive mkdir followed the link and left outside/a/b; the one folder made through it is
    // removed again.
    expect(await readdir(outside, { recursive: true })).toEqual([]);
    await expect(write).rejects.toThrow(/became a symbolic link or led outside the sandbox/);
    expect(await readdir(join(base, 'link.moved'))).toEqual([]);
  });

  it('says a name is too long for the file system, not that a part is not a folder', async () => {
    // A sandbox whose own path is long: a valid 250-character name takes the whole path past the
    // file system's limit (4096 bytes on Linux), which only the file system can tell.
    let longBase = root;
    while (longBase.length < 3900)
      longBase = join(longBase, 'd'.repeat(Math.min(200, 3900 - longBase.length)));
    const sandbox = sandboxedPath(longBase);
    const write = sandbox.writeNewFile('n'.repeat(250), 'x');
    await expect(write).rejects.toBeInstanceOf(ToolDenied);
    await expect(write).rejects.toThrow(/too long for the file system\. Use shorter names/);
    await expect(sandbox.readFile('n'.repeat(250))).rejects.toThrow(/too long for the file system/);
    // A single name over 255 bytes never reaches the file system: the lexical check refuses it.
    await expect(sandboxedPath(base).writeNewFile('é'.repeat(200), 'x')).rejects.toThrow(/at most 255 bytes/);
  });

  it('says permission is denied, and removes the folders it created before the refusal', async () => {
    const sandbox = sandboxedPath(base);
    const realBase = await realpath(base);
    fileSystem.before = (call, path) => {
      if (call === 'lstat' && path === join(realBase, 'locked')) throw fileSystemError('EACCES');
      if (call === 'mkdir' && path === join(realBase, 'p/q/r')) throw fileSystemError('EPERM');
    };
    await mkdir(join(base, 'locked'));
    const read = sandbox.readFile('locked/r.md');
    await expect(read).rejects.toBeInstanceOf(ToolDenied);
    await expect(read).rejects.toThrow(/^Permission denied: .*fix the permissions of the sandbox folder/);
    const write = sandbox.writeNewFile('p/q/r/report.md', 'x');
    await expect(write).rejects.toThrow(/^Permission denied: .*Choose another path/);
    // p and p/q were made by this call before r was refused: both are gone again.
    expect(await readdir(base)).toEqual(['locked']);
  });

  it('never overwrites an existing file', async () => {
    const sandbox = sandboxedPath(base);
    await sandbox.writeNewFile('a.md', 'first');
    await expect(sandbox.writeNewFile('a.md', 'second')).rejects.toThrow(/already exists/);
    expect(await readFile(join(base, 'a.md'), 'utf8')).toBe('first');
  });

  it('catches a folder swapped for a symlink between validation and write', async () => {
    await mkdir(join(base, 'q3'));
    const { sandbox, swaps } = swappingSandbox();
    await expect(sandbox.writeNewFile('q3/summary.md', 'confidential')).rejects.toThrow(/folder changed/);
    expect(swaps()).toBe(1);
    // Nothing with content reached the other folder, and the report was not created anywhere.
    const leaked = await listFiles(outside);
    for (const file of leaked) expect((await stat(file)).size).toBe(0);
    expect(leaked.filter((file) => file.endsWith('summary.md'))).toEqual([]);
    expect(await listFiles(join(base, 'q3.moved'))).toEqual([]);
  });
});
