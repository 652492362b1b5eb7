import { z } from 'zod';
import { defaultMaximumAttempts, SideEffectTier } from './tier.ts';

/** Retry settings a contract may override. Irreversible and approval tiers always run once. */
export interface ToolRetryOptions {
  readonly maximumAttempts?: number;
  readonly initialIntervalMs?: number;
  readonly backoffCoefficient?: number;
  readonly maximumIntervalMs?: number;
}

export interface ToolApprovalSettings<Input> {
  /**
   * Who may decide: a principal name, or `role:<name>` to match any approver holding that role in
   * their signed identity.
   */
  readonly approvers: readonly string[];
  /** How long the call waits for a decision before it ends APPROVAL_EXPIRED. */
  readonly expiresAfterMs: number;
  /** A human-readable preview of the effect, shown to the approver. Pure code. */
  readonly preview?: (input: Input) => string;
  /**
   * Whether these validated arguments need a human at all (default: every call does), e.g.
   * `(input) => input.amountCents > 100_000`. Pure code. The worker decides it where it validates the
   * arguments, and the answer is recorded in the call's history, so a replay takes the same branch
   * (calls of gate protocol 3; older calls always wait). A function that throws means a human is
   * needed. A call that needs none still keeps the tier's other rules: it runs once, with its key.
   */
  readonly when?: (input: Input) => boolean;
  /**
   * How many distinct approvers must approve (default 1): M of those `approvers` names. Each
   * person counts once, whatever the spelling of their name; one rejection ends the call. Recorded
   * with the admission (gate protocol 3), so a replay waits for the number the call waited for.
   */
  readonly quorum?: number;
}

export interface ToolContract<Schema extends z.ZodType = z.ZodType> {
  readonly name: string;
  readonly description: string;
  readonly input: Schema;
  readonly output?: z.ZodType;
  readonly tier: SideEffectTier;
  /** The executor's deadline for one attempt. */
  readonly timeoutMs: number;
  readonly retry: Required<ToolRetryOptions>;
  readonly approval?: ToolApprovalSettings<z.output<Schema>>;
  /** For the reversible tier: the name of the implementation that undoes a succeeded call. */
  readonly compensation?: string;
  /** Derives a business idempotency key from valid input, e.g. an invoice number. */
  readonly idempotencyKey?: (input: z.output<Schema>) => string;
  /** Readonly tools may run as a local activity: faster, but without heartbeats. */
  readonly fastPath: boolean;
}

export interface DefineToolOptions<Schema extends z.ZodType> {
  readonly name: string;
  readonly description: string;
  /**
   * The arguments' schema: a `z.strictObject(...)`, or a function that builds it. A function is
   * called the first time the schema is needed, then never again. Use it in large catalogs: every
   * workflow evaluates the catalog's module anew, so eager schemas cost every call the building of
   * every tool's schema, where a lazy one costs only the tool called.
   */
  readonly input: Schema | (() => Schema);
  readonly output?: z.ZodType;
  readonly tier: SideEffectTier;
  readonly timeoutMs: number;
  readonly retry?: ToolRetryOptions;
  readonly approval?: ToolApprovalSettings<z.output<Schema>>;
  readonly compensation?: string;
  readonly idempotencyKey?: (input: z.output<Schema>) => string;
  readonly fastPath?: boolean;
}

const toolNamePattern = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/;

/**
 * Declares a tool's contract: workflow-safe, so it holds only zod and pure code. Workflows import
 * contracts; implementations live on the activity side. Mistakes in a contract are programming
 * errors and throw at definition time, never at call time.
 */
export function defineTool<Schema extends z.ZodType>(
  options: DefineToolOptions<Schema>,
): ToolContract<Schema> {
  if (!toolNamePattern.test(options.name)) {
    throw new TypeError(
      `Tool name ${JSON.stringify(options.name)} is invalid: use 1-64 letters, digits, _ or -, starting with a letter.`,
    );
  }
  const input = inputSchema(options.name, options.input);
  const problem = settingsProblem(options);
  if (problem) throw new TypeError(`Tool ${options.name}: ${problem}`);
  const tier = options.tier;
  const contract = {
    name: options.name,
    description: options.description,
    ...(options.output ? { output: options.output } : {}),
    tier,
    timeoutMs: options.timeoutMs,
    retry: retrySettings(tier, options.retry),
    ...(options.approval ? { approval: options.approval } : {}),
    ...(options.compensation ? { compensation: options.compensation } : {}),
    ...(options.idempotencyKey ? { idempotencyKey: options.idempotencyKey } : {}),
    fastPath: options.fastPath ?? false,
  };
  Object.defineProperty(contract, 'input', { get: input, enumerable: true });
  return Object.freeze(contract) as ToolContract<Schema>;
}

