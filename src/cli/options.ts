import { userInfo } from 'node:os';
import { type Command, Option } from 'commander';
import { checkContext } from '../client/call-context.ts';
import { ToolgateUsageError } from '../client/errors.ts';
import { buildListQuery, type ListFilters } from '../client/list-query.ts';
import { describeKeyRules } from '../contracts/call-id.ts';
import {
  type CallContext,
  type CallEffect,
  CallStatus,
  type PrincipalKind,
} from '../contracts/call-record.ts';
import {
  currentGatesProtocol,
  leanGatesProtocol,
  startableGatesProtocols,
} from '../contracts/prepare-call.ts';

/** Who is at the keyboard, for `--as` and `--principal` defaults. */
export function currentUser(): string {
  try {
    return process.env['USER'] ?? userInfo().username;
  } catch {
    return 'operator';
  }
}

/** `--config` and `--example`, which every command takes. */
export interface ConfigFlags {
  readonly config?: string;
  readonly example?: boolean;
}

/** Adds `--config` and `--example`: which config file the command runs with. */
export function withConfigOptions(command: Command): Command {
  return command
    .option(
      '--config <file>',
      'the config file (default: TOOLGATE_CONFIG, then toolgate.config.ts, .mts, .js or .mjs in this folder)',
    )
    .option('--example', 'run with the bundled example tools instead of a config file');
}

/** Adds the flags every command that talks to the cluster shares. */
export function withConnectionOptions(command: Command): Command {
  return withConfigOptions(command)
    .option('--json', 'print one JSON document on stdout')
    .option(
      '--address <host:port>',
      'Temporal address (default: TEMPORAL_ADDRESS, the config, a Temporal profile, then <data-dir>/endpoint.json)',
    )
    .option(
      '--namespace <namespace>',
      'Temporal namespace (default: TEMPORAL_NAMESPACE, the config, a Temporal profile, the endpoint file)',
    )
    .option(
      '--task-queue <queue>',
      'task queue of the workers (default: TOOLGATE_TASK_QUEUE, the config, the endpoint file, toolgate)',
    )
    .option(
      '--data-dir <dir>',
      'toolgate data directory: endpoint file and approval key (default: TOOLGATE_DATA_DIR, the config, .toolgate)',
    );
}

/**
 * `--gate-protocol`, for the commands that start runs (`call`, `replay`): pins new runs to gate
 * protocol 2 while workers older than protocol 3 still serve the task queue (docs/operators.md).
 */
export function gateProtocolOption(): Option {
  return new Option(
    '--gate-protocol <n>',
    `gate protocol of the runs this starts; ${leanGatesProtocol} only while workers older than ${currentGatesProtocol} serve the queue (default: ${currentGatesProtocol})`,
  )
    .choices(startableGatesProtocols.map(String))
    .env('TOOLGATE_GATE_PROTOCOL');
}

/** `--key`: an empty key is as malformed as any other the key rules refuse (an absent key is fine). */
export function checkKeyFlag(key: string | undefined): void {
  if (key !== undefined && key.trim() === '') {
    throw new ToolgateUsageError(`--key is empty: the idempotency key is malformed. ${describeKeyRules()}`);
  }
}

/**
 * The call context `call` and `mcp` run under, from their flags, checked by the client's rules
 * before anything connects; a problem names the flag, not the library's field. Before, `toolgate
 * mcp --tenant "acme corp"` started, and every tools/call failed as "could not run, retry later".
 */
export function callContextOf(
  flags: { readonly tenant: string; readonly principal?: string; readonly principalKind: PrincipalKind },
  defaultPrincipal: string,
): CallContext {
  const context: CallContext = {
    tenant: flags.tenant,
    principal: flags.principal ?? defaultPrincipal,
    principalKind: flags.principalKind,
  };
  const flagOf = { tenant: '--tenant', principal: '--principal', principalKind: '--principal-kind' };
  checkContext(context, (field) => `${flagOf[field]} ${JSON.stringify(String(context[field]).slice(0, 80))}`);
  return context;
}

