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

/** A guard's settings with their defaults applied, and its counters. */
interface GuardSettings {
  readonly rules: SafeUrlRules;
  readonly resolve: (hostname: string) => Promise<readonly string[]>;
  readonly maxRedirects: number;
  readonly maxResponseBytes: number;
  readonly timeoutMs: number;
  readonly connectTimeoutMs: number;
  readonly allowLoopbackForTests: NonNullable<SafeUrlOptions['allowLoopbackForTests']>;
  readonly stats: { resolutions: number; connections: number };
}

/**
 * A guard for outbound HTTP(S) that a tool author builds once and uses for every request. It
 * enforces, in order: the lexical rules (scheme, user-info, port, host allowlist); one DNS
 * resolution whose every answer must be a public unicast address; a connection pinned to that
 * address through an undici Agent whose `connect.lookup` never asks DNS again; a check of the
 * socket's real peer; redirects followed by hand with each hop checked again; and bounds on size
 * and time.
 */
export function safeUrl(options: SafeUrlOptions = {}): SafeUrlGuard {
  const guard: GuardSettings = {
    rules: options,
    resolve: options.resolve ?? defaultResolve,
    maxRedirects: options.maxRedirects ?? 5,
    maxResponseBytes: options.maxResponseBytes ?? 1024 * 1024,
    timeoutMs: options.timeoutMs ?? 10_000,
    connectTimeoutMs: options.connectTimeoutMs ?? 3_000,
    allowLoopbackForTests: options.allowLoopbackForTests ?? false,
    stats: { resolutions: 0, connections: 0 },
  };
  return {
    vet: (raw, vetOptions = {}) => vet(guard, raw, vetOptions.signal),
    fetch: (raw, fetchOptions = {}) => fetchUrl(guard, raw, fetchOptions),
    stats: guard.stats,
  };
}

async function vet(guard: GuardSettings, raw: string, signal: AbortSignal | undefined): Promise<VettedUrl> {
  const parsed = parseSafeUrl(raw, guard.rules);
  if (!parsed.ok) throw new ToolDenied(`URL refused: ${parsed.problem}.`);
  const target = parsed.value;
  // A literal never reaches `lookup`, so it is checked here on its own.
  const addresses = target.isIpLiteral ? [target.host] : await resolveHost(guard, target.host, signal);
  // Every answer must pass: a mix of public and private answers is how rebinding starts.
  const loopback = guard.allowLoopbackForTests;
  const addressOptions = {
    allowLoopbackForTests: typeof loopback === 'boolean' ? loopback : loopback.ports.includes(target.port),
  };
  for (const address of addresses) {
    const problem = addressProblem(address, addressOptions);
    if (problem) throw new ToolDenied(`URL refused: the host is not reachable from here (${problem}).`);
  }
  const address = ipaddr.parse(addresses[0]!);
  return {
    ...target,
    address: address.kind() === 'ipv6' ? address.toNormalizedString() : address.toString(),
    family: address.kind() === 'ipv6' ? 6 : 4,
  };
}

