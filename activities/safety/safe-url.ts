import type { LookupAddress } from 'node:dns';
import { lookup as dnsLookup } from 'node:dns/promises';
import type { Socket } from 'node:net';
import ipaddr from 'ipaddr.js';
import { Agent, buildConnector, request } from 'undici';
import { type ParsedSafeUrl, parseSafeUrl, type SafeUrlRules } from '../../src/contracts/safe-url.ts';
import { untilAborted } from '../../src/support/until-aborted.ts';
import { ToolDenied, ToolError } from '../tool-implementation.ts';

/** Options for {@link safeUrl}: the lexical rules plus the execution-time bounds. */
export interface SafeUrlOptions extends SafeUrlRules {
  /**
   * Test-only escape hatch: lets exactly 127.0.0.1 and ::1 through the address check, so a test can
   * fetch from a server it started. `{ ports }` narrows it to those ports, so a test can also prove
   * that a redirect to another loopback port is refused. Never set it in production.
   */
  readonly allowLoopbackForTests?: boolean | { readonly ports: readonly number[] };
  /** Resolves a host name to its addresses. Default: the system resolver. Tests pass a stub. */
  readonly resolve?: (hostname: string) => Promise<readonly string[]>;
  /** Redirects followed at most, each one checked like the first URL. Default 5. */
  readonly maxRedirects?: number;
  /** Response bodies larger than this are refused, never truncated. Default 1 MiB. */
  readonly maxResponseBytes?: number;
  /** Time for the whole fetch, redirects included. Default 10 000 ms. */
  readonly timeoutMs?: number;
  /** Time to open one connection. Default 3 000 ms. */
  readonly connectTimeoutMs?: number;
}

/** A URL whose host has been resolved once and whose address passed the check. */
export interface VettedUrl extends ParsedSafeUrl {
  /** The one address every connection for this URL goes to. */
  readonly address: string;
  readonly family: 4 | 6;
}

/** Request headers in any form fetch takes them: a plain object, name/value pairs or a `Headers`. */
export type SafeFetchHeaders =
  | Readonly<Record<string, string>>
  | Iterable<readonly [string, string]>
  | Headers;

export interface SafeFetchResponse {
  readonly status: number;
  readonly contentType: string | undefined;
  readonly body: string;
  readonly bytes: number;
  /** The URL that answered, after redirects. */
  readonly url: string;
  readonly redirects: number;
}

export interface SafeUrlGuard {
  /**
   * Checks a URL's text, resolves its host once and checks every address. Throws ToolDenied. An
   * abort of `signal` ends a pending resolution at once and throws the signal's reason.
   */
  vet(raw: string, options?: { signal?: AbortSignal }): Promise<VettedUrl>;
  /**
   * GETs a URL with the connection pinned to the vetted address, following redirects by hand and
   * checking every hop. Refusals throw ToolDenied (no request was sent); transport problems throw
   * a retryable ToolError. A 4xx or 5xx answer is returned, not thrown. A redirect to another
   * origin (scheme, host or port) drops the `authorization`, `cookie` and `proxy-authorization`
   * headers, and a caller's `host` header, for that hop and every later one.
   */
  fetch(
    raw: string,
    options?: { signal?: AbortSignal; headers?: SafeFetchHeaders },
  ): Promise<SafeFetchResponse>;
  /** Counters: host resolutions and sockets opened. Tests use them to prove nothing was opened. */
  readonly stats: { resolutions: number; connections: number };
}

const redirectStatuses = new Set([301, 302, 303, 307, 308]);

/**
 * Headers meant for the first origin only: the caller's credentials, and a `host` the caller chose
 * (a virtual host of that server), which another server must not be sent. Never sent on to an
 * origin they were not meant for.
 */
const originBoundHeaders = new Set(['authorization', 'cookie', 'proxy-authorization', 'host']);

