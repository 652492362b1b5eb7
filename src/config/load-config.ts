import { existsSync, statSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import * as z from 'zod';
import type { CompensationImplementation, ToolImplementation } from '../../activities/tool-implementation.ts';
import type { ToolCatalog } from '../contracts/define-tool.ts';
import { ConfigError } from '../contracts/errors.ts';
import { sideEffectTiers } from '../contracts/tier.ts';
import type { AllowlistPolicy } from '../policy/allowlist.ts';
import { normalizeName } from '../policy/approver-names.ts';
import type { QuotaPolicy } from '../policy/quotas.ts';
import type { BreakerSettings } from '../policy/scope-state.ts';
import type { ApproverEntry, ConnectionConfig, Provided, ToolgateConfig } from './define-config.ts';

export { ConfigError };

/** The names a config file may have, looked for in this order in the working folder. */
export const configFileNames = [
  'toolgate.config.ts',
  'toolgate.config.mts',
  'toolgate.config.js',
  'toolgate.config.mjs',
] as const;

/** A config file, checked, with its paths made absolute. */
export interface LoadedConfig {
  /** The file it came from. */
  readonly file: string;
  readonly catalog: ToolCatalog;
  readonly tools?: Provided<ToolImplementation>;
  readonly compensations?: Provided<CompensationImplementation>;
  readonly workflowsPath: string;
  readonly policy: AllowlistPolicy;
  readonly approvers?: readonly ApproverEntry[];
  readonly quotas?: QuotaPolicy;
  readonly breakers?: Readonly<Record<string, BreakerSettings>>;
  readonly taskQueue?: string;
  readonly drainGraceMs?: number;
  readonly connection?: ConnectionConfig;
  readonly dataDir?: string;
}

/**
 * The config file a command uses: `explicit` (from `--config` or TOOLGATE_CONFIG) when given, else
 * the first of `configFileNames` in `cwd`, else none.
 */
export function findConfigFile(explicit: string | undefined, cwd: string): string | undefined {
  if (explicit !== undefined) {
    const file = resolve(cwd, explicit);
    if (!existsSync(file)) throw new ConfigError(`The config file ${file} does not exist.`);
    if (!statSync(file).isFile()) throw new ConfigError(`The config file ${file} is not a file.`);
    return file;
  }
  return configFileNames.map((name) => join(cwd, name)).find((file) => existsSync(file));
}

/** What to say when a command needs a config and there is none. */
export function noConfigMessage(cwd: string): string {
  return `No toolgate config in ${cwd} (looked for ${configFileNames.join(', ')}). Create one with \`toolgate init\`, name one with --config <file>, or run the bundled examples with --example.`;
}

/** Imports a config file and checks it; every problem names the file and the field. */
export async function loadConfig(file: string): Promise<LoadedConfig> {
  let module: { default?: unknown };
  try {
    module = (await import(pathToFileURL(file).href)) as { default?: unknown };
  } catch (error) {
    throw new ConfigError(describeImportFailure(file, error), { cause: error });
  }
  if (module.default === undefined) {
    throw new ConfigError(
      `${file} has no default export: end it with \`export default defineConfig({ ... })\` (defineConfig comes from 'toolgate/config').`,
    );
  }
  return checkConfig(module.default, file);
}

function describeImportFailure(file: string, error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  const message = (error instanceof Error ? error.message : String(error)).replace(/[.\s]*$/, '');
  if (code === 'ERR_UNKNOWN_FILE_EXTENSION') {
    return `Cannot load ${file}: this Node.js (${process.version}) does not strip TypeScript types. Use Node.js >= 22.18, or write the config as toolgate.config.js.`;
  }
  if (code === 'ERR_UNSUPPORTED_TYPESCRIPT_SYNTAX' || code === 'ERR_INVALID_TYPESCRIPT_SYNTAX') {
    return `Cannot load ${file}: ${message}. Node.js runs TypeScript by erasing types, so the config and what it imports may use only erasable syntax (no enums, namespaces or parameter properties) and must import other .ts files with their .ts extension.`;
  }
  if (code === 'ERR_MODULE_NOT_FOUND' || code === 'ERR_PACKAGE_PATH_NOT_EXPORTED') {
    return `Cannot load ${file}: ${message}. Check the import paths in it (relative imports of .ts files keep their extension), and that toolgate is installed in this project (npm install toolgate).`;
  }
  return `Cannot load ${file}: ${message}.`;
}

const isFunction = (value: unknown): value is (...args: never[]) => unknown => typeof value === 'function';

const contractSchema = z.looseObject({
  name: z.string(),
  description: z.string(),
  tier: z.enum(sideEffectTiers as [string, ...string[]]),
  timeoutMs: z.number(),
});

const implementationSchema = z.looseObject({
  contract: z.looseObject({ name: z.string() }),
  execute: z.custom<ToolImplementation['execute']>(isFunction, 'must be a function'),
});

const compensationSchema = z.looseObject({
  name: z.string(),
  execute: z.custom<CompensationImplementation['execute']>(isFunction, 'must be a function'),
});

const provided = <Schema extends z.ZodType>(item: Schema) =>
  z.union([z.array(item), z.custom<(...args: never[]) => unknown>(isFunction)], {
    error: 'must be an array of implementations, or a function that returns one',
  });

const nameSchema = z.string().trim().min(1).max(128);

/** One scope's limits: at most so many at once, and at most so many per window. */
const quotaLimitSchema = z.strictObject({
  maxConcurrent: z.number().int().min(0).max(100_000).optional(),
  maxPerWindow: z.number().int().min(0).max(1_000_000).optional(),
  windowMs: z.number().int().min(1).max(86_400_000).optional(),
});

const configSchema = z.strictObject({
  catalog: z.record(z.string(), contractSchema, {
    error: 'must be the catalog: createCatalog([...]) from toolgate/contracts',
  }),
  tools: provided(implementationSchema).optional(),
  compensations: provided(compensationSchema).optional(),
  workflows: z.union([z.string().min(1), z.instanceof(URL)], {
    error: 'must name the workflows module, e.g. "./src/workflows.ts"',
  }),
  allow: z.union(
    [
      z.array(z.string()),
      z.strictObject({
        allow: z.array(z.string()),
        tenants: z.record(z.string(), z.array(z.string())).optional(),
      }),
    ],
    {
      error:
        'must list the tools that may run: ["tool_a", ...], or { allow: [...], tenants: { acme: [...] } }',
    },
  ),
  approvers: z
    .array(
      z.strictObject({
        name: nameSchema,
        roles: z.array(z.string().trim().min(1).max(64)).max(32).optional(),
        publicKey: z.string().min(1).optional(),
      }),
    )
    .optional(),
  quotas: z
    .strictObject({
      perTool: z.record(z.string(), quotaLimitSchema).optional(),
      perTenant: z.record(z.string(), quotaLimitSchema).optional(),
      defaultPerTool: quotaLimitSchema.optional(),
      defaultPerTenant: quotaLimitSchema.optional(),
      concurrencyRetryAfterSeconds: z.number().int().min(1).max(3_600).optional(),
    })
    .optional(),
  breakers: z
    .record(
      z.string(),
      z.strictObject({
        failureThreshold: z.number().int().min(1).max(1_000).optional(),
        cooldownMs: z.number().int().min(100).max(86_400_000).optional(),
      }),
    )
    .optional(),
  taskQueue: z.string().trim().min(1).max(200).optional(),
  drainGraceMs: z.number().int().min(1_000).max(86_400_000).optional(),
  connection: z
    .strictObject({
      address: z
        .string()
        .regex(/^[^\s:/]+:\d{1,5}$/, 'must be host:port, e.g. "temporal.internal:7233"')
        .optional(),
      namespace: z.string().trim().min(1).max(255).optional(),
      apiKey: z.string().min(1).optional(),
      tls: z.boolean().optional(),
    })
    .optional(),
  dataDir: z.string().min(1).optional(),
});

/** A field's path as it reads in the config, e.g. `tools[2].execute` or `connection.address`. */
function fieldName(path: readonly PropertyKey[]): string {
  let text = '';
  for (const part of path) {
    text += typeof part === 'number' ? `[${part}]` : `${text ? '.' : ''}${String(part)}`;
  }
  return text || '(the default export)';
}

/** Checks a config value (a default export); `file` is where it came from, for messages and paths. */
export function checkConfig(value: unknown, file: string): LoadedConfig {
  const parsed = configSchema.safeParse(value);
  if (!parsed.success) {
    const lines = parsed.error.issues.slice(0, 5).map((issue) => {
      if (issue.code === 'unrecognized_keys') {
        return `${fieldName(issue.path)}: unknown field${issue.keys.length > 1 ? 's' : ''} ${issue.keys.join(', ')} (fields: ${Object.keys(configSchema.shape).join(', ')})`;
      }
      return `${fieldName(issue.path)}: ${issue.message}`;
    });
    throw new ConfigError(`${file} is not a valid toolgate config:\n  ${lines.join('\n  ')}`);
  }
  const config = value as ToolgateConfig;
  const problem = (field: string, message: string): never => {
    throw new ConfigError(`${file} is not a valid toolgate config:\n  ${field}: ${message}`);
  };
  for (const [key, contract] of Object.entries(config.catalog)) {
    if (contract.name !== key) {
      problem(
        `catalog.${key}`,
        `holds the contract of ${contract.name}; build the catalog with createCatalog([...])`,
      );
    }
  }
  const policy: AllowlistPolicy = Array.isArray(config.allow)
    ? { allow: config.allow as readonly string[] }
    : (config.allow as AllowlistPolicy);
  const known = Object.keys(config.catalog);
  const listed: Array<[string, readonly string[]]> = [
    ['allow', policy.allow],
    ...Object.entries(policy.tenants ?? {}).map(
      ([tenant, names]) => [`allow.tenants.${tenant}`, names] as [string, readonly string[]],
    ),
  ];
  for (const [field, names] of listed) {
    names.forEach((name, index) => {
      if (!Object.hasOwn(config.catalog, name)) {
        problem(
          `${field}[${index}]`,
          `${JSON.stringify(name)} is not a tool of the catalog (its tools: ${known.join(', ') || 'none'})`,
        );
      }
    });
  }
  checkLoadGateTools(config, known, problem);
  const directory = dirname(file);
  const workflowsPath =
    config.workflows instanceof URL ? fileURLToPath(config.workflows) : resolve(directory, config.workflows);
  if (!existsSync(workflowsPath)) {
    problem(
      'workflows',
      `${workflowsPath} does not exist; it must export toolCall = createToolCallWorkflow(catalog)`,
    );
  }
  const approvers = config.approvers?.map((approver) => ({
    name: approver.name.trim(),
    roles: (approver.roles ?? []).map((role) => role.trim()),
    ...(approver.publicKey !== undefined ? { publicKey: resolve(directory, approver.publicKey) } : {}),
  }));
  const seen = new Map<string, number>();
  approvers?.forEach((approver, index) => {
    const key = normalizeName(approver.name);
    const earlier = seen.get(key);
    if (earlier !== undefined) {
      problem(
        `approvers[${index}].name`,
        `${JSON.stringify(config.approvers?.[index]?.name)} is approvers[${earlier}] again (names compare without case or surrounding spaces)`,
      );
    }
    seen.set(key, index);
  });
  return {
    file,
    catalog: config.catalog,
    ...(config.tools !== undefined ? { tools: config.tools } : {}),
    ...(config.compensations !== undefined ? { compensations: config.compensations } : {}),
    workflowsPath,
    policy,
    ...(approvers ? { approvers } : {}),
    ...(config.quotas ? { quotas: config.quotas } : {}),
    ...(config.breakers ? { breakers: config.breakers } : {}),
    ...(config.taskQueue !== undefined ? { taskQueue: config.taskQueue.trim() } : {}),
    ...(config.drainGraceMs !== undefined ? { drainGraceMs: config.drainGraceMs } : {}),
    ...(config.connection ? { connection: config.connection } : {}),
    ...(config.dataDir !== undefined
      ? { dataDir: isAbsolute(config.dataDir) ? config.dataDir : resolve(directory, config.dataDir) }
      : {}),
  };
}

/** Quotas and breakers name tools of the catalog; a typo would silently limit nothing. */
function checkLoadGateTools(
  config: ToolgateConfig,
  known: readonly string[],
  problem: (field: string, message: string) => never,
): void {
  const named: Array<[string, readonly string[]]> = [
    ['quotas.perTool', Object.keys(config.quotas?.perTool ?? {})],
    ['breakers', Object.keys(config.breakers ?? {})],
  ];
  for (const [field, names] of named) {
    for (const name of names) {
      if (!known.includes(name)) {
        problem(
          `${field}.${name}`,
          `${JSON.stringify(name)} is not a tool of the catalog (its tools: ${known.join(', ') || 'none'})`,
        );
      }
    }
  }
}
