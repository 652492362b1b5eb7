import { execFileSync, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import {
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  realpath,
  rename,
  stat,
  symlink,
  writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { type SandboxOptions, sandboxedPath } from '../../activities/safety/sandbox.ts';
import { ToolDenied } from '../../activities/tool-implementation.ts';
import { relativePathProblem, sandboxedRelativePath } from '../../src/contracts/sandboxed-path.ts';
import { hostilePaths, legitimatePaths } from '../support/hostile-inputs.ts';

/**
 * A seam in node:fs/promises for what the real file system cannot be made to do on cue: a folder
 * swapped for a symlink inside a mkdir, or a permission error (these tests may run as root). With no
 * hook set, every call goes straight through.
 */
const fileSystem = vi.hoisted(() => ({
  before: undefined as undefined | ((call: 'mkdir' | 'lstat' | 'open', path: string) => Promise<void> | void),
}));
vi.mock('node:fs/promises', async (importOriginal) => {
  const actual = await importOriginal<typeof import('node:fs/promises')>();
  const { readlinkSync } = await import('node:fs');
  // The sandbox reaches files through /proc/self/fd/<n>/<name> on Linux: the hooks get the place
  // that names, so a test can name paths as they are on disk.
  const place = (path: unknown) =>
    String(path).replace(/^\/proc\/self\/fd\/(\d+)(?=\/)/, (whole, fd: string) => {
      try {
        return readlinkSync(`/proc/self/fd/${fd}`);
      } catch {
        return whole;
      }
    });
  return {
    ...actual,
    mkdir: async (...args: Parameters<typeof actual.mkdir>) => {
      await fileSystem.before?.('mkdir', place(args[0]));
      return actual.mkdir(...args);
    },
    lstat: async (...args: Parameters<typeof actual.lstat>) => {
      await fileSystem.before?.('lstat', place(args[0]));
      return actual.lstat(...args);
    },
    open: async (...args: Parameters<typeof actual.open>) => {
      await fileSystem.before?.('open', place(args[0]));
      return actual.open(...args);
    },
  };
});

/**
 * The implementations this system can run: Linux reaches the file system through descriptors
 * (/proc/self/fd) by default, and also runs the path-checked one that other systems use, so that one
 * is tested here too.
 */
type Implementation = NonNullable<SandboxOptions['implementationForTests']>;
const implementations: readonly Implementation[] = existsSync('/proc/self/fd')
  ? ['anchored', 'path-checked']
  : ['path-checked'];

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

describe.each(implementations)('sandboxed path: execution-time check (%s)', (implementation) => {
  const anchored = implementation === 'anchored';
  /** A sandbox of the implementation under test. */
  const sandboxFor = (folder: string, options: SandboxOptions = {}) =>
    sandboxedPath(folder, { ...options, implementationForTests: implementation });

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
    // GNU rm walks by descriptor, so it also removes the deep tree of the name-length test, whose
    // full paths are past what fs.rm can pass to the kernel.
    execFileSync('rm', ['-rf', root]);
  });

  /** A sandbox whose checked folder is swapped for a link to `outside` right before each open. */
  function swappingSandbox() {
    let swapped = 0;
    const sandbox = sandboxFor(base, {
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
    const sandbox = sandboxFor(base);
    for (const [label, path] of hostilePaths) {
      await expect(sandbox.writeNewFile(path, 'x'), label).rejects.toBeInstanceOf(ToolDenied);
    }
    expect(await listFiles(root)).toEqual([]);
  });

  it('writes legitimate nested paths inside the sandbox', async () => {
    const sandbox = sandboxFor(base);
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
    const sandbox = sandboxFor(base);
    await expect(sandbox.writeNewFile('link/x.md', 'x')).rejects.toThrow(/symbolic link/);
    await expect(sandbox.readFile('link/x.md')).rejects.toBeInstanceOf(ToolDenied);
    expect(await listFiles(outside)).toEqual([]);
  });

  it('refuses to read a final-component symlink (O_NOFOLLOW)', async () => {
    await writeFile(join(outside, 'secret.md'), 'secret');
    await symlink(join(outside, 'secret.md'), join(base, 'innocent.md'));
    await expect(sandboxFor(base).readFile('innocent.md')).rejects.toBeInstanceOf(ToolDenied);
  });

  it('reads a file inside the sandbox, and refuses one over the size limit', async () => {
    await mkdir(join(base, 'q3'));
    await writeFile(join(base, 'q3/r.md'), 'inside');
    const sandbox = sandboxFor(base);
    expect(await sandbox.readFile('q3/r.md')).toBe('inside');
    await expect(sandbox.readFile('q3/r.md', { maxBytes: 3 })).rejects.toThrow(/larger than 3 bytes/);
    await expect(sandbox.readFile('q3/missing.md')).rejects.toThrow(/No such file/);
  });

  it('refuses a folder, a named pipe, and a path through a file, each as a denial the model can act on', async () => {
    await mkdir(join(base, 'd'));
    await writeFile(join(base, 'plain.md'), 'x');
    execFileSync('mkfifo', [join(base, 'pipe')]);
    const sandbox = sandboxFor(base);
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

  it('never reads through a folder swapped for a symlink between validation and read', async () => {
    await mkdir(join(base, 'q3'));
    await writeFile(join(base, 'q3/r.md'), 'inside');
    await writeFile(join(outside, 'r.md'), 'SECRET-OUTSIDE');
    const { sandbox, swaps } = swappingSandbox();
    // With descriptors the file opened is the one in the real folder, moved aside; without, the
    // path check catches the swap. Either way a folder no longer at the checked place is refused.
    const read = sandbox.readFile('q3/r.md');
    await expect(read).rejects.toBeInstanceOf(ToolDenied);
    await expect(read).rejects.toThrow(/folder changed/);
    expect(swaps()).toBe(1);
  });

  it('creates folders one level at a time: a folder swapped for a symlink during mkdir creates nothing outside', async () => {
    const sandbox = sandboxFor(base);
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
    // By path, the swap is met in mkdir; through descriptors the folders are made in the real one,
    // moved aside, and the write is refused when its folder is found away from the checked place.
    await expect(write).rejects.toThrow(
      anchored
        ? /folder changed while the file was being written/
        : /became a symbolic link or led outside the sandbox/,
    );
    expect(await readdir(join(base, 'link.moved'))).toEqual([]);
  });

  it('says a name is too long for the file system, not that a part is not a folder', async () => {
    // A sandbox whose own path is long: a valid 250-character name takes the whole path past the
    // file system's limit (4096 bytes on Linux), which only the file system can tell. Reached
    // through descriptors, a path is never that long, and the write succeeds.
    let longBase = root;
    while (longBase.length < 3900)
      longBase = join(longBase, 'd'.repeat(Math.min(200, 3900 - longBase.length)));
    const sandbox = sandboxFor(longBase);
    const write = sandbox.writeNewFile('n'.repeat(250), 'x');
    if (anchored) {
      await expect(write).resolves.toMatch(/\/n{250}$/);
      await expect(sandbox.readFile('n'.repeat(250))).resolves.toBe('x');
      fileSystem.before = (call) => {
        if (call === 'open') throw fileSystemError('ENAMETOOLONG');
      };
      await expect(sandbox.readFile('n'.repeat(250))).rejects.toThrow(
        /too long for the file system\. Use shorter names/,
      );
      fileSystem.before = undefined;
    } else {
      await expect(write).rejects.toBeInstanceOf(ToolDenied);
      await expect(write).rejects.toThrow(/too long for the file system\. Use shorter names/);
      await expect(sandbox.readFile('n'.repeat(250))).rejects.toThrow(/too long for the file system/);
    }
    // A single name over 255 bytes never reaches the file system: the lexical check refuses it.
    await expect(sandboxFor(base).writeNewFile('é'.repeat(200), 'x')).rejects.toThrow(/at most 255 bytes/);
  });

  it('says permission is denied, and removes the folders it created before the refusal', async () => {
    const sandbox = sandboxFor(base);
    const realBase = await realpath(base);
    fileSystem.before = (call, path) => {
      if ((call === 'lstat' || call === 'open') && path === join(realBase, 'locked'))
        throw fileSystemError('EACCES');
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
    const sandbox = sandboxFor(base);
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

  it('under a real race (another process swapping a folder for a symlink), writes and reads only inside', async () => {
    // No seam here: a separate process swaps base/q with a symlink to `outside` (renameat2 with
    // RENAME_EXCHANGE, so q never vanishes and the sandbox never makes a fresh one), as fast as it
    // can, while writes and reads run. Node has no renameat2; Python reaches it through libc.
    await mkdir(join(base, 'q'));
    await writeFile(join(base, 'q', 'seed.md'), 'inside');
    await writeFile(join(outside, 'seed.md'), 'SECRET');
    await symlink(outside, join(base, 'q.link'));
    const flipper = spawn(
      'python3',
      [
        '-c',
        `import ctypes, sys, time
libc = ctypes.CDLL(None, use_errno=True)
q, other = (p.encode() for p in sys.argv[1:3])
flips, stop = 0, time.monotonic() + 4
while time.monotonic() < stop:
    if libc.renameat2(-100, q, -100, other, 2) != 0:
        sys.exit("renameat2: errno %d" % ctypes.get_errno())
    flips += 1
if flips % 2:
    libc.renameat2(-100, q, -100, other, 2)
print(flips)`,
        join(base, 'q'),
        join(base, 'q.link'),
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let flips = '';
    flipper.stdout.on('data', (chunk) => (flips += chunk));
    const ended = new Promise<number | null>((done) => flipper.on('exit', done));
    const sandbox = sandboxFor(base);
    const written: string[] = [];
    const reads: string[] = [];
    let refused = 0;
    for (let i = 0; i < 400 && flipper.exitCode === null; i++) {
      try {
        written.push(await sandbox.writeNewFile(`q/r-${i}.md`, `report ${i}`));
      } catch (error) {
        expect(error).toBeInstanceOf(ToolDenied);
        refused++;
      }
      try {
        reads.push(await sandbox.readFile('q/seed.md'));
      } catch (error) {
        expect(error).toBeInstanceOf(ToolDenied);
      }
    }
    expect(await ended, 'the flipper ran to its end').toBe(0);
    expect(Number(flips), 'the flipper raced').toBeGreaterThan(1000);
    expect(refused, 'some writes met the symlink').toBeGreaterThan(0);
    expect(written.length, 'some writes found the folder').toBeGreaterThan(0);
    // Every read saw the file inside; none returned the secret outside.
    expect(reads.length).toBeGreaterThan(0);
    expect(reads.every((text) => text === 'inside')).toBe(true);
    // Every write that succeeded is inside, with its content, and nothing at all reached outside.
    const realQ = join(await realpath(base), 'q');
    const misplaced: string[] = [];
    for (const path of written) {
      expect(dirname(path)).toBe(realQ);
      const text = await readFile(path, 'utf8').catch(() => undefined);
      if (text !== `report ${path.match(/r-(\d+)/)![1]}`) misplaced.push(path);
    }
    // The path-checked implementation can lose a write to a swap between its check and its open
    // (docs/security.md, its residual risk): the write reported may not be where it says.
    if (anchored) expect(misplaced).toEqual([]);
    // Descriptors guarantee more: nothing at all outside, and no temporary file left anywhere. The
    // path-checked implementation does not (docs/security.md): a swap there and back between two
    // path checks can leave a temporary file, possibly with the content, on either side.
    if (!anchored) return;
    expect(await listFiles(outside)).toEqual([join(outside, 'seed.md')]);
    const names = await readdir(join(base, 'q'));
    expect(names.filter((name) => name.startsWith('.tg-'))).toEqual([]);
    expect(names.length).toBe(written.length + 1);
  });
});
