import type { Tool as AnthropicTool } from '@anthropic-ai/sdk/resources/messages';
import type { ChatCompletionFunctionTool } from 'openai/resources/chat/completions';
import type { FunctionTool as ResponsesFunctionTool } from 'openai/resources/responses/responses';
import { z } from 'zod';
import type { ToolCatalog, ToolContract } from '../contracts/define-tool.ts';

/** A JSON Schema object, as handed to a model API. */
export type JsonSchema = { [keyword: string]: unknown };

/**
 * Constraint keywords that OpenAI strict mode or Anthropic strict tool use refuse or handle
 * unevenly. They are moved out of the schema into the field's description: the model still reads
 * them, and the zod validation gate still enforces them, so nothing is lost by not sending them.
 */
const movedToDescription = [
  'minLength',
  'maxLength',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'multipleOf',
  'minItems',
  'maxItems',
  'uniqueItems',
] as const;

/** Keywords neither strict mode can express. A contract using them is not strict-compatible. */
const unsupportedKeywords = [
  'allOf',
  'oneOf',
  'not',
  'if',
  'then',
  'else',
  'patternProperties',
  'propertyNames',
  'unevaluatedProperties',
  'unevaluatedItems',
  'dependentRequired',
  'dependentSchemas',
  'prefixItems',
  'contains',
  'minProperties',
  'maxProperties',
  '$ref',
] as const;

const knownTypes = new Set(['string', 'number', 'integer', 'boolean', 'object', 'array', 'null']);
/** OpenAI strict mode allows 10 levels of nesting; staying inside it keeps both APIs happy. */
const maximumNesting = 10;

/** Options shared by the definition builders. */
export interface ToolDefinitionOptions {
  /**
   * Send the `strict` flag (default true). The schema is in strict form either way; turn the flag
   * off for providers that refuse large strict tool sets.
   */
  readonly strict?: boolean;
  /** Only these tools, e.g. the tenant's allowlist. Unknown names are ignored. */
  readonly include?: readonly string[];
}

/**
 * The contract's input as JSON Schema in the strict form OpenAI strict mode and Anthropic `strict`
 * accept: `additionalProperties: false` on every object, every property required (optional values
 * are `.nullable()`), and length or range constraints described in words instead of keywords.
 *
 * Throws a TypeError listing the problems when the contract cannot be expressed that way; see
 * {@link strictCompatibilityProblems}.
 */
export function strictInputSchema(contract: ToolContract): JsonSchema {
  const problems = strictCompatibilityProblems(contract);
  if (problems.length > 0) {
    throw new TypeError(`Tool ${contract.name} is not strict-compatible: ${problems.join('; ')}`);
  }
  const schema = rawInputSchema(contract) as JsonSchema;
  delete schema['$schema'];
  return toStrictForm(schema);
}

/**
 * Why a contract's input cannot be handed to a model in strict mode; empty when it can. Checked by a
 * unit test over every registered contract, so a contract that drifts fails the build, not a model
 * request.
 */
export function strictCompatibilityProblems(contract: ToolContract): string[] {
  let schema: unknown;
  try {
    schema = rawInputSchema(contract);
  } catch (error) {
    return [`its input cannot be expressed as JSON Schema (${(error as Error).message})`];
  }
  const problems: string[] = [];
  if (!isObjectSchema(schema) || schema['type'] !== 'object') {
    problems.push('the input must be an object schema');
    return problems;
  }
  inspect(schema, '(input)', 0, problems);
  return problems;
}

/** The Anthropic Messages API `tools` array for the given contracts. */
export function anthropicTools(
  contracts: ToolCatalog | readonly ToolContract[],
  options: ToolDefinitionOptions = {},
): AnthropicTool[] {
  return selectContracts(contracts, options).map((contract) => ({
    name: contract.name,
    description: modelDescription(contract),
    input_schema: strictInputSchema(contract) as AnthropicTool.InputSchema,
    ...(options.strict === false ? {} : { strict: true }),
  }));
}

/** The OpenAI Chat Completions `tools` array for the given contracts. */
export function openAIChatTools(
  contracts: ToolCatalog | readonly ToolContract[],
  options: ToolDefinitionOptions = {},
): ChatCompletionFunctionTool[] {
  return selectContracts(contracts, options).map((contract) => ({
    type: 'function',
    function: {
      name: contract.name,
      description: modelDescription(contract),
      parameters: strictInputSchema(contract),
      strict: options.strict !== false,
    },
  }));
}

/** The OpenAI Responses API `tools` array for the given contracts. */
export function openAIResponsesTools(
  contracts: ToolCatalog | readonly ToolContract[],
  options: ToolDefinitionOptions = {},
): ResponsesFunctionTool[] {
  return selectContracts(contracts, options).map((contract) => ({
    type: 'function',
    name: contract.name,
    description: modelDescription(contract),
    parameters: strictInputSchema(contract),
    strict: options.strict !== false,
  }));
}

/**
 * The description a model reads: the contract's own, plus one sentence on what the tier means for
 * the model's behaviour (approval waits, keys, no blind retries).
 */
