import { z } from 'zod';

/** What a URL may look like, checked on the text alone (see {@link safeUrlProblem}). */
export interface SafeUrlRules {
  /** Allowed schemes, without the colon. Only `http` and `https` are ever accepted. Default both. */
  readonly schemes?: readonly string[];
  /** Allowed ports, or `'any'`. Default: 80 and 443 (the scheme defaults). */
  readonly ports?: readonly number[] | 'any';
  /**
   * Allowed host names, matched exactly (lower case) or, with a leading `*.`, as any subdomain.
   * Undefined allows any public host; the address check at execution time still applies.
   */
  readonly hosts?: readonly string[];
  /** Maximum length of the URL text. Default 2048. */
  readonly maxLength?: number;
}

/** A URL that passed the lexical check, in the parsed form every later step must use. */
export interface ParsedSafeUrl {
  readonly url: URL;
  /** The host without IPv6 brackets and without a trailing dot, lower case. */
  readonly host: string;
  readonly port: number;
  /** Whether the host is an IP literal; those skip DNS and need their own address check. */
  readonly isIpLiteral: boolean;
}

const neverSchemes = new Set(['file', 'ftp', 'gopher', 'data', 'javascript', 'ws', 'wss', 'blob', 'dict']);

/**
 * Names that point at the machine itself or at cloud metadata services, whatever DNS says. Refused
 * on the text so that a resolver or a hosts file never gets the chance to map them.
 */
const internalNames = [
  'localhost',
  'localhost.localdomain',
  'ip6-localhost',
  'ip6-loopback',
  'metadata',
  'metadata.google.internal',
  'metadata.goog',
  'instance-data',
  'instance-data.ec2.internal',
  'kubernetes.default',
  'kubernetes.default.svc',
];
const internalSuffixes = ['.localhost', '.local', '.internal', '.localdomain', '.home.arpa', '.arpa', '.svc'];

/**
 * Why a URL is refused on its text, or a parsed form when it passes. This is the workflow-safe
 * first half of `safeUrl`: scheme, user-info, port, host syntax, internal names and the host
 * allowlist. Addresses are checked at execution time, after the single DNS resolution.
 *
 * The URL is parsed once with the WHATWG parser, which already folds decimal, octal, hex and short
 * IPv4 forms and percent-encoded hosts into their canonical form. Every later step uses that parsed
 * object, never the raw text, so what was checked is what gets connected to.
 */
export function parseSafeUrl(
  raw: string,
  rules: SafeUrlRules = {},
): { ok: true; value: ParsedSafeUrl } | { ok: false; problem: string } {
  const refuse = (problem: string) => ({ ok: false as const, problem });
  const textProblem = urlTextProblem(raw, rules.maxLength ?? 2048);
  if (textProblem) return refuse(textProblem);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return refuse('the URL cannot be parsed; send an absolute http or https URL');
  }
  const scheme = url.protocol.slice(0, -1).toLowerCase();
  if (!isAllowedScheme(scheme, rules.schemes)) {
    return refuse(`the scheme ${JSON.stringify(scheme.slice(0, 16))} is not allowed; use https`);
  }
  if (hasUserInfo(url, raw)) return refuse('user names and passwords in URLs are not allowed');
  const port = url.port === '' ? (scheme === 'https' ? 443 : 80) : Number(url.port);
  const allowedPorts = rules.ports ?? [80, 443];
  if (allowedPorts !== 'any' && !allowedPorts.includes(port)) return refuse(`port ${port} is not allowed`);
  const { host, isIpLiteral } = hostOf(url);
  if (host.length === 0) return refuse('the URL has no host');
  const nameProblem = isIpLiteral ? undefined : hostNameProblem(host);
  if (nameProblem) return refuse(nameProblem);
  if (rules.hosts && !hostMatches(host, rules.hosts)) {
    return refuse('this host is not on the list of hosts the tool may reach');
  }
  return { ok: true, value: { url, host, port, isIpLiteral } };
}

