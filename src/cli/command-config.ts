import { ToolgateUsageError } from '../client/toolgate-client.ts';
import {
  ConfigError,
  findConfigFile,
  type LoadedConfig,
  loadConfig,
  noConfigMessage,
} from '../config/load-config.ts';
import { modulePath } from '../support/module-path.ts';

/** The bundled examples' config, which `--example` runs. A path, loaded like any user's config. */
export const exampleConfigFile = modulePath('../../examples/toolgate.config', import.meta.url);

/**
 * The config a command runs with: the bundled examples' with `--example`, else `--config <file>`,
 * else TOOLGATE_CONFIG, else `toolgate.config.*` in the working folder. Without one the command
 * stops and says how to make one.
 */
export async function loadCommandConfig(
  flags: { readonly config?: string; readonly example?: boolean },
  cwd = process.cwd(),
  env: NodeJS.ProcessEnv = process.env,
): Promise<LoadedConfig> {
  if (flags.example && flags.config !== undefined) {
    throw new ToolgateUsageError('Give --config or --example, not both.');
  }
  const named = flags.config ?? (env['TOOLGATE_CONFIG'] || undefined);
  const file = flags.example ? exampleConfigFile : findConfigFile(named, cwd);
  if (!file) throw new ConfigError(noConfigMessage(cwd));
  return loadConfig(file);
}