/** What is wrong with a contract's timeout, tier and the settings that depend on the tier, if anything. */
function settingsProblem<Schema extends z.ZodType>(options: DefineToolOptions<Schema>): string | undefined {
  const tier = options.tier;
  if (!Number.isInteger(options.timeoutMs) || options.timeoutMs <= 0) {
    return 'timeoutMs must be a positive integer.';
  }
  if (!Object.hasOwn(SideEffectTier, tier)) return `unknown tier ${tier}.`;
  if (tier === SideEffectTier.approval && !options.approval) {
    return 'the approval tier needs approval settings (approvers, expiresAfterMs).';
  }
  if (options.approval?.when !== undefined && typeof options.approval.when !== 'function') {
    return 'approval.when must be a function of the validated arguments that returns true when a human must decide.';
  }
  const quorum = options.approval?.quorum;
  if (quorum !== undefined && (!Number.isInteger(quorum) || quorum < 1 || quorum > 20)) {
    return 'approval.quorum must be a whole number of approvers from 1 to 20.';
  }
  if (options.approval && options.approval.approvers.length === 0) {
    return 'approval settings need at least one approver.';
  }
  if (options.compensation !== undefined && tier !== SideEffectTier.reversible) {
    return 'only reversible tools have a compensation.';
  }
  if (options.fastPath && tier !== SideEffectTier.readonly) {
    return 'only readonly tools may take the local-activity fast path.';
  }
  return undefined;
}

function retrySettings(
  tier: SideEffectTier,
  retry: ToolRetryOptions | undefined,
): Required<ToolRetryOptions> {
  const retrySafe = tier === SideEffectTier.readonly || tier === SideEffectTier.reversible;
  const requestedAttempts = retry?.maximumAttempts ?? defaultMaximumAttempts(tier);
  return {
    // The tier caps retries: an irreversible action gets exactly one attempt whatever is asked.
    maximumAttempts: retrySafe ? Math.max(1, requestedAttempts) : 1,
    initialIntervalMs: retry?.initialIntervalMs ?? 200,
    backoffCoefficient: retry?.backoffCoefficient ?? 2,
    maximumIntervalMs: retry?.maximumIntervalMs ?? 5_000,
  };
}

/**
 * The schema's getter. An eager schema is checked here, at definition time. A lazy one is built and
 * checked on first use; a mistake in it throws then, every time, with the same message (a
 * client checks every contract of its catalog when it is constructed; inside a workflow the
 * validation gate turns the throw into an INVALID_INPUT denial).
 */
function inputSchema<Schema extends z.ZodType>(name: string, input: Schema | (() => Schema)): () => Schema {
  const check = (schema: unknown): Schema => {
    if (!(schema instanceof z.ZodObject)) {
      throw new TypeError(
        `Tool ${name}: input must be a z.strictObject(...) schema${typeof input === 'function' ? ', or a function that returns one' : ''}.`,
      );
    }
    return schema as unknown as Schema;
  };
  if (typeof input !== 'function') {
    const schema = check(input);
    return () => schema;
  }
  let built: Schema | undefined;
  return () => {
    built ??= check(input());
    return built;
  };
}

/**
 * Checks arguments against a contract's schema, and never throws: a schema that throws (a lazy one
 * that fails to build, a refinement with a bug) comes back as `thrown`. Every gate that validates
 * goes through here, in the workflow and in the client's key derivation alike.
 */
export function checkInput(
  contract: ToolContract,
  input: unknown,
): z.ZodSafeParseResult<unknown> | { readonly success: false; readonly thrown: unknown } {
  try {
    // The schema is read inside the `try` too: a lazy schema is built on its first read.
    return contract.input.safeParse(input);
  } catch (thrown) {
    return { success: false, thrown };
  }
}

/** Builds every lazy schema of a catalog now, so that a mistake in one throws at start-up. */
export function checkCatalogSchemas(catalog: ToolCatalog): void {
  for (const contract of Object.values(catalog)) void contract.input;
}

/** A set of contracts, looked up by own property only, because the name comes from the model. */
export type ToolCatalog = Readonly<Record<string, ToolContract>>;

export function createCatalog(contracts: readonly ToolContract[]): ToolCatalog {
  const catalog: Record<string, ToolContract> = Object.create(null);
  for (const contract of contracts) {
    if (Object.hasOwn(catalog, contract.name)) throw new TypeError(`Tool ${contract.name} is defined twice.`);
    catalog[contract.name] = contract;
  }
  return Object.freeze(catalog);
}

/** Exact, own-property lookup: `__proto__`, `constructor` or a look-alike name finds nothing. */
export function lookupTool(catalog: ToolCatalog, name: unknown): ToolContract | undefined {
  if (typeof name !== 'string') return undefined;
  return Object.hasOwn(catalog, name) ? catalog[name] : undefined;
}
