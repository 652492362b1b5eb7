import { existsSync } from 'node:fs';
import { lstat, mkdir, readdir, rename, rm, stat, symlink, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CallRecord } from '../../src/contracts/call-record.ts';
import { agent, createHarness, type Harness } from '../support/harness.ts';
import { hostileDns, hostilePaths, hostileUrls, legitimatePaths } from '../support/hostile-inputs.ts';
import { type LoopbackServer, startLoopbackServer } from '../support/loopback-server.ts';
import { mapLimited } from '../support/map-limited.ts';

async function listFiles(root: string): Promise<string[]> {
  const entries = await readdir(root, { recursive: true, withFileTypes: true }).catch(() => []);
  return entries.filter((entry) => entry.isFile()).map((entry) => join(entry.parentPath, entry.name));
}

const resolveStub = async (hostname: string) => {
  const answer = Object.hasOwn(hostileDns, hostname) ? hostileDns[hostname] : undefined;
  if (!answer) throw new Error(`ENOTFOUND ${hostname}`);
  return answer;
};

describe('hostile inputs through the real workflow', () => {
  let strict: Harness;
  let loopback: LoopbackServer;
  beforeAll(async () => {
    loopback = await startLoopbackServer((_request, response) => response.end('loopback says hi'));
    strict = await createHarness({ toolOptions: { http: { ports: 'any', resolve: resolveStub } } });
  });
  afterAll(async () => {
    await strict?.close();
    await loopback?.close();
  });

  it(`denies all ${hostilePaths.length} hostile report paths with effect none and writes nothing`, async () => {
    const records = await mapLimited(hostilePaths, 12, ([, path], index) =>
      strict.client.call(
        { tool: 'write_report', input: { path, content: 'pwned' }, key: `hostile-path-${index}` },
        agent,
      ),
    );
    const unexpected = records
      .map((record, index) => ({
        label: hostilePaths[index]![0],
        status: record.status,
        effect: record.effect,
      }))
      .filter((outcome) => outcome.status !== 'denied' || outcome.effect !== 'none');
    expect(unexpected).toEqual([]);
    expect(new Set(records.map((record) => record.reason))).toEqual(new Set(['INVALID_INPUT']));
    expect(
      await listFiles(strict.dataDir).then((files) => files.filter((file) => file.endsWith('.md'))),
    ).toEqual([]);
    const wrote = (await strict.readLines(strict.tools.paths.executionsFile)).filter(
      (line) => line['event'] === 'wrote',
    );
    expect(wrote).toHaveLength(0);
  });

  it('writes legitimate nested paths inside the sandbox', async () => {
    const records = await mapLimited(legitimatePaths, 4, (path, index) =>
      strict.client.call(
        { tool: 'write_report', input: { path, content: `report ${index}` }, key: `legit-${index}` },
        agent,
      ),
    );
    expect(records.map((record) => record.status)).toEqual(legitimatePaths.map(() => 'succeeded'));
    const written = await listFiles(strict.tools.paths.reportsDir);
    expect(written).toHaveLength(legitimatePaths.length);
  });

  it(`denies all ${hostileUrls.length} hostile URLs, plus loopback on a live port, before any socket opens`, async () => {
    const port = loopback.port;
    const live: Array<readonly [string, string]> = [
      ['live loopback', `http://127.0.0.1:${port}/`],
      ['live short loopback', `http://127.1:${port}/`],
      ['live decimal loopback', `http://2130706433:${port}/`],
      ['live mapped loopback', `http://[::ffff:127.0.0.1]:${port}/`],
      ['live localhost', `http://localhost:${port}/`],
      ['live name resolving to loopback', `http://loopback.attacker.test:${port}/`],
    ];
    const table = [...hostileUrls, ...live];
    const records: CallRecord[] = await mapLimited(table, 12, ([, url]) =>
      strict.client.call({ tool: 'http_fetch', input: { url } }, agent),
    );
    const unexpected = records
      .map((record, index) => ({ label: table[index]![0], status: record.status, effect: record.effect }))
      .filter((outcome) => outcome.status !== 'denied' || outcome.effect !== 'none');
    expect(unexpected).toEqual([]);
    expect(loopback.stats.connections).toBe(0);
    const fetched = (await strict.readLines(strict.tools.paths.executionsFile)).filter(
      (line) => line['tool'] === 'http_fetch',
    );
    expect(fetched).toHaveLength(0);
    // Denied in the workflow (contract) or at execution (address check); never a stack or an address.
    for (const record of records) {
      expect(record.message).toMatch(/^(Invalid arguments: url: URL refused|URL refused)/);
      expect(record.message).not.toMatch(/\n\s+at |127\.0\.0\.1|10\.0\.0\.5|169\.254/);
    }
  });

  it('catches a reports folder swapped for a symlink while writes run', async () => {
    const reports = strict.tools.paths.reportsDir;
    const outside = join(strict.dataDir, 'reports_evil');
    const raceDir = join(reports, 'race');
    const parked = join(reports, 'race.parked');
    await mkdir(outside, { recursive: true });
    await mkdir(raceDir, { recursive: true });
    let swapping = true;
    let swaps = 0;
    const swapper = (async () => {
      while (swapping) {
        try {
          await rename(raceDir, parked);
          await symlink(outside, raceDir);
          swaps++;
          // Short pauses in both states, so some writes see a real folder and some a swap.
          await new Promise((resolve) => setTimeout(resolve, 3));
          await unlink(raceDir);
          await rename(parked, raceDir);
          await new Promise((resolve) => setTimeout(resolve, 3));
        } catch {
          // The tool may have recreated the folder meanwhile; start the next round from any state.
          // Each step may lose a race with a write in flight (a file created while the folder is
          // being removed: ENOTEMPTY), so none may end the swapper: the next round tries again.
          await unlink(raceDir).catch(() => undefined);
          if (
            await lstat(parked).then(
              () => true,
              () => false,
            )
          ) {
            await rm(raceDir, { recursive: true, force: true }).catch(() => undefined);
            await rename(parked, raceDir).catch(() => undefined);
          }
        }
      }
    })();
    const count = 30;
    const records = await mapLimited(
      Array.from({ length: count }, (_, index) => index),
      6,
      (index) =>
        strict.client.call(
          {
            tool: 'write_report',
            input: { path: `race/file-${index}.md`, content: `secret ${index}` },
            key: `race-${index}`,
          },
          agent,
        ),
    );
    swapping = false;
    await swapper;
    const statuses = records.map((record) => `${record.status}/${record.effect}`);
    const odd = records.filter((record) => record.status !== 'succeeded' && record.status !== 'denied');
    expect(
      odd.map((record) => `${record.status}/${record.effect}/${record.reason}: ${record.message}`),
    ).toEqual([]);
    expect(statuses.every((status) => status === 'succeeded/applied' || status === 'denied/none')).toBe(true);
    // Nothing with content ever landed in the folder the symlink pointed to; on Linux, where the
    // sandbox reaches files through descriptors, nothing at all did (docs/security.md).
    if (existsSync('/proc/self/fd')) expect(await listFiles(outside)).toEqual([]);
    for (const file of await listFiles(outside)) {
      expect((await stat(file)).size).toBe(0);
      expect(file.endsWith('.md')).toBe(false);
    }
    expect(swaps).toBeGreaterThan(0);
    console.info(
      `symlink race: ${swaps} swaps, ${statuses.filter((status) => status.startsWith('denied')).length} denied, ${statuses.filter((status) => status.startsWith('succeeded')).length} succeeded`,
    );
  });
});