export function parseLimit(value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const limit = Number(value);
  if (!Number.isInteger(limit) || limit < 1 || limit > 10_000) {
    throw new ToolgateUsageError('--limit must be a whole number from 1 to 10000.');
  }
  return limit;
}

export function parseStatuses(value: string | undefined): CallStatus[] | undefined {
  if (value === undefined) return undefined;
  const statuses = value.split(',').map((part) => part.trim());
  for (const status of statuses) {
    if (!Object.hasOwn(CallStatus, status)) {
      throw new ToolgateUsageError(
        `Unknown status ${JSON.stringify(status)}. Use one or more of: ${Object.keys(CallStatus).join(', ')}.`,
      );
    }
  }
  return statuses as CallStatus[];
}

export interface FilterFlags {
  readonly status?: string;
  readonly tool?: string;
  readonly tenant?: string;
  readonly effect?: string;
  readonly principal?: string;
  readonly since?: string;
  readonly limit?: string;
}

/**
 * The filter flags as list filters, checked in full (the query is built once and dropped) so that a
 * bad `--since` or `--tenant` is refused before anything connects.
 */
export function filtersFrom(flags: FilterFlags, defaultLimit: number): ListFilters {
  const status = parseStatuses(flags.status);
  const filters: ListFilters = {
    ...(status ? { status } : {}),
    ...(flags.tool ? { tool: flags.tool } : {}),
    ...(flags.tenant ? { tenant: flags.tenant } : {}),
    ...(flags.effect ? { effect: flags.effect as CallEffect } : {}),
    ...(flags.principal ? { principal: flags.principal } : {}),
    ...(flags.since ? { since: flags.since } : {}),
    limit: parseLimit(flags.limit, defaultLimit),
  };
  buildListQuery(filters);
  return filters;
}

export function withFilterOptions(command: Command, defaultStatus?: string): Command {
  return command
    .option('--status <status[,status]>', `call status: ${Object.keys(CallStatus).join(', ')}`, defaultStatus)
    .option('--tool <tool>', 'tool name')
    .option('--tenant <tenant>', 'tenant')
    .addOption(new Option('--effect <effect>', 'effect').choices(['none', 'applied', 'unknown']))
    .option('--principal <principal>', 'the requester')
    .option('--since <when>', 'started within a duration (90s, 30m, 1h, 2d, 1w) or since an ISO time')
    .option('--limit <n>', 'at most this many calls');
}

/** The "Examples:" block of a command's help. */
export const helpExamples = (lines: readonly string[]) =>
  `\nExamples:\n${lines.map((line) => `  $ ${line}`).join('\n')}\n`;

/**
 * A port flag as a number, or a usage error naming the valid range. `allowZero`: 0 asks the system
 * for a free port.
 */
export function parsePort(
  value: string,
  flag: string,
  options: { allowZero?: boolean; zeroMeans?: string } = {},
): number {
  const lowest = options.allowZero ? 0 : 1;
  const port = /^\d{1,5}$/.test(value.trim()) ? Number(value.trim()) : Number.NaN;
  if (!Number.isInteger(port) || port < lowest || port > 65535) {
    throw new ToolgateUsageError(
      `${flag} must be a whole number from ${lowest} to 65535${options.allowZero ? ` (0 ${options.zeroMeans ?? 'picks a free port'})` : ''}, not ${JSON.stringify(value.slice(0, 40))}.`,
    );
  }
  return port;
}

/** A worker's metrics port unless told otherwise (the usual Prometheus exporter port). */
export const defaultMetricsPort = 9464;

/**
 * `--metrics-port` as the worker's metrics endpoint: undefined for 0 (none). The host is
 * TOOLGATE_METRICS_HOST, an IPv4 address, by default 127.0.0.1; a container that is scraped from
 * outside sets 0.0.0.0 (docker-compose.yml does).
 */
export function metricsEndpointOf(value: string, env: NodeJS.ProcessEnv = process.env) {
  const port = parsePort(value, '--metrics-port', { allowZero: true, zeroMeans: 'for no metrics' });
  return port === 0 ? undefined : { host: env['TOOLGATE_METRICS_HOST'] || '127.0.0.1', port };
}
