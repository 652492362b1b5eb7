import type { IncomingHttpHeaders } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addressProblem, headersAfterRedirect, safeUrl } from '../../activities/safety/safe-url.ts';
import { ToolDenied, ToolError } from '../../activities/tool-implementation.ts';
import { safeUrlProblem } from '../../src/contracts/safe-url.ts';
import { hostileDns, hostileUrls } from '../support/hostile-inputs.ts';
import { type LoopbackServer, startLoopbackServer } from '../support/loopback-server.ts';

/** A resolver stub over a fixed table, counting how often each name is asked. */
function stubResolver(table: Readonly<Record<string, readonly string[]>>) {
  const asked: string[] = [];
  return {
    asked,
    resolve: async (hostname: string) => {
      asked.push(hostname);
      const answer = Object.hasOwn(table, hostname) ? table[hostname] : undefined;
      if (!answer) throw Object.assign(new Error(`ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
      return answer;
    },
  };
}

let server: LoopbackServer;
beforeAll(async () => {
  server = await startLoopbackServer((_request, response) => response.end('hello from loopback'));
});
afterAll(async () => server.close());

describe('addressProblem', () => {
  it.each([
    ['1.1.1.1', true],
    ['2606:4700:4700::1111', true],
    ['93.184.216.34', true],
    ['127.0.0.1', false],
    ['10.1.2.3', false],
    ['100.64.0.1', false],
    ['169.254.169.254', false],
    ['::ffff:1.1.1.1', false],
    ['::ffff:127.0.0.1', false],
    ['64:ff9b::101:101', false],
    ['64:ff9b:1::a00:1', false],
    ['2002:101:101::', false],
    ['::7f00:1', false],
    ['fe80::1', false],
    ['fd00:ec2::254', false],
    ['2001:db8::1', false],
    ['not-an-ip', false],
  ])('%s is public: %s', (address, isPublic) => {
    expect(addressProblem(address) === undefined).toBe(isPublic);
  });

  it('lets loopback through only with the test escape hatch', () => {
    expect(addressProblem('127.0.0.1', { allowLoopbackForTests: true })).toBeUndefined();
    expect(addressProblem('127.0.0.2', { allowLoopbackForTests: true })).toBeDefined();
    expect(addressProblem('10.0.0.1', { allowLoopbackForTests: true })).toBeDefined();
  });
});

describe('safeUrl', () => {
  it(`refuses all ${hostileUrls.length} hostile URLs before any socket opens`, async () => {
    expect(hostileUrls.length).toBeGreaterThanOrEqual(40);
    const dns = stubResolver(hostileDns);
    const guard = safeUrl({ ports: 'any', resolve: dns.resolve });
    const outcomes: Array<[string, string]> = [];
    for (const [label, url] of hostileUrls) {
      const error = await guard.fetch(url).then(
        () => undefined,
        (caught: unknown) => caught,
      );
      expect(error, label).toBeInstanceOf(ToolDenied);
      outcomes.push([label, (error as Error).message]);
    }
    expect(guard.stats.connections).toBe(0);
    expect(server.stats.connections).toBe(0);
    // Only names went to DNS, each exactly once; IP literals and refused names never did.
    expect(dns.asked.every((name) => name.endsWith('.attacker.test'))).toBe(true);
    expect(new Set(dns.asked).size).toBe(dns.asked.length);
    // Model-facing text names the rule, never a resolved internal address.
    for (const [, message] of outcomes) expect(message).not.toMatch(/10\.0\.0\.5|169\.254|93\.184/);
  });

  it('refuses on the text alone whatever needs no DNS', () => {
    const lexical = hostileUrls.filter(([, url]) => safeUrlProblem(url, { ports: 'any' }) !== undefined);
    // Schemes, user-info, internal names and malformed hosts are refused in the workflow already.
    expect(lexical.length).toBeGreaterThanOrEqual(15);
    expect(safeUrlProblem('https://example.com/path?q=1')).toBeUndefined();
    expect(safeUrlProblem('https://example.com:8443/', { ports: [443] })).toMatch(/port 8443/);
    expect(safeUrlProblem('https://api.example.com/', { hosts: ['*.example.com'] })).toBeUndefined();
    expect(safeUrlProblem('https://example.org/', { hosts: ['*.example.com'] })).toMatch(/not on the list/);
  });

  it('fetches from a 127.0.0.1 server only when explicitly allowed for tests', async () => {
    const strict = safeUrl({ ports: 'any' });
    await expect(strict.fetch(`${server.url}/`)).rejects.toBeInstanceOf(ToolDenied);
    expect(strict.stats.connections).toBe(0);
    const before = server.stats.requests;

    const permissive = safeUrl({ ports: 'any', allowLoopbackForTests: true });
    const response = await permissive.fetch(`${server.url}/`);
    expect(response.status).toBe(200);
    expect(response.body).toBe('hello from loopback');
    expect(server.stats.requests).toBe(before + 1);
  });

  it('refuses a redirect to 127.0.0.1 at the hop, before connecting to it', async () => {
    const target = await startLoopbackServer((_request, response) => response.end('internal secret'));
    const redirector = await startLoopbackServer((_request, response) => {
      response.writeHead(302, { location: `http://127.0.0.1:${target.port}/admin` });
      response.end();
    });
    try {
      // Loopback is allowed only on the redirector's port, as if it were a public site.
      const guard = safeUrl({ ports: 'any', allowLoopbackForTests: { ports: [redirector.port] } });
      await expect(guard.fetch(`${redirector.url}/start`)).rejects.toBeInstanceOf(ToolDenied);
      expect(redirector.stats.requests).toBe(1);
      expect(target.stats.connections).toBe(0);
    } finally {
      await target.close();
      await redirector.close();
    }
  });

  it('stops after the redirect limit', async () => {
    const loop = await startLoopbackServer((_request, response) => {
      response.writeHead(301, { location: '/again' });
      response.end();
    });
    try {
      const guard = safeUrl({ ports: 'any', allowLoopbackForTests: true, maxRedirects: 3 });
      await expect(guard.fetch(`${loop.url}/`)).rejects.toThrow(/more than 3 redirects/);
      expect(loop.stats.requests).toBe(4);
    } finally {
      await loop.close();
    }
  });

  it('blocks DNS rebinding: resolves once and pins the connection to the vetted address', async () => {
    // The attacker's resolver answers public first, then private to everyone who asks again.
    let calls = 0;
    const resolve = async () => (++calls === 1 ? ['93.184.216.34'] : ['127.0.0.1']);
    const guard = safeUrl({ ports: 'any', resolve, connectTimeoutMs: 800, timeoutMs: 1500 });
    const connectionsBefore = server.stats.connections;
    const startedAt = Date.now();
    const error = await guard.fetch(`http://rebind.attacker.test:${server.port}/`).catch((caught) => caught);
    // The pinned public address is unreachable from this sandbox, so the fetch fails; what matters
    // is that the private answer was never asked for nor connected to.
    expect(error).toBeInstanceOf(ToolError);
    expect(calls).toBe(1);
    expect(server.stats.connections).toBe(connectionsBefore);
    expect(Date.now() - startedAt).toBeLessThan(3000);
  });

  it('keeps using the pinned address even when DNS changes its answer', async () => {
    let calls = 0;
    const resolve = async () => (++calls === 1 ? ['127.0.0.1'] : ['10.9.9.9']);
    const guard = safeUrl({ ports: 'any', resolve, allowLoopbackForTests: true });
    const response = await guard.fetch(`http://pinned.example.test:${server.port}/`);
    expect(response.body).toBe('hello from loopback');
    expect(calls).toBe(1);
    expect(guard.stats.connections).toBe(1);
  });

  it('refuses an oversized response instead of truncating it', async () => {
    const big = await startLoopbackServer((_request, response) => {
      // Chunked, no content-length: the limit must hold while streaming too.
      response.write('x'.repeat(600_000));
      response.end('y'.repeat(600_000));
    });
    try {
      const guard = safeUrl({ ports: 'any', allowLoopbackForTests: true, maxResponseBytes: 1024 * 1024 });
      const error = await guard.fetch(`${big.url}/`).catch((caught) => caught);
      expect(error).toBeInstanceOf(ToolError);
      expect((error as ToolError).retryable).toBe(false);
      expect((error as Error).message).toMatch(/refused rather than cut off/);
    } finally {
      await big.close();
    }
  });

  const credentials = {
    Authorization: 'Bearer SECRET',
    Cookie: 'session=abc',
    'Proxy-Authorization': 'Basic cHJveHk6c2VjcmV0',
    'X-Trace': 'trace-1',
  };
  const credentialNames = ['authorization', 'cookie', 'proxy-authorization'];

  it.each([
    ['an object', () => credentials],
    ['name/value pairs', () => Object.entries(credentials) as Array<[string, string]>],
    ['a Headers', () => new Headers(credentials)],
  ])(
    'drops credentials on a redirect to another port, keeps them on the same origin (%s)',
    async (_form, headers) => {
      // A /start → A /same (same origin) → B /hop (another port) → A /back (first origin again).
      const seen: Array<[string, IncomingHttpHeaders]> = [];
      const b = await startLoopbackServer((request, response) => {
        seen.push([`B ${request.url}`, request.headers]);
        response.writeHead(302, { location: `http://127.0.0.1:${a.port}/back` });
        response.end();
      });
      const a: LoopbackServer = await startLoopbackServer((request, response) => {
        seen.push([`A ${request.url}`, request.headers]);
        if (request.url === '/start') response.writeHead(302, { location: '/same' });
        else if (request.url === '/same')
          response.writeHead(302, { location: `http://127.0.0.1:${b.port}/hop` });
        response.end('done');
      });
      try {
        const guard = safeUrl({ ports: 'any', allowLoopbackForTests: true });
        const response = await guard.fetch(`${a.url}/start`, { headers: headers() });
        expect(response.body).toBe('done');
        expect(seen.map(([where]) => where)).toEqual(['A /start', 'A /same', 'B /hop', 'A /back']);
        const [, , [, atB], [, back]] = seen as [
          unknown,
          unknown,
          [string, IncomingHttpHeaders],
          [string, IncomingHttpHeaders],
        ];
        for (const [where, received] of seen.slice(0, 2)) {
          expect(received['authorization'], where).toBe('Bearer SECRET');
          expect(received['cookie'], where).toBe('session=abc');
          expect(received['proxy-authorization'], where).toBe('Basic cHJveHk6c2VjcmV0');
        }
        for (const name of credentialNames) {
          expect(atB[name], `B got ${name}`).toBeUndefined();
          // Gone for good: coming back to the first origin does not bring them back.
          expect(back[name], `A /back got ${name}`).toBeUndefined();
        }
        // Headers that are not credentials still go along.
        expect(atB['x-trace']).toBe('trace-1');
      } finally {
        await a.close();
        await b.close();
      }
    },
  );

  it('drops credentials on a redirect to another host name on the same port', async () => {
    const seen: Array<[string, IncomingHttpHeaders]> = [];
    const both = await startLoopbackServer((request, response) => {
      seen.push([`${request.headers.host} ${request.url}`, request.headers]);
      if (request.url === '/start') {
        response.writeHead(302, { location: `http://other.example.test:${both.port}/hop` });
      }
      response.end('done');
    });
    try {
      const dns = stubResolver({ 'first.example.test': ['127.0.0.1'], 'other.example.test': ['127.0.0.1'] });
      const guard = safeUrl({ ports: 'any', allowLoopbackForTests: true, resolve: dns.resolve });
      await guard.fetch(`http://first.example.test:${both.port}/start`, {
        headers: { authorization: 'Bearer SECRET', cookie: 'session=abc' },
      });
      expect(seen.map(([where]) => where)).toEqual([
        `first.example.test:${both.port} /start`,
        `other.example.test:${both.port} /hop`,
      ]);
      expect(seen[0]?.[1]['authorization']).toBe('Bearer SECRET');
      expect(seen[1]?.[1]['authorization']).toBeUndefined();
      expect(seen[1]?.[1]['cookie']).toBeUndefined();
    } finally {
      await both.close();
    }
  });

  it("does not carry a caller's host header to another origin", async () => {
    const seen: string[] = [];
    const both = await startLoopbackServer((request, response) => {
      seen.push(`${request.headers.host} ${request.url}`);
      if (request.url === '/start') {
        response.writeHead(302, { location: `http://other.example.test:${both.port}/hop` });
      }
      response.end('done');
    });
    try {
      const dns = stubResolver({ 'first.example.test': ['127.0.0.1'], 'other.example.test': ['127.0.0.1'] });
      const guard = safeUrl({ ports: 'any', allowLoopbackForTests: true, resolve: dns.resolve });
      await guard.fetch(`http://first.example.test:${both.port}/start`, {
        headers: { Host: 'tenant-a.first.example.test' },
      });
      // The first origin gets the virtual host the caller chose; the next one gets its own name,
      // not a name the caller chose for another server.
      expect(seen).toEqual(['tenant-a.first.example.test /start', `other.example.test:${both.port} /hop`]);
    } finally {
      await both.close();
    }
  });

  it('treats a change of scheme as another origin, https to http included', () => {
    const sent: Array<readonly [string, string]> = [
      ['authorization', 'Bearer SECRET'],
      ['cookie', 'session=abc'],
      ['proxy-authorization', 'Basic x'],
      ['host', 'tenant-a.example.test'],
      ['x-trace', 'trace-1'],
    ];
    const names = (from: string, to: string) =>
      headersAfterRedirect(sent, new URL(from), new URL(to)).map(([name]) => name);
    for (const [from, to] of [
      ['https://api.example.test/a', 'http://api.example.test/b'],
      ['http://api.example.test/a', 'https://api.example.test/b'],
      ['https://api.example.test/a', 'https://api.example.test:8443/b'],
    ]) {
      expect(names(from!, to!), `${from} → ${to}`).toEqual(['x-trace']);
    }
    // The same origin, the default port spelled out or not: everything goes along.
    expect(names('https://api.example.test/a', 'https://api.example.test:443/b')).toEqual(
      sent.map(([name]) => name),
    );
  });

  /** A resolver that answers 127.0.0.1 only after `delayMs`; `cancel` clears its timers. */
  function slowResolver(delayMs: number) {
    const timers: NodeJS.Timeout[] = [];
    return {
      resolve: () =>
        new Promise<readonly string[]>((resolve) => {
          timers.push(setTimeout(() => resolve(['127.0.0.1']), delayMs));
        }),
      cancel: () => {
        for (const timer of timers) clearTimeout(timer);
      },
    };
  }

  it('cuts a slow DNS resolution at the fetch timeout', async () => {
    const dns = slowResolver(5000);
    try {
      const guard = safeUrl({
        ports: 'any',
        allowLoopbackForTests: true,
        resolve: dns.resolve,
        timeoutMs: 300,
      });
      const startedAt = Date.now();
      const error = await guard
        .fetch(`http://slow-dns.example.test:${server.port}/`)
        .catch((caught) => caught);
      expect(Date.now() - startedAt).toBeLessThan(3000);
      expect(error).toBeInstanceOf(ToolError);
      expect((error as Error).message).toMatch(/did not answer within 300 ms/);
      expect(guard.stats.resolutions).toBe(1);
      expect(guard.stats.connections).toBe(0);
    } finally {
      dns.cancel();
    }
  });

  it("cuts a slow DNS resolution at the caller's abort", async () => {
    const dns = slowResolver(5000);
    const controller = new AbortController();
    const reason = new Error('caller gave up');
    const timer = setTimeout(() => controller.abort(reason), 300);
    try {
      const guard = safeUrl({
        ports: 'any',
        allowLoopbackForTests: true,
        resolve: dns.resolve,
        timeoutMs: 10_000,
      });
      const startedAt = Date.now();
      const error = await guard
        .fetch(`http://slow-dns.example.test:${server.port}/`, { signal: controller.signal })
        .catch((caught) => caught);
      expect(Date.now() - startedAt).toBeLessThan(3000);
      // The abort's own reason, as an abort during the request itself gives.
      expect(error).toBe(reason);
      expect(guard.stats.connections).toBe(0);
    } finally {
      clearTimeout(timer);
      dns.cancel();
    }
  });

  it('bounds the time a silent server can take', async () => {
    const silent = await startLoopbackServer(() => {
      // Never answers.
    });
    try {
      const guard = safeUrl({ ports: 'any', allowLoopbackForTests: true, timeoutMs: 500 });
      const startedAt = Date.now();
      await expect(guard.fetch(`${silent.url}/`)).rejects.toThrow(/did not answer within 500 ms/);
      expect(Date.now() - startedAt).toBeLessThan(1500);
    } finally {
      await silent.close();
    }
  });
});