/** Why the raw text is refused before it is parsed: empty, too long, or hiding characters. */
function urlTextProblem(raw: string, maxLength: number): string | undefined {
  if (typeof raw !== 'string' || raw.length === 0) return 'the URL is empty';
  if (raw.length > maxLength) return `the URL is longer than ${maxLength} characters`;
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are exactly what is refused
  if (/[\u0000-\u0020\u007f-\u009f\u200b-\u200f\u2028-\u202e\u2060-\u2064\ufeff]/.test(raw)) {
    return 'the URL contains whitespace, control or invisible characters';
  }
  if (raw.includes('\\')) return 'the URL contains a backslash';
  return undefined;
}

/** Whether a scheme is allowed: only http and https ever are, whatever the rules list. */
function isAllowedScheme(scheme: string, schemes: readonly string[] | undefined): boolean {
  const allowedSchemes: readonly string[] = (schemes ?? ['http', 'https']).filter(
    (allowed) => allowed === 'http' || allowed === 'https',
  );
  return !neverSchemes.has(scheme) && allowedSchemes.includes(scheme);
}

/**
 * Whether the URL carries a user name or password. The raw text is looked at too: the parser drops
 * an empty user-info (`http://@host`), which still marks a URL written to mislead.
 */
function hasUserInfo(url: URL, raw: string): boolean {
  return url.username !== '' || url.password !== '' || /^[a-z]+:\/\/[^/?#]*@/i.test(raw);
}

/** The host as it is checked and connected to: lower case, without IPv6 brackets and trailing dots. */
function hostOf(url: URL): { host: string; isIpLiteral: boolean } {
  let host = url.hostname.toLowerCase();
  const isIpv6 = host.startsWith('[');
  if (isIpv6) host = host.slice(1, -1);
  while (host.endsWith('.')) host = host.slice(0, -1);
  const isIpv4 = !isIpv6 && /^\d{1,3}(\.\d{1,3}){3}$/.test(host);
  return { host, isIpLiteral: isIpv4 || isIpv6 };
}

/** Rules for a host name that is not an IP literal, in order; the first that breaks names the problem. */
const hostNameRules: ReadonlyArray<readonly [breaks: (host: string) => boolean, problem: string]> = [
  // Punycode labels are how look-alike hosts (Cyrillic "а" for Latin "a") arrive.
  [
    (host) => host.startsWith('xn--') || host.includes('.xn--'),
    'internationalised (punycode) host names are not allowed',
  ],
  [
    (host) => !/^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/.test(host),
    'the host name is malformed',
  ],
  [(host) => !host.includes('.'), 'single-label host names are not allowed'],
  // Anything numeric the parser did not fold into an address is ambiguous; never guess.
  [(host) => /^[0-9.]+$/.test(host), 'the host looks like a malformed IP address'],
  [
    (host) => internalNames.includes(host) || internalSuffixes.some((suffix) => host.endsWith(suffix)),
    'internal and metadata host names are not allowed',
  ],
];

function hostNameProblem(host: string): string | undefined {
  return hostNameRules.find(([breaks]) => breaks(host))?.[1];
}

/** The problem text for a refused URL, or undefined when it passes the lexical check. */
export function safeUrlProblem(raw: string, rules: SafeUrlRules = {}): string | undefined {
  const parsed = parseSafeUrl(raw, rules);
  return parsed.ok ? undefined : parsed.problem;
}

/** Whether `host` is on the allowlist: exact names, or `*.example.com` for its subdomains. */
export function hostMatches(host: string, allowed: readonly string[]): boolean {
  const normalized = host.toLowerCase().replace(/\.+$/, '');
  return allowed.some((entry) => {
    const pattern = entry.toLowerCase().replace(/\.+$/, '');
    if (pattern.startsWith('*.')) return normalized.endsWith(pattern.slice(1));
    return normalized === pattern;
  });
}

/** A zod schema for a URL a tool may fetch; refusals name the rule that failed. */
export function safeUrlSchema(rules: SafeUrlRules = {}) {
  return z.string().superRefine((value, context) => {
    const problem = safeUrlProblem(value, rules);
    if (problem) context.addIssue({ code: 'custom', message: `URL refused: ${problem}.` });
  });
}