/**
 * Why an address may not be connected to, or undefined when it is globally routable unicast.
 * IPv4-mapped, IPv4-compatible, NAT64 and 6to4 IPv6 forms are refused outright: each one can smuggle
 * an internal IPv4 address past a check that only looks at IPv6 ranges.
 */
export function addressProblem(
  address: string,
  options: { allowLoopbackForTests?: boolean } = {},
): string | undefined {
  if (!ipaddr.isValid(address)) return 'it is not an IP address';
  const parsed = ipaddr.parse(address);
  const normalized = parsed.toNormalizedString();
  if (options.allowLoopbackForTests && (normalized === '127.0.0.1' || normalized === '0:0:0:0:0:0:0:1')) {
    return undefined;
  }
  if (parsed.kind() === 'ipv6') {
    const ipv6 = parsed as ipaddr.IPv6;
    const parts = ipv6.parts;
    if (ipv6.isIPv4MappedAddress()) return 'IPv4-mapped IPv6 addresses are not allowed';
    // ::1 and :: share the first six zero groups of the IPv4-compatible form; name them for what they are.
    if (normalized === '0:0:0:0:0:0:0:1') return 'it is not a public internet address (loopback)';
    if (normalized === '0:0:0:0:0:0:0:0') return 'it is not a public internet address (unspecified)';
    if (parts.slice(0, 6).every((part) => part === 0))
      return 'IPv4-compatible IPv6 addresses are not allowed';
    if (parts[0] === 0x64 && parts[1] === 0xff9b) return 'NAT64 addresses are not allowed';
    if (parts[0] === 0x2002) return '6to4 addresses are not allowed';
  }
  const range = parsed.range();
  if (range !== 'unicast') return `it is not a public internet address (${range})`;
  return undefined;
}

const defaultResolve = async (hostname: string): Promise<readonly string[]> => {
  const answers: LookupAddress[] = await dnsLookup(hostname, { all: true, verbatim: true });
  return answers.map((answer) => answer.address);
};

/**
 * A guard for outbound HTTP(S) that a tool author builds once and uses for every request. It
 * enforces, in order: the lexical rules (scheme, user-info, port, host allowlist); one DNS
 * resolution whose every answer must be a public unicast address; a connection pinned to that
 * address through an undici Agent whose `connect.lookup` never asks DNS again; a check of the
 * socket's real peer; redirects followed by hand with each hop checked again; and bounds on size
 * and time.
 */
