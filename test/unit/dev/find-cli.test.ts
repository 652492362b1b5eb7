import { chmod, mkdir, mkdtemp, readdir, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { cachedCliPath, defaultCacheDir, findTemporalCli } from '../../../src/dev/find-cli.ts';

let root: string;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'toolgate-find-cli-'));
});

afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

async function writeScript(path: string, body: string, mode = 0o755): Promise<string> {
  await mkdir(join(path, '..'), { recursive: true });
  await writeFile(path, `#!/bin/sh\n${body}\n`);
  await chmod(path, mode);
  return path;
}

/** A `go` stand-in that "builds" by writing a shell script named temporal into $GOBIN. */
function fakeGoBody(extra = ''): string {
  return [
    extra,
    'echo "github.com/temporalio/cli/internal/temporalcli"',
    'echo "github.com/temporalio/cli/cmd/temporal" 1>&2',
    `printf '#!/bin/sh\\necho fake temporal\\n' > "$GOBIN/temporal"`,
    '/bin/chmod 755 "$GOBIN/temporal"',
  ].join('\n');
}

describe('findTemporalCli', () => {
  it('prefers TEMPORAL_CLI_PATH over PATH and the cache', async () => {
    const explicit = await writeScript(join(root, 'explicit', 'temporal'), 'echo explicit');
    const binDir = join(root, 'bin');
    await writeScript(join(binDir, 'temporal'), 'echo path');
    const cacheDir = join(root, 'cache');
    await writeScript(cachedCliPath(cacheDir), 'echo cache');

    const found = await findTemporalCli({
      env: { TEMPORAL_CLI_PATH: explicit, PATH: binDir },
      cacheDir,
      allowBuild: false,
    });

    expect(found).toEqual({ path: explicit, source: 'env' });
  });

  it('prefers PATH over the cache and skips non-executable entries', async () => {
    const notExecutableDir = join(root, 'plain');
    await writeScript(join(notExecutableDir, 'temporal'), 'echo plain', 0o644);
    const binDir = join(root, 'bin');
    const onPath = await writeScript(join(binDir, 'temporal'), 'echo path');
    const cacheDir = join(root, 'cache');
    await writeScript(cachedCliPath(cacheDir), 'echo cache');

    const found = await findTemporalCli({
      env: { PATH: `${notExecutableDir}:${binDir}` },
      cacheDir,
      allowBuild: false,
    });

    expect(found).toEqual({ path: onPath, source: 'path' });
  });

  it('uses the cached build when nothing is configured or on PATH', async () => {
    const emptyBin = join(root, 'empty-bin');
    await mkdir(emptyBin);
    const cacheDir = join(root, 'cache');
    const cached = await writeScript(cachedCliPath(cacheDir), 'echo cache');

    const found = await findTemporalCli({ env: { PATH: emptyBin }, cacheDir, allowBuild: false });

    expect(found).toEqual({ path: cached, source: 'cache' });
    expect(cached).toBe(join(cacheDir, 'temporal-cli-v1.5.1', 'temporal'));
  });

  it('rejects a TEMPORAL_CLI_PATH that is not executable, naming the path', async () => {
    const plain = await writeScript(join(root, 'temporal'), 'echo plain', 0o644);
    const binDir = join(root, 'bin');
    await writeScript(join(binDir, 'temporal'), 'echo path');

    await expect(
      findTemporalCli({ env: { TEMPORAL_CLI_PATH: plain, PATH: binDir }, cacheDir: root }),
    ).rejects.toThrow(
      new RegExp(`TEMPORAL_CLI_PATH is set to "${plain}", but that path is wrong: it is not executable`),
    );
  });

  it('rejects a TEMPORAL_CLI_PATH that does not exist', async () => {
    const missing = join(root, 'nowhere', 'temporal');

    await expect(findTemporalCli({ env: { TEMPORAL_CLI_PATH: missing }, cacheDir: root })).rejects.toThrow(
      /does not exist/,
    );
  });

  it('names every way to provide a CLI when none is found and Go is unreachable', async () => {
    const emptyBin = join(root, 'empty-bin');
    await mkdir(emptyBin);

    const attempt = findTemporalCli({
      env: { PATH: emptyBin },
      cacheDir: join(root, 'cache'),
      allowBuild: true,
      download: false,
      goCandidates: [],
      onProgress: () => {},
    });

    await expect(attempt).rejects.toThrow(/TEMPORAL_CLI_PATH/);
    await expect(attempt).rejects.toThrow(/`temporal` on your PATH/);
    await expect(attempt).rejects.toThrow(/install Go \(>= 1\.22\)/);
    await expect(attempt).rejects.toThrow(/TEMPORAL_ADDRESS/);
  });

  it('does not build when building is disallowed, even with Go on PATH', async () => {
    const binDir = join(root, 'bin');
    await writeScript(join(binDir, 'go'), fakeGoBody());
    const cacheDir = join(root, 'cache');

    await expect(
      findTemporalCli({ env: { PATH: binDir }, cacheDir, allowBuild: false, goCandidates: [] }),
    ).rejects.toThrow(/downloading or building one is disabled/);
    await expect(stat(cachedCliPath(cacheDir))).rejects.toThrow();
  });

  it('builds with go install into the cache when Go is found, streaming progress', async () => {
    const binDir = join(root, 'bin');
    await writeScript(join(binDir, 'go'), fakeGoBody('echo "args: $*"'));
    const cacheDir = join(root, 'cache');
    const progress: string[] = [];

    const found = await findTemporalCli({
      env: { PATH: binDir },
      cacheDir,
      download: false,
      goCandidates: [],
      onProgress: (line) => progress.push(line),
    });

    expect(found).toEqual({ path: cachedCliPath(cacheDir), source: 'built' });
    expect(progress[0]).toMatch(/takes a few minutes/);
    expect(progress).toContain('args: install -v github.com/temporalio/cli/cmd/temporal@v1.5.1');
    expect(progress).toContain('github.com/temporalio/cli/internal/temporalcli');
    expect(progress).toContain('github.com/temporalio/cli/cmd/temporal');
    // Neither the temp build dir nor the lock is left behind.
    expect((await readdir(cacheDir)).sort()).toEqual(['temporal-cli-v1.5.1']);

    const again = await findTemporalCli({ env: { PATH: binDir }, cacheDir, goCandidates: [] });
    expect(again).toEqual({ path: cachedCliPath(cacheDir), source: 'cache' });
  });

  it('retries once with GOSUMDB=off when the checksum database fails', async () => {
    const binDir = join(root, 'bin');
    const failUnlessSumdbOff = [
      'if [ "$GOSUMDB" != "off" ]; then',
      '  echo "verifying module: github.com/temporalio/cli@v1.5.1: Get https://sum.golang.org/lookup: timeout" 1>&2',
      '  exit 1',
      'fi',
    ].join('\n');
    await writeScript(join(binDir, 'go'), fakeGoBody(failUnlessSumdbOff));
    const cacheDir = join(root, 'cache');
    const progress: string[] = [];

    const found = await findTemporalCli({
      download: false,
      env: { PATH: binDir },
      cacheDir,
      goCandidates: [],
      onProgress: (line) => progress.push(line),
    });

    expect(found.source).toBe('built');
    expect(progress.some((line) => line.includes('GOSUMDB=off'))).toBe(true);
  });

  it('reports a failed build with its output and leaves no binary behind', async () => {
    const binDir = join(root, 'bin');
    await writeScript(join(binDir, 'go'), 'echo "go: module lookup disabled by GOPROXY=off" 1>&2\nexit 1');
    const cacheDir = join(root, 'cache');

    await expect(
      findTemporalCli({
        env: { PATH: binDir },
        cacheDir,
        download: false,
        goCandidates: [],
        onProgress: () => {},
      }),
    ).rejects.toThrow(/exit code 1[\s\S]*module lookup disabled/);
    await expect(stat(cachedCliPath(cacheDir))).rejects.toThrow();
    expect(await readdir(cacheDir)).toEqual([]);
  });

  it('finds go through goCandidates when it is not on PATH', async () => {
    const emptyBin = join(root, 'empty-bin');
    await mkdir(emptyBin);
    const go = await writeScript(join(root, 'go-install', 'go'), fakeGoBody());
    const cacheDir = join(root, 'cache');

    const found = await findTemporalCli({
      download: false,
      env: { PATH: emptyBin },
      cacheDir,
      goCandidates: [go],
      onProgress: () => {},
    });

    expect(found.source).toBe('built');
  });

  it('takes over a stale build lock', async () => {
    const binDir = join(root, 'bin');
    await writeScript(join(binDir, 'go'), fakeGoBody());
    const cacheDir = join(root, 'cache');
    const lockDir = join(cacheDir, 'temporal-cli-v1.5.1.lock');
    await mkdir(lockDir, { recursive: true });
    const longAgo = new Date(Date.now() - 16 * 60 * 1000);
    await utimes(lockDir, longAgo, longAgo);
    const progress: string[] = [];

    const found = await findTemporalCli({
      download: false,
      env: { PATH: binDir },
      cacheDir,
      goCandidates: [],
      onProgress: (line) => progress.push(line),
    });

    expect(found.source).toBe('built');
    expect(progress.some((line) => line.includes('stale build lock'))).toBe(true);
  });

  it('waits for a fresh lock and then uses what the other process built', async () => {
    const binDir = join(root, 'bin');
    // A go that must never run: the other "process" finishes the build first.
    await writeScript(join(binDir, 'go'), 'echo "should not build" 1>&2\nexit 1');
    const cacheDir = join(root, 'cache');
    const lockDir = join(cacheDir, 'temporal-cli-v1.5.1.lock');
    await mkdir(lockDir, { recursive: true });
    const progress: string[] = [];

    const finding = findTemporalCli({
      download: false,
      env: { PATH: binDir },
      cacheDir,
      goCandidates: [],
      onProgress: (line) => progress.push(line),
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    await writeScript(cachedCliPath(cacheDir), 'echo built elsewhere');
    await rm(lockDir, { recursive: true });

    await expect(finding).resolves.toEqual({ path: cachedCliPath(cacheDir), source: 'cache' });
    expect(progress.some((line) => line.includes('Another process is building'))).toBe(true);
  });
});

describe('defaultCacheDir', () => {
  it('uses XDG_CACHE_HOME when it is absolute', () => {
    expect(defaultCacheDir({ XDG_CACHE_HOME: '/var/cache/me', HOME: '/home/me' })).toBe(
      '/var/cache/me/toolgate',
    );
  });

  it('falls back to ~/.cache when XDG_CACHE_HOME is unset or relative', () => {
    expect(defaultCacheDir({ HOME: '/home/me' })).toBe('/home/me/.cache/toolgate');
    expect(defaultCacheDir({ XDG_CACHE_HOME: 'relative', HOME: '/home/me' })).toBe(
      '/home/me/.cache/toolgate',
    );
  });
});
