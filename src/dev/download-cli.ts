import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { chmod, mkdir, mkdtemp, readFile, rename, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { gunzipSync } from 'node:zlib';

/** Where Temporal publishes its CLI releases; a mirror must serve the same file names. */
export const temporalReleaseBaseUrl = 'https://github.com/temporalio/cli/releases/download';

/**
 * SHA-256 of the official archives of the pinned release, by file name. An archive is installed
 * only when its digest is one of these, whatever server it came from.
 */
export const temporalArchiveDigests: Readonly<Record<string, string>> = {
  'temporal_cli_1.5.1_linux_amd64.tar.gz': 'ddc95e08b0b076efd4ea9733a3f488eb7d2be875f8834e616cd2a37358b4852d',
  'temporal_cli_1.5.1_linux_arm64.tar.gz': 'bd1b0db9f18b051026de8bf6cc1505f2510f14bbb7a8b9a4a91fff46c77454f5',
  'temporal_cli_1.5.1_darwin_amd64.tar.gz':
    'bbb73e2a31135abe50a1f1cdb35030c42961df618e8ce9c60ae89f201540c5d9',
  'temporal_cli_1.5.1_darwin_arm64.tar.gz':
    'cca01b7ea35ad56e2a328d9ae596bf716bd22313ef63c7a761c88354457c2415',
};

/** An archive larger than this is refused before it fills the disk (the real ones are about 50 MB). */
const maximumArchiveBytes = 200 * 1024 * 1024;

/** How long a server may take to answer before the download is given up as unreachable. */
const answerTimeoutMs = 15_000;

/** How long the whole download may take. */
const downloadTimeoutMs = 10 * 60_000;

export interface DownloadOptions {
  /** Where the release files are: `<baseUrl>/<version>/<file>`. */
  readonly baseUrl: string;
  /** Accepted digests by file name; defaults to the pinned official ones. */
  readonly digests?: Readonly<Record<string, string>>;
  readonly platform?: NodeJS.Platform;
  readonly arch?: string;
}

/** The release file for a platform, or undefined where no archive of ours can run. */
export function temporalArchiveName(version: string, platform: string, arch: string): string | undefined {
  const os = platform === 'linux' || platform === 'darwin' ? platform : undefined;
  const cpu = arch === 'x64' ? 'amd64' : arch === 'arm64' ? 'arm64' : undefined;
  if (!os || !cpu) return undefined;
  return `temporal_cli_${version.replace(/^v/, '')}_${os}_${cpu}.tar.gz`;
}

/**
 * Downloads the pinned Temporal CLI release, checks its SHA-256 against the pinned digest and
 * installs its `temporal` binary at `target`. Nothing is written at `target` unless every check
 * passes; the partial files are removed on any failure. Throws with what went wrong.
 */
export async function downloadTemporalCli(context: {
  readonly version: string;
  readonly target: string;
  readonly options: DownloadOptions;
  readonly onProgress: (line: string) => void;
  readonly signal?: AbortSignal;
}): Promise<void> {
  const { version, target, options, onProgress } = context;
  const platform = options.platform ?? process.platform;
  const arch = options.arch ?? process.arch;
  const name = temporalArchiveName(version, platform, arch);
  if (!name) throw new Error(`no Temporal CLI archive is published for ${platform}/${arch}`);
  const expected = (options.digests ?? temporalArchiveDigests)[name];
  if (!expected) throw new Error(`no pinned checksum for ${name}, so it would not be verified`);
  const url = `${options.baseUrl.replace(/\/+$/, '')}/${version}/${name}`;
  // In the cache folder that holds the target's folder, so the final rename stays on one
  // filesystem and is atomic, and nothing of the target's exists until every check has passed.
  const cacheDir = dirname(dirname(target));
  await mkdir(cacheDir, { recursive: true });
  const work = await mkdtemp(join(cacheDir, '.download-'));
  try {
    onProgress(`Downloading the Temporal CLI ${version} from ${url}`);
    const archive = join(work, name);
    const digest = await fetchToFile(url, archive, onProgress, context.signal);
    if (digest !== expected) {
      throw new Error(
        `the archive from ${url} has SHA-256 ${digest}, not the pinned ${expected}: refused, nothing was installed`,
      );
    }
    const binary = extractFile(gunzipSync(await readFile(archive)), 'temporal');
    if (!binary) throw new Error(`${name} holds no file named temporal`);
    const staged = join(work, 'temporal');
    await writeExecutable(staged, binary);
    await mkdir(dirname(target), { recursive: true });
    await rename(staged, target);
    onProgress(
      `Temporal CLI ${version} verified (SHA-256 ${digest.slice(0, 12)}…) and installed at ${target}.`,
    );
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

async function writeExecutable(path: string, content: Buffer): Promise<void> {
  await pipeline(Readable.from([content]), createWriteStream(path, { mode: 0o755 }));
  await chmod(path, 0o755);
}

/** Streams `url` into `file`, reporting progress, and returns the SHA-256 of what it wrote. */
async function fetchToFile(
  url: string,
  file: string,
  onProgress: (line: string) => void,
  signal?: AbortSignal,
): Promise<string> {
  const answered = new AbortController();
  const answerTimer = setTimeout(
    () => answered.abort(new Error(`no answer within ${answerTimeoutMs / 1000} s`)),
    answerTimeoutMs,
  );
  const signals = [answered.signal, AbortSignal.timeout(downloadTimeoutMs), ...(signal ? [signal] : [])];
  let response: Response;
  try {
    response = await fetch(url, { signal: AbortSignal.any(signals), redirect: 'follow' });
  } catch (error) {
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    throw new Error(
      `cannot reach ${new URL(url).host}: ${cause?.code ?? cause?.message ?? (error as Error).message}`,
    );
  } finally {
    clearTimeout(answerTimer);
  }
  if (!response.ok || !response.body)
    throw new Error(`${url} answered ${response.status} ${response.statusText}`);
  const length = Number(response.headers.get('content-length') ?? Number.NaN);
  if (length > maximumArchiveBytes)
    throw new Error(`${url} is ${length} bytes, over the ${maximumArchiveBytes}-byte limit`);
  const hash = createHash('sha256');
  let received = 0;
  let reported = 0;
  const meter = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      received += chunk.length;
      if (received > maximumArchiveBytes) {
        done(new Error(`${url} sent more than ${maximumArchiveBytes} bytes`));
        return;
      }
      hash.update(chunk);
      const tenth = Number.isFinite(length) && length > 0 ? Math.floor((received / length) * 10) : 0;
      if (tenth > reported) {
        reported = tenth;
        onProgress(`  ${tenth * 10}% of ${(length / 1e6).toFixed(1)} MB`);
      }
      done(null, chunk);
    },
  });
  await pipeline(Readable.fromWeb(response.body as never), meter, createWriteStream(file));
  return hash.digest('hex');
}

/**
 * The content of the regular file called `name` (at any depth) in a tar archive, or undefined.
 * Reads the ustar and GNU forms the Go release tooling writes; long-name and pax records are
 * skipped over.
 */
export function extractFile(tar: Buffer, name: string): Buffer | undefined {
  let offset = 0;
  while (offset + 512 <= tar.length) {
    const header = tar.subarray(offset, offset + 512);
    if (header.every((byte) => byte === 0)) return undefined;
    const field = (start: number, length: number) =>
      header.toString('utf8', start, start + length).replace(/\0.*$/s, '');
    const size = Number.parseInt(field(124, 12).trim() || '0', 8);
    const type = field(156, 1) || '0';
    const prefix = field(345, 155);
    const path = prefix ? `${prefix}/${field(0, 100)}` : field(0, 100);
    const start = offset + 512;
    if ((type === '0' || type === '\0') && path.split('/').at(-1) === name) {
      return Buffer.from(tar.subarray(start, start + size));
    }
    offset = start + Math.ceil(size / 512) * 512;
  }
  return undefined;
}
