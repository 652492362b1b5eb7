import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { type ClientConnectConfig, loadClientConnectConfig } from '@temporalio/envconfig';

/** The task queue toolgate workers poll unless told otherwise. */
export const defaultTaskQueue = 'toolgate';

/**
 * Whether the environment names an existing cluster: `TEMPORAL_ADDRESS`, a `TEMPORAL_PROFILE`, or a
 * Temporal config file (`TEMPORAL_CONFIG_FILE` or the default location).
 */
export function externalClusterRequested(env: NodeJS.ProcessEnv = process.env): boolean {
  if (env['TEMPORAL_ADDRESS'] || env['TEMPORAL_PROFILE'] || env['TEMPORAL_CONFIG_FILE']) return true;
  const configHome = env['XDG_CONFIG_HOME'] ?? join(homedir(), '.config');
  return existsSync(join(configHome, 'temporalio', 'temporal.toml'));
}

/**
 * Connection settings for an existing cluster, from the environment and Temporal's profile files,
 * through `@temporalio/envconfig` so toolgate reads them exactly like Temporal's own tools do.
 */
export function loadExternalClusterConfig(env: NodeJS.ProcessEnv = process.env): ClientConnectConfig {
  const config = loadClientConnectConfig({
    ...(env['TEMPORAL_PROFILE'] ? { profile: env['TEMPORAL_PROFILE'] } : {}),
    overrideEnvVars: env as Record<string, string>,
  });
  return { ...config, namespace: config.namespace ?? env['TEMPORAL_NAMESPACE'] ?? 'default' };
}