describe('http_fetch against a 127.0.0.1 server explicitly allowed for tests', () => {
  let allowed: Harness;
  let site: LoopbackServer;
  let redirector: LoopbackServer;
  let internal: LoopbackServer;
  beforeAll(async () => {
    site = await startLoopbackServer((_request, response) => {
      response.setHeader('content-type', 'text/plain');
      response.end('public page');
    });
    internal = await startLoopbackServer((_request, response) => response.end('internal secret'));
    redirector = await startLoopbackServer((_request, response) => {
      response.writeHead(302, { location: `http://127.0.0.1:${internal.port}/admin` });
      response.end();
    });
    allowed = await createHarness({
      toolOptions: { http: { ports: 'any', allowLoopbackForTests: { ports: [site.port, redirector.port] } } },
    });
  });
  afterAll(async () => {
    await allowed?.close();
    await Promise.all([site?.close(), redirector?.close(), internal?.close()]);
  });

  it('fetches the allowed loopback server', async () => {
    const record = await allowed.client.call(
      { tool: 'http_fetch', input: { url: `${site.url}/page` } },
      agent,
    );
    expect(record.status).toBe('succeeded');
    expect(record.output).toMatchObject({ status: 200, body: 'public page', contentType: 'text/plain' });
    expect(site.stats.requests).toBe(1);
  });

  it('refuses a redirect to 127.0.0.1 on a port that was not allowed', async () => {
    const record = await allowed.client.call(
      { tool: 'http_fetch', input: { url: `${redirector.url}/go` } },
      agent,
    );
    expect(record).toMatchObject({ status: 'denied', effect: 'none', reason: 'INVALID_INPUT' });
    expect(redirector.stats.requests).toBe(1);
    expect(internal.stats.connections).toBe(0);
  });
});
