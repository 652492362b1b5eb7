/**
 * The download of the pinned Temporal CLI release, against a release server on 127.0.0.1: a good
 * archive installs; a wrong checksum, a missing file or an unreachable server installs nothing and
 * hands over to the Go build.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  temporalArchiveDigests,
  temporalArchiveName,
  temporalReleaseBaseUrl,
} from '../../../src/dev/download-cli.ts';
import { cachedCliPath, findTemporalCli, temporalCliVersion } from '../../../src/dev/find-cli.ts';

const run = promisify(execFile);
const archive = temporalArchiveName(temporalCliVersion, 'linux', 'x64')!;

let root: string;
let server: Server;
let baseUrl: string;
/** What the release server serves, by path; anything else is a 404. */
const served = new Map<string, Buffer>();
let requests = 0;

/** A tar.gz shaped like Temporal's: the `temporal` binary (here a script) and a LICENSE. */
async function releaseArchive(script: string, names = ['LICENSE', 'temporal']): Promise<Buffer> {
  const folder = await mkdtemp(join(root, 'release-'));
  await writeFile(join(folder, 'LICENSE'), 'MIT\n');
  await writeFile(join(folder, 'temporal'), script);
  await chmod(join(folder, 'temporal'), 0o755);
  const file = join(folder, 'out.tar.gz');
  await run('tar', ['-czf', file, '-C', folder, ...names]);
  return readFile(file);
}

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'toolgate-download-'));
  server = createServer((request, response) => {
    requests++;
    const body = served.get(request.url ?? '');
    if (!body) {
      response.statusCode = 404;
      response.end('not found');
      return;
    }
    response.setHeader('content-length', body.length);
    response.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/releases`;
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  await rm(root, { recursive: true, force: true });
});

beforeEach(() => {
  served.clear();
  requests = 0;
});

/** A fake `go` that "builds" a CLI printing `built by go`. */
async function fakeGo(): Promise<string> {
  const bin = await mkdtemp(join(root, 'go-'));
  // Only shell builtins and absolute paths: the build runs with a PATH that holds nothing.
  const body = [
    '#!/bin/sh',
    `printf '#!/bin/sh\\necho built by go\\n' > "$GOBIN/temporal"`,
    '/bin/chmod +x "$GOBIN/temporal"',
    '',
  ].join('\n');
  await writeFile(join(bin, 'go'), body);
  await chmod(join(bin, 'go'), 0o755);
  return join(bin, 'go');
}

const options = (cacheDir: string, digests: Record<string, string>, goCandidates: string[] = []) => ({
  env: { PATH: join(root, 'no-bin') },
  cacheDir,
  goCandidates,
  download: { baseUrl, digests, platform: 'linux' as const, arch: 'x64' },
});

describe('downloading the pinned Temporal CLI', () => {
  it('pins the official digests of every archive of the pinned release, by its file name', () => {
    expect(archive).toBe('temporal_cli_1.5.1_linux_amd64.tar.gz');
    expect(temporalArchiveName(temporalCliVersion, 'darwin', 'arm64')).toBe(
      'temporal_cli_1.5.1_darwin_arm64.tar.gz',
    );
    expect(temporalArchiveName(temporalCliVersion, 'win32', 'x64')).toBeUndefined();
    expect(Object.keys(temporalArchiveDigests).sort()).toEqual(
      ['darwin_amd64', 'darwin_arm64', 'linux_amd64', 'linux_arm64'].map(
        (target) => `temporal_cli_1.5.1_${target}.tar.gz`,
      ),
    );
    for (const digest of Object.values(temporalArchiveDigests)) expect(digest).toMatch(/^[0-9a-f]{64}$/);
    expect(temporalReleaseBaseUrl).toBe('https://github.com/temporalio/cli/releases/download');
  });

  it('installs a good archive into the cache, verified, and uses the cache afterwards', async () => {
    const body = await releaseArchive('#!/bin/sh\necho "temporal version 1.5.1 (downloaded)"\n');
    served.set(`/releases/${temporalCliVersion}/${archive}`, body);
    const cacheDir = join(root, 'good-cache');
    const progress: string[] = [];
    const found = await findTemporalCli({
      ...options(cacheDir, { [archive]: sha256(body) }),
      onProgress: (line) => progress.push(line),
    });
    expect(found).toEqual({ path: cachedCliPath(cacheDir), source: 'downloaded' });
    const { stdout } = await run(found.path, []);
    expect(stdout.trim()).toBe('temporal version 1.5.1 (downloaded)');
    expect(progress.join('\n')).toMatch(/verified \(SHA-256 [0-9a-f]{12}…\) and installed/);
    // Nothing but the binary's folder is left in the cache: no archive, no temporary folder, no lock.
    expect(await readdir(cacheDir)).toEqual([`temporal-cli-${temporalCliVersion}`]);
    expect(await readdir(join(cacheDir, `temporal-cli-${temporalCliVersion}`))).toEqual(['temporal']);
    const again = await findTemporalCli({
      ...options(cacheDir, { [archive]: sha256(body) }),
      onProgress: () => {},
    });
    expect(again.source).toBe('cache');
    expect(requests).toBe(1);
  });

  it('refuses an archive whose checksum differs, installs nothing, and says so when there is no Go', async () => {
    const body = await releaseArchive('#!/bin/sh\necho tampered\n');
    served.set(`/releases/${temporalCliVersion}/${archive}`, body);
    const cacheDir = join(root, 'bad-cache');
    const pinned = 'a'.repeat(64);
    const attempt = findTemporalCli({ ...options(cacheDir, { [archive]: pinned }), onProgress: () => {} });
    await expect(attempt).rejects.toThrow(
      `has SHA-256 ${sha256(body)}, not the pinned ${pinned}: refused, nothing was installed`,
    );
    await expect(attempt).rejects.toThrow(/install Go \(>= 1\.22\)/);
    await expect(attempt).rejects.toThrow(/TOOLGATE_TEMPORAL_CLI_MIRROR/);
    expect(await readdir(cacheDir)).toEqual([]);
  });

  it('builds with Go when the checksum is wrong, the file is missing or the server is down', async () => {
    const body = await releaseArchive('#!/bin/sh\necho tampered\n');
    served.set(`/releases/${temporalCliVersion}/${archive}`, body);
    const go = await fakeGo();
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const closedPort = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const cases: Array<[string, { baseUrl: string; digests: Record<string, string> }, RegExp]> = [
      ['wrong checksum', { baseUrl, digests: { [archive]: 'b'.repeat(64) } }, /not the pinned b{64}/],
      [
        'missing file',
        { baseUrl: `${baseUrl}/elsewhere`, digests: { [archive]: sha256(body) } },
        /answered 404/,
      ],
      [
        'server down',
        { baseUrl: `http://127.0.0.1:${closedPort}`, digests: { [archive]: sha256(body) } },
        /cannot reach 127\.0\.0\.1:\d+: ECONNREFUSED/,
      ],
    ];
    for (const [what, download, reason] of cases) {
      const cacheDir = join(root, `fallback-${what.replace(/ /g, '-')}`);
      const progress: string[] = [];
      const started = performance.now();
      const found = await findTemporalCli({
        ...options(cacheDir, {}, [go]),
        download: { ...download, platform: 'linux', arch: 'x64' },
        onProgress: (line) => progress.push(line),
      });
      expect(found.source, what).toBe('built');
      expect((await run(found.path, [])).stdout.trim(), what).toBe('built by go');
      const failure = progress.find((line) => line.startsWith('The Temporal CLI download failed'));
      expect(failure, what).toMatch(reason);
      expect(failure, what).toContain('Building it with Go instead.');
      expect(performance.now() - started, what).toBeLessThan(10_000);
    }
  });

  it('refuses an archive without a temporal binary', async () => {
    const body = await releaseArchive('#!/bin/sh\n', ['LICENSE']);
    served.set(`/releases/${temporalCliVersion}/${archive}`, body);
    const cacheDir = join(root, 'no-binary-cache');
    await expect(
      findTemporalCli({ ...options(cacheDir, { [archive]: sha256(body) }), onProgress: () => {} }),
    ).rejects.toThrow(`${archive} holds no file named temporal`);
    expect(await readdir(cacheDir)).toEqual([]);
  });

  it('does not download for a platform with no pinned archive, and builds instead', async () => {
    const cacheDir = join(root, 'windows-cache');
    await mkdir(cacheDir, { recursive: true });
    const progress: string[] = [];
    const found = await findTemporalCli({
      ...options(cacheDir, {}, [await fakeGo()]),
      download: { baseUrl, platform: 'win32', arch: 'x64' },
      onProgress: (line) => progress.push(line),
    });
    expect(found.source).toBe('built');
    expect(requests).toBe(0);
    expect(progress.join('\n')).toContain('no Temporal CLI archive is published for win32/x64');
  });
});
