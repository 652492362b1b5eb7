import type { CompensationImplementation, ToolImplementation } from '../../activities/tool-implementation.ts';
import { ConfigError, type LoadedConfig } from './load-config.ts';

/** The implementations a worker registers, checked against the catalog. */
export interface ConfiguredTools {
  readonly tools: readonly ToolImplementation[];
  readonly compensations: readonly CompensationImplementation[];
}

/**
 * Builds the config's implementations for a data directory and checks them against its catalog
 * before anything starts: every tool has exactly one implementation of its own contract, every
 * implementation belongs to a tool of the catalog, and every compensation a contract names exists.
 * A worker that started without them would only fail at the tool's first call.
 */
export async function configuredTools(config: LoadedConfig, dataDir: string): Promise<ConfiguredTools> {
  const problem = (message: string): never => {
    throw new ConfigError(`${config.file}: ${message}`);
  };
  if (config.tools === undefined) {
    problem('`tools` is missing: a worker needs the implementations of the catalog’s tools.');
  }
  const build = async <T>(field: string, value: LoadedConfig['tools'] | LoadedConfig['compensations']) => {
    if (value === undefined) return [] as T[];
    try {
      const built = typeof value === 'function' ? await value({ dataDir }) : value;
      if (!Array.isArray(built)) problem(`\`${field}\` returned ${typeof built}, not an array.`);
      return [...built] as T[];
    } catch (error) {
      if (error instanceof ConfigError) throw error;
      throw new ConfigError(
        `${config.file}: \`${field}\` failed: ${error instanceof Error ? error.message : String(error)}`,
        { cause: error },
      );
    }
  };
  const tools = await build<ToolImplementation>('tools', config.tools);
  const compensations = await build<CompensationImplementation>('compensations', config.compensations);
  const implemented = new Map<string, ToolImplementation>();
  for (const tool of tools) {
    const name = tool.contract.name;
    if (!Object.hasOwn(config.catalog, name)) {
      problem(
        `the implementation of ${name} has no contract in the catalog; add it to createCatalog([...]) or remove the implementation.`,
      );
    }
    if (config.catalog[name] !== tool.contract) {
      problem(
        `the implementation of ${name} was built from another contract than the catalog's; build both from the same defineTool(...) value.`,
      );
    }
    if (implemented.has(name)) problem(`${name} has two implementations.`);
    implemented.set(name, tool);
  }
  const missing = Object.keys(config.catalog).filter((name) => !implemented.has(name));
  if (missing.length > 0) {
    problem(
      `no implementation for ${missing.join(', ')}: add ${missing.length > 1 ? 'them' : 'it'} to \`tools\`.`,
    );
  }
  const compensationNames = new Set(compensations.map((compensation) => compensation.name));
  for (const contract of Object.values(config.catalog)) {
    if (contract.compensation && !compensationNames.has(contract.compensation)) {
      problem(
        `${contract.name} names the compensation ${contract.compensation}, which is not in \`compensations\`.`,
      );
    }
  }
  return { tools, compensations };
}