export function safeUrl(options: SafeUrlOptions = {}): SafeUrlGuard {
  const resolve = options.resolve ?? defaultResolve;
  const maxRedirects = options.maxRedirects ?? 5;
  const maxResponseBytes = options.maxResponseBytes ?? 1024 * 1024;
  const timeoutMs = options.timeoutMs ?? 10_000;
  const connectTimeoutMs = options.connectTimeoutMs ?? 3_000;
  const stats = { resolutions: 0, connections: 0 };
  const loopback = options.allowLoopbackForTests ?? false;
  const addressOptionsFor = (port: number) => ({
    allowLoopbackForTests: typeof loopback === 'boolean' ? loopback : loopback.ports.includes(port),
  });

  async function vet(raw: string, vetOptions: { signal?: AbortSignal } = {}): Promise<VettedUrl> {
    const parsed = parseSafeUrl(raw, options);
    if (!parsed.ok) throw new ToolDenied(`URL refused: ${parsed.problem}.`);
    const target = parsed.value;
    let addresses: readonly string[];
    if (target.isIpLiteral) {
      // A literal never reaches `lookup`, so it is checked here on its own.
      addresses = [target.host];
    } else {
      stats.resolutions++;
      try {
        // The resolver is raced against the signal: a slow DNS server must not outlast the
        // fetch's time bound or the caller's abort.
        addresses = await untilAborted(resolve(target.host), vetOptions.signal);
      } catch (error) {
        if (vetOptions.signal?.aborted && error === vetOptions.signal.reason) throw error;
        throw new ToolError('The host name does not resolve. Check the URL for typos.', {
          effect: 'none',
          retryable: false,
        });
      }
      if (addresses.length === 0) {
        throw new ToolError('The host name has no addresses. Check the URL.', {
          effect: 'none',
          retryable: false,
        });
      }
    }
    // Every answer must pass: a mix of public and private answers is how rebinding starts.
    for (const address of addresses) {
      const problem = addressProblem(address, addressOptionsFor(target.port));
      if (problem) throw new ToolDenied(`URL refused: the host is not reachable from here (${problem}).`);
    }
    const address = ipaddr.parse(addresses[0]!);
    return {
      ...target,
      address: address.kind() === 'ipv6' ? address.toNormalizedString() : address.toString(),
      family: address.kind() === 'ipv6' ? 6 : 4,
    };
  }

  function pinnedAgent(vetted: VettedUrl): Agent {
    const connector = buildConnector({
      timeout: connectTimeoutMs,
      // The only answer this connection can ever get is the address that was checked.
      lookup: (_hostname, lookupOptions, callback) => {
        if ((lookupOptions as { all?: boolean }).all) {
          (callback as (error: null, addresses: LookupAddress[]) => void)(null, [
            { address: vetted.address, family: vetted.family },
          ]);
        } else {
          (callback as (error: null, address: string, family: number) => void)(
            null,
            vetted.address,
            vetted.family,
          );
        }
      },
    });
    return new Agent({
      connections: 1,
      pipelining: 0,
      connect: (connectOptions, callback) => {
        stats.connections++;
        connector(connectOptions, (error, socket) => {
          if (error || !socket) return callback(error ?? new Error('no socket'), null);
          const peer = (socket as Socket).remoteAddress;
          if (!peer || !sameAddress(peer, vetted.address)) {
            socket.destroy();
            return callback(new Error('connected to an address other than the vetted one'), null);
          }
          return callback(null, socket);
        });
      },
    });
  }

  async function fetchUrl(
    raw: string,
    fetchOptions: { signal?: AbortSignal; headers?: SafeFetchHeaders } = {},
  ): Promise<SafeFetchResponse> {
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = fetchOptions.signal ? AbortSignal.any([fetchOptions.signal, timeout]) : timeout;
    const timedOut = (cause: unknown) =>
      new ToolError(`The site did not answer within ${timeoutMs} ms. Try again later.`, {
        effect: 'none',
        cause,
      });
    // Lower-case name/value pairs; a redirect to another origin takes the credentials (and a chosen
    // host) out for good.
    let headers = headerPairs(fetchOptions.headers);
    let current = raw;
    for (let redirects = 0; ; redirects++) {
      let vetted: VettedUrl;
      try {
        vetted = await vet(current, { signal });
      } catch (error) {
        // Only an abort during resolution is translated; refusals and DNS failures pass unchanged.
        if (signal.aborted && error === signal.reason && timeout.aborted) throw timedOut(error);
        throw error;
      }
      const agent = pinnedAgent(vetted);
      try {
        let response: Awaited<ReturnType<typeof request>>;
        try {
          response = await request(vetted.url.href, {
            method: 'GET',
            dispatcher: agent,
            signal,
            headers: requestHeaders(headers),
            headersTimeout: timeoutMs,
            bodyTimeout: timeoutMs,
          });
        } catch (error) {
          if (timeout.aborted) throw timedOut(error);
          if (fetchOptions.signal?.aborted) throw error;
          throw new ToolError('The site could not be reached. Try again later.', {
            effect: 'none',
            cause: error,
          });
        }
        const location = response.headers['location'];
        if (redirectStatuses.has(response.statusCode) && typeof location === 'string') {
          await response.body.dump();
          if (redirects >= maxRedirects) {
            throw new ToolDenied(`URL refused: more than ${maxRedirects} redirects.`);
          }
          let next: URL;
          try {
            next = new URL(location, vetted.url);
          } catch {
            throw new ToolError('The site sent a malformed redirect.', { effect: 'none', retryable: false });
          }
          headers = headersAfterRedirect(headers, vetted.url, next);
          current = next.href;
          continue;
        }
        const declared = Number(response.headers['content-length'] ?? Number.NaN);
        if (Number.isFinite(declared) && declared > maxResponseBytes) {
          response.body.destroy();
          throw tooLarge(maxResponseBytes);
        }
        const chunks: Buffer[] = [];
        let bytes = 0;
        try {
          for await (const chunk of response.body) {
            bytes += (chunk as Buffer).length;
            if (bytes > maxResponseBytes) {
              response.body.destroy();
              throw tooLarge(maxResponseBytes);
            }
            chunks.push(chunk as Buffer);
          }
        } catch (error) {
          if (error instanceof ToolError) throw error;
          if (fetchOptions.signal?.aborted) throw error;
          throw new ToolError('The site stopped sending the response. Try again later.', {
            effect: 'none',
            cause: error,
          });
        }
        const contentType = response.headers['content-type'];
        return {
          status: response.statusCode,
          contentType: typeof contentType === 'string' ? contentType : undefined,
          body: Buffer.concat(chunks).toString('utf8'),
          bytes,
          url: vetted.url.href,
          redirects,
        };
      } finally {
        await agent.destroy().catch(() => undefined);
      }
    }
  }

  return { vet, fetch: fetchUrl, stats };
}

