import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rename, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { sandboxedPath } from '../../activities/safety/sandbox.ts';
import { ToolDenied } from '../../activities/tool-implementation.ts';
import { relativePathProblem, sandboxedRelativePath } from '../../src/contracts/sandboxed-path.ts';
import { hostilePaths, legitimatePaths } from '../support/hostile-inputs.ts';

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
  afterEach(async () => rm(root, { recursive: true, force: true }));

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