/** The one resolution of a host name, counted; a failure or an empty answer is the caller's to fix. */
async function resolveHost(
  guard: GuardSettings,
  host: string,
  signal: AbortSignal | undefined,
): Promise<readonly string[]> {
  guard.stats.resolutions++;
  let addresses: readonly string[];
  try {
    // The resolver is raced against the signal: a slow DNS server must not outlast the
    // fetch's time bound or the caller's abort.
    addresses = await untilAborted(guard.resolve(host), signal);
  } catch (error) {
    if (signal?.aborted && error === signal.reason) throw error;
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
  return addresses;
}

function pinnedAgent(guard: GuardSettings, vetted: VettedUrl): Agent {
  const connector = buildConnector({
    timeout: guard.connectTimeoutMs,
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
      guard.stats.connections++;
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

/** One fetch, redirects included: the guard, the caller's signal, and the time bound over it all. */
interface FetchRun {
  readonly guard: GuardSettings;
  readonly callerSignal: AbortSignal | undefined;
  readonly timeout: AbortSignal;
  /** Aborts on the caller's signal or the time bound, whichever comes first. */
  readonly signal: AbortSignal;
}

type UndiciResponse = Awaited<ReturnType<typeof request>>;

async function fetchUrl(
  guard: GuardSettings,
  raw: string,
  fetchOptions: { signal?: AbortSignal; headers?: SafeFetchHeaders },
): Promise<SafeFetchResponse> {
  const timeout = AbortSignal.timeout(guard.timeoutMs);
  const callerSignal = fetchOptions.signal;
  const signal = callerSignal ? AbortSignal.any([callerSignal, timeout]) : timeout;
  const run: FetchRun = { guard, callerSignal, timeout, signal };
  // Lower-case name/value pairs; a redirect to another origin takes the credentials (and a chosen
  // host) out for good.
  let headers = headerPairs(fetchOptions.headers);
  let current = raw;
  for (let redirects = 0; ; redirects++) {
    const vetted = await vetHop(run, current);
    const agent = pinnedAgent(guard, vetted);
    try {
      const response = await send(run, vetted, agent, headers);
      const next = await redirectTarget(guard, response, vetted.url, redirects);
      if (!next) return await readResponse(run, response, vetted.url, redirects);
      headers = headersAfterRedirect(headers, vetted.url, next);
      current = next.href;
    } finally {
      await agent.destroy().catch(() => undefined);
    }
  }
}

/** Vets one hop; an abort during resolution that the time bound caused says so. */
async function vetHop(run: FetchRun, raw: string): Promise<VettedUrl> {
  try {
    return await vet(run.guard, raw, run.signal);
  } catch (error) {
    // Only an abort during resolution is translated; refusals and DNS failures pass unchanged.
    if (run.signal.aborted && error === run.signal.reason && run.timeout.aborted) {
      throw timedOut(run.guard.timeoutMs, error);
    }
    throw error;
  }
}

/** Sends the GET over the pinned agent; a caller's abort passes unchanged, other failures are retryable. */
async function send(
  run: FetchRun,
  vetted: VettedUrl,
  agent: Agent,
  headers: ReadonlyArray<readonly [string, string]>,
): Promise<UndiciResponse> {
  try {
    return await request(vetted.url.href, {
      method: 'GET',
      dispatcher: agent,
      signal: run.signal,
      headers: requestHeaders(headers),
      headersTimeout: run.guard.timeoutMs,
      bodyTimeout: run.guard.timeoutMs,
    });
  } catch (error) {
    if (run.timeout.aborted) throw timedOut(run.guard.timeoutMs, error);
    if (run.callerSignal?.aborted) throw error;
    throw new ToolError('The site could not be reached. Try again later.', {
      effect: 'none',
      cause: error,
    });
  }
}

/**
 * Where a redirect leads, or undefined when the response is not one. A redirect's body is drained,
 * then the hop count and the target are checked.
 */
async function redirectTarget(
  guard: GuardSettings,
  response: UndiciResponse,
  from: URL,
  redirects: number,
): Promise<URL | undefined> {
  const location = response.headers['location'];
  if (!redirectStatuses.has(response.statusCode) || typeof location !== 'string') return undefined;
  await response.body.dump();
  if (redirects >= guard.maxRedirects) {
    throw new ToolDenied(`URL refused: more than ${guard.maxRedirects} redirects.`);
  }
  try {
    return new URL(location, from);
  } catch {
    throw new ToolError('The site sent a malformed redirect.', { effect: 'none', retryable: false });
  }
}

/** The final answer, its body read whole within the size bound. */
async function readResponse(
  run: FetchRun,
  response: UndiciResponse,
  url: URL,
  redirects: number,
): Promise<SafeFetchResponse> {
  const maxResponseBytes = run.guard.maxResponseBytes;
  const declared = Number(response.headers['content-length'] ?? Number.NaN);
  if (Number.isFinite(declared) && declared > maxResponseBytes) {
    response.body.destroy();
    throw tooLarge(maxResponseBytes);
  }
  const body = await readBody(run, response.body, maxResponseBytes);
  const contentType = response.headers['content-type'];
  return {
    status: response.statusCode,
    contentType: typeof contentType === 'string' ? contentType : undefined,
    body: body.text,
    bytes: body.bytes,
    url: url.href,
    redirects,
  };
}

/**
 * Reads a body chunk by chunk, and stops as soon as it passes `maxBytes`: a body that declared no
 * length, or a false one, is bounded too.
 */
async function readBody(
  run: FetchRun,
  body: UndiciResponse['body'],
  maxBytes: number,
): Promise<{ text: string; bytes: number }> {
  const chunks: Buffer[] = [];
  let bytes = 0;
  try {
    for await (const chunk of body) {
      bytes += (chunk as Buffer).length;
      if (bytes > maxBytes) {
        body.destroy();
        throw tooLarge(maxBytes);
      }
      chunks.push(chunk as Buffer);
    }
  } catch (error) {
    if (error instanceof ToolError) throw error;
    if (run.callerSignal?.aborted) throw error;
    throw new ToolError('The site stopped sending the response. Try again later.', {
      effect: 'none',
      cause: error,
    });
  }
  return { text: Buffer.concat(chunks).toString('utf8'), bytes };
}

function timedOut(timeoutMs: number, cause: unknown): ToolError {
  return new ToolError(`The site did not answer within ${timeoutMs} ms. Try again later.`, {
    effect: 'none',
    cause,
  });
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
