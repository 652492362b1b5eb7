import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import {
  type ClientConfigProfile,
  type ClientConnectConfig,
  loadClientConfigProfile,
  toClientOptions,
} from '@temporalio/envconfig';
import type { ConnectionConfig } from '../config/define-config.ts';

/** The task queue toolgate workers poll unless told otherwise. */
export const defaultTaskQueue = 'toolgate';

/** Where a connection setting came from, in the order they are tried (docs/operators.md). */
export type SettingSource =
  | 'flag'
  | 'environment'
  | 'config file'
  | 'Temporal profile'
  | 'endpoint file'
  | 'default';

/** The sources of one command's connection, each optional. */
export interface ConnectionInputs {
  /** `--address`, `--namespace`, `--task-queue`. */
  readonly flags?: { readonly address?: string; readonly namespace?: string; readonly taskQueue?: string };
  /** TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS*, TEMPORAL_PROFILE… and TOOLGATE_TASK_QUEUE. */
  readonly env?: NodeJS.ProcessEnv;
  /** The config file's `connection` and `taskQueue`. */
  readonly config?: { readonly connection?: ConnectionConfig; readonly taskQueue?: string };
  /** What a running `toolgate dev` wrote to `<data dir>/endpoint.json`; `dev` itself passes none. */
  readonly endpointFile?: {
    readonly address?: string;
    readonly namespace?: string;
    readonly taskQueue?: string;
  };
}

/** A command's connection: each setting from the first source that gives it. */
export interface ResolvedConnection {
  /** Absent when no source names a cluster (then `toolgate dev` starts its own server). */
  readonly address?: string;
  readonly namespace: string;
  readonly taskQueue: string;
  /** For `Connection.connect` and `NativeConnection.connect`: the address, TLS, API key. */
  readonly connectionOptions: Record<string, unknown>;
  readonly sources: {
    readonly address?: SettingSource;
    readonly namespace: SettingSource;
    readonly taskQueue: SettingSource;
  };
}

/**
 * Resolves a connection by one rule: each setting (address, namespace, API key, TLS, task queue) is
 * taken from the first of flags, environment, config file, Temporal profile, endpoint file that
 * gives it. The profile is Temporal's own (`TEMPORAL_PROFILE`, `TEMPORAL_CONFIG_FILE`, or
 * `~/.config/temporalio/temporal.toml`), read with `@temporalio/envconfig`.
 */
export function resolveConnection(inputs: ConnectionInputs): ResolvedConnection {
  const env = inputs.env ?? process.env;
  const layers: Array<{ source: SettingSource; profile: ClientConfigProfile; taskQueue?: string }> = [
    {
      source: 'flag',
      profile: {
        ...(inputs.flags?.address ? { address: inputs.flags.address } : {}),
        ...(inputs.flags?.namespace ? { namespace: inputs.flags.namespace } : {}),
      },
      ...(inputs.flags?.taskQueue ? { taskQueue: inputs.flags.taskQueue } : {}),
    },
    {
      source: 'environment',
      profile: loadClientConfigProfile({ disableFile: true, overrideEnvVars: definedOnly(env) }),
      ...(env['TOOLGATE_TASK_QUEUE'] ? { taskQueue: env['TOOLGATE_TASK_QUEUE'] } : {}),
    },
    {
      source: 'config file',
      profile: profileOfConfig(inputs.config?.connection),
      ...(inputs.config?.taskQueue ? { taskQueue: inputs.config.taskQueue } : {}),
    },
    { source: 'Temporal profile', profile: temporalProfile(env) },
    {
      source: 'endpoint file',
      profile: {
        ...(inputs.endpointFile?.address ? { address: inputs.endpointFile.address } : {}),
        ...(inputs.endpointFile?.namespace ? { namespace: inputs.endpointFile.namespace } : {}),
      },
      ...(inputs.endpointFile?.taskQueue ? { taskQueue: inputs.endpointFile.taskQueue } : {}),
    },
  ];
  const first = <K extends keyof ClientConfigProfile>(key: K) =>
    layers.find((layer) => layer.profile[key] !== undefined && layer.profile[key] !== '');
  const addressLayer = first('address');
  const namespaceLayer = first('namespace');
  const taskQueueLayer = layers.find((layer) => layer.taskQueue);
  const merged: ClientConfigProfile = {};
  for (const key of ['address', 'namespace', 'apiKey', 'tls', 'grpcMeta'] as const) {
    const layer = first(key);
    if (layer) Object.assign(merged, { [key]: layer.profile[key] });
  }
  const options: ClientConnectConfig = toClientOptions(merged);
  return {
    ...(merged.address ? { address: merged.address } : {}),
    namespace: merged.namespace ?? 'default',
    taskQueue: taskQueueLayer?.taskQueue ?? defaultTaskQueue,
    connectionOptions: merged.address ? (options.connectionOptions as Record<string, unknown>) : {},
    sources: {
      ...(addressLayer ? { address: addressLayer.source } : {}),
      namespace: namespaceLayer?.source ?? 'default',
      taskQueue: taskQueueLayer?.source ?? 'default',
    },
  };
}

/** The data directory: `--data-dir`, then TOOLGATE_DATA_DIR, then the config file's, then `.toolgate`. */
export function resolveDataDir(
  flag: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
  configured?: string,
  cwd = process.cwd(),
): string {
  return resolve(cwd, flag ?? (env['TOOLGATE_DATA_DIR'] || undefined) ?? configured ?? '.toolgate');
}

function definedOnly(env: NodeJS.ProcessEnv): Record<string, string> {
  return Object.fromEntries(
    Object.entries(env).filter(
      (entry): entry is [string, string] => typeof entry[1] === 'string' && entry[1] !== '',
    ),
  );
}

function profileOfConfig(connection: ConnectionConfig | undefined): ClientConfigProfile {
  if (!connection) return {};
  return {
    ...(connection.address ? { address: connection.address } : {}),
    ...(connection.namespace ? { namespace: connection.namespace } : {}),
    ...(connection.apiKey ? { apiKey: connection.apiKey } : {}),
    ...(connection.tls !== undefined ? { tls: { disabled: !connection.tls } } : {}),
  };
}

/**
 * Temporal's profile file, when one is named (TEMPORAL_PROFILE, TEMPORAL_CONFIG_FILE) or sits at
 * its default place; its environment overrides are the environment layer's, so they are not read
 * here.
 */
function temporalProfile(env: NodeJS.ProcessEnv): ClientConfigProfile {
  const configHome = env['XDG_CONFIG_HOME'] || join(env['HOME'] || homedir(), '.config');
  const named = env['TEMPORAL_CONFIG_FILE'];
  const file = named || join(configHome, 'temporalio', 'temporal.toml');
  if (!existsSync(file)) {
    if (named) throw new Error(`TEMPORAL_CONFIG_FILE names ${named}, which does not exist.`);
    if (env['TEMPORAL_PROFILE']) {
      throw new Error(
        `TEMPORAL_PROFILE is ${env['TEMPORAL_PROFILE']}, but there is no Temporal config file at ${file} (set TEMPORAL_CONFIG_FILE).`,
      );
    }
    return {};
  }
  try {
    return loadClientConfigProfile({
      disableEnv: true,
      configSource: { path: file },
      ...(env['TEMPORAL_PROFILE'] ? { profile: env['TEMPORAL_PROFILE'] } : {}),
    });
  } catch (error) {
    throw new Error(
      `The Temporal config file ${file} cannot be used: ${error instanceof Error ? error.message : String(error)}.`,
      { cause: error },
    );
  }
}