/** The caller's headers as lower-case name/value pairs, whatever form they came in. */
function headerPairs(headers: SafeFetchHeaders | undefined): Array<readonly [string, string]> {
  if (!headers) return [];
  const entries: Iterable<readonly [string, string]> =
    Symbol.iterator in headers
      ? (headers as Iterable<readonly [string, string]>)
      : Object.entries(headers as Readonly<Record<string, string>>);
  return Array.from(entries, ([name, value]) => [name.toLowerCase(), String(value)] as const);
}

/**
 * The headers for the next hop of a redirect from `from` to `to`. As fetch does, credentials stay
 * with the origin they were given for: a change of scheme (https to http included), host or port is
 * another origin, and it drops the origin-bound headers; a later redirect back to the first origin
 * does not bring them back, since the caller passes this hop's result on. Method and body need no
 * rewrite: every hop is a GET without a body, which is what 301/302/303 turn a request into anyway.
 */
export function headersAfterRedirect(
  headers: ReadonlyArray<readonly [string, string]>,
  from: URL,
  to: URL,
): Array<readonly [string, string]> {
  return from.origin === to.origin ? [...headers] : headers.filter(([name]) => !originBoundHeaders.has(name));
}

/** The headers for undici: the default user agent unless the caller set one, repeated names kept. */
function requestHeaders(pairs: ReadonlyArray<readonly [string, string]>): Record<string, string | string[]> {
  const byName = new Map<string, string[]>([['user-agent', []]]);
  for (const [name, value] of pairs) {
    const values = byName.get(name);
    if (values) values.push(value);
    else byName.set(name, [value]);
  }
  return Object.fromEntries(
    Array.from(byName, ([name, values]) => [
      name,
      values.length === 0 ? 'toolgate-http-fetch' : values.length === 1 ? values[0]! : values,
    ]),
  );
}

function tooLarge(maxResponseBytes: number): ToolError {
  return new ToolError(
    `The response is larger than ${maxResponseBytes} bytes, so it was refused rather than cut off. Ask for a smaller resource.`,
    { effect: 'none', retryable: false },
  );
}

function sameAddress(left: string, right: string): boolean {
  try {
    return ipaddr.process(left).toNormalizedString() === ipaddr.process(right).toNormalizedString();
  } catch {
    return false;
  }
}