export function modelDescription(contract: ToolContract): string {
  switch (contract.tier) {
    case 'approval':
      return `${contract.description} A human must approve each call; the result may come back as pending with a call ID. Do not call it again while it is pending.`;
    case 'irreversible':
      return `${contract.description} This action cannot be undone; do not repeat a call whose outcome is unknown.`;
    default:
      return contract.description;
  }
}

export function selectContracts(
  contracts: ToolCatalog | readonly ToolContract[],
  options: Pick<ToolDefinitionOptions, 'include'> = {},
): ToolContract[] {
  const list: ToolContract[] = Array.isArray(contracts)
    ? [...(contracts as readonly ToolContract[])]
    : Object.values(contracts as ToolCatalog);
  if (!options.include) return list;
  const wanted = new Set(options.include);
  return list.filter((contract) => wanted.has(contract.name));
}

function rawInputSchema(contract: ToolContract): unknown {
  // `io: 'input'` describes what the model must send, before any zod transform runs.
  return z.toJSONSchema(contract.input, { io: 'input', target: 'draft-2020-12', unrepresentable: 'throw' });
}

function isObjectSchema(value: unknown): value is JsonSchema {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/**
 * Collects in `problems` why `schema`, found at `where`, cannot be sent in strict form, descending
 * into its options, properties and items.
 */
function inspect(schema: unknown, where: string, depth: number, problems: string[]): void {
  if (!isObjectSchema(schema)) {
    problems.push(`${where}: not a schema object`);
    return;
  }
  if (depth > maximumNesting) {
    problems.push(`${where}: nested deeper than ${maximumNesting} levels`);
    return;
  }
  for (const keyword of unsupportedKeywords.filter((keyword) => keyword in schema)) {
    problems.push(`${where}: uses ${keyword}, which strict mode does not support`);
  }
  if (Array.isArray(schema['anyOf'])) {
    (schema['anyOf'] as unknown[]).forEach((branch, index) => {
      inspect(branch, `${where} (option ${index + 1})`, depth + 1, problems);
    });
    return;
  }
  const hasEnumeration = Array.isArray(schema['enum']) || 'const' in schema;
  if (schema['type'] === undefined && !hasEnumeration) {
    problems.push(`${where}: has no type (z.unknown() or z.any()); give it a concrete type`);
    return;
  }
  const types = Array.isArray(schema['type']) ? (schema['type'] as unknown[]) : [schema['type']];
  for (const type of types.filter((type) => type !== undefined && !knownTypes.has(String(type)))) {
    problems.push(`${where}: unknown type ${type}`);
  }
  if (types.includes('object')) inspectObject(schema, where, depth, problems);
  if (types.includes('array')) inspectArray(schema, where, depth, problems);
}

/** An object schema must be closed and list every property as required, and each property must pass. */
function inspectObject(schema: JsonSchema, where: string, depth: number, problems: string[]): void {
  if (schema['additionalProperties'] !== false) {
    problems.push(`${where}: objects must be closed; use z.strictObject (additionalProperties: false)`);
  }
  const properties = isObjectSchema(schema['properties']) ? schema['properties'] : {};
  const required = new Set(Array.isArray(schema['required']) ? (schema['required'] as string[]) : []);
  for (const [name, property] of Object.entries(properties)) {
    const path = where === '(input)' ? name : `${where}.${name}`;
    if (!required.has(name)) {
      problems.push(`${path}: is optional; strict mode needs every field required, so use .nullable()`);
    }
    inspect(property, path, depth + 1, problems);
  }
}

function inspectArray(schema: JsonSchema, where: string, depth: number, problems: string[]): void {
  if (schema['items'] === undefined) problems.push(`${where}: an array needs an items schema`);
  else inspect(schema['items'], `${where}[]`, depth + 1, problems);
}

/** Moves constraint keywords into the description, recursively, and drops defaults. */
function toStrictForm(schema: JsonSchema): JsonSchema {
  const result: JsonSchema = {};
  const constraints: string[] = [];
  for (const [keyword, value] of Object.entries(schema)) {
    if ((movedToDescription as readonly string[]).includes(keyword)) {
      constraints.push(`${keyword} ${JSON.stringify(value)}`);
    } else if (keyword === 'default') {
      // Every field is required in strict form, so a default can never apply.
    } else if (keyword === 'properties' && isObjectSchema(value)) {
      result[keyword] = Object.fromEntries(
        Object.entries(value).map(([name, property]) => [
          name,
          isObjectSchema(property) ? toStrictForm(property) : property,
        ]),
      );
    } else if (keyword === 'items' && isObjectSchema(value)) {
      result[keyword] = toStrictForm(value);
    } else if (keyword === 'anyOf' && Array.isArray(value)) {
      result[keyword] = value.map((branch) => (isObjectSchema(branch) ? toStrictForm(branch) : branch));
    } else {
      result[keyword] = value;
    }
  }
  if (constraints.length > 0) {
    const note = `(Constraints: ${constraints.join(', ')}.)`;
    result['description'] =
      typeof result['description'] === 'string' ? `${result['description']} ${note}` : note;
  }
  return result;
}
