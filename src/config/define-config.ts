import type { CompensationImplementation, ToolImplementation } from '../../activities/tool-implementation.ts';
import type { ToolCatalog } from '../contracts/define-tool.ts';
import type { AllowlistPolicy } from '../policy/allowlist.ts';
import type { QuotaPolicy } from '../policy/quotas.ts';
import type { BreakerSettings } from '../policy/scope-state.ts';

/** What a config's `tools` and `compensations` functions are given. */
export interface ToolContext {
  /** The data directory the command runs with (absolute). */
  readonly dataDir: string;
}

/** Implementations, given directly or built when a worker starts (for tools that need the data dir). */
export type Provided<T> = readonly T[] | ((context: ToolContext) => readonly T[] | Promise<readonly T[]>);

/**
 * One person who may decide approvals. Contracts name approvers (`alice`) or roles (`role:finance`);
 * this registry says who holds which role. `publicKey` names the PEM file of the approver's own
 * signing key, relative to the config file.
 */
export interface ApproverEntry {
  readonly name: string;
  readonly roles?: readonly string[];
  readonly publicKey?: string;
}

/** How to reach Temporal. Flags and TEMPORAL_* variables override it; it overrides a profile. */
export interface ConnectionConfig {
  /** `host:port` of the Temporal frontend. */
  readonly address?: string;
  readonly namespace?: string;
  /** An API key (Temporal Cloud). Prefer TEMPORAL_API_KEY to keep it out of files. */
  readonly apiKey?: string;
  /** Connect with TLS (the system's roots). */
  readonly tls?: boolean;
}

/** Everything a toolgate command needs, in one file: `toolgate.config.ts` (or `.js`/`.mjs`). */
export interface ToolgateConfig {
  /** The contracts: `createCatalog([...])` from `toolgate/contracts`. */
  readonly catalog: ToolCatalog;
  /**
   * The implementations, one per tool of the catalog, or a function that builds them for the data
   * directory. Workers (`toolgate dev`, `toolgate worker`) need them; client commands do not call
   * the function.
   */
  readonly tools?: Provided<ToolImplementation>;
  /** Compensations of reversible tools, likewise. */
  readonly compensations?: Provided<CompensationImplementation>;
  /**
   * The workflows module (a path relative to this file, or a URL): it exports `toolCall` built
   * with `createToolCallWorkflow(catalog)`, and `toolUndo` if a tool is reversible.
   */
  readonly workflows: string | URL;
  /** Deny by default: the tools that may run, for every tenant, or per tenant as well. */
  readonly allow: readonly string[] | AllowlistPolicy;
  /** Who may approve, with their roles. */
  readonly approvers?: readonly ApproverEntry[];
  /**
   * Concurrency and rate limits per tool and per tenant, kept in the cluster by each scope's
   * admission entity, so they hold across workers and restarts (docs/design.md, "Admission").
   */
  readonly quotas?: QuotaPolicy;
  /** A circuit breaker per tool, by tool name, kept in the cluster likewise. */
  readonly breakers?: Readonly<Record<string, BreakerSettings>>;
  /** The task queue the workers poll. Default `toolgate`. */
  readonly taskQueue?: string;
  /**
   * How long a stopping worker lets running tools finish, in ms. Default: the longest tool deadline
   * plus 2 s (at least 5 s). A deploy's stop grace must be longer (docs/operators.md, "Deploys").
   */
  readonly drainGraceMs?: number;
  readonly connection?: ConnectionConfig;
  /** Where state lives (the dev server's database, approval keys, tools' files). Default `.toolgate`. */
  readonly dataDir?: string;
}

/**
 * Declares a toolgate config. The file exports it as its default:
 *
 * ```ts
 * import { defineConfig } from 'toolgate/config';
 * import { catalog } from './src/contracts.ts';
 * import { refundOrderTool } from './src/tools.ts';
 *
 * export default defineConfig({
 *   catalog,
 *   tools: [refundOrderTool],
 *   workflows: './src/workflows.ts',
 *   allow: ['refund_order'],
 * });
 * ```
 */
export function defineConfig(config: ToolgateConfig): ToolgateConfig {
  return config;
}
