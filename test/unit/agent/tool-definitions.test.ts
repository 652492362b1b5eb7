import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { exampleCatalog } from '../../../examples/contracts.ts';
import {
  anthropicTools,
  openAIChatTools,
  openAIResponsesTools,
  strictCompatibilityProblems,
  strictInputSchema,
} from '../../../src/agent/tool-definitions.ts';
import { defineTool } from '../../../src/contracts/define-tool.ts';

type Schema = Record<string, unknown>;

/** Walks every object schema, including the branches of anyOf and array items. */
function objectSchemas(schema: Schema): Schema[] {
  const found: Schema[] = [];
  const visit = (node: unknown) => {
    if (!node || typeof node !== 'object') return;
    const value = node as Schema;
    if (value['type'] === 'object') found.push(value);
    for (const child of Object.values((value['properties'] as Schema | undefined) ?? {})) visit(child);
    for (const branch of (value['anyOf'] as unknown[] | undefined) ?? []) visit(branch);
    visit(value['items']);
  };
  visit(schema);
  return found;
}

describe('strict compatibility of the registered contracts', () => {
  it.each(Object.values(exampleCatalog).map((contract) => [contract.name, contract] as const))(
    '%s is strict-compatible',
    (_name, contract) => {
      expect(strictCompatibilityProblems(contract)).toEqual([]);
      const schema = strictInputSchema(contract);
      for (const object of objectSchemas(schema)) {
        expect(object['additionalProperties']).toBe(false);
        expect([...((object['required'] as string[]) ?? [])].sort()).toEqual(
          Object.keys((object['properties'] as Schema) ?? {}).sort(),
        );
      }
      expect(JSON.stringify(schema)).not.toMatch(
        /"(minLength|maxLength|minimum|maximum|exclusiveMinimum|default|\$schema)"/,
      );
    },
  );
});

describe('strictCompatibilityProblems', () => {
  const make = (input: z.ZodObject) =>
    defineTool({ name: 'probe', description: 'Probe.', input, tier: 'readonly', timeoutMs: 1000 });

  it('flags optional fields and says to use .nullable()', () => {
    const problems = strictCompatibilityProblems(make(z.strictObject({ note: z.string().optional() })));
    expect(problems).toEqual([expect.stringContaining('note: is optional')]);
    expect(problems[0]).toContain('.nullable()');
  });

  it('flags open objects, records and untyped values', () => {
    const problems = strictCompatibilityProblems(
      make(
        z.strictObject({
          nested: z.looseObject({ a: z.string() }),
          tags: z.record(z.string(), z.string()),
          blob: z.unknown(),
        }),
      ),
    );
    expect(problems.some((problem) => problem.startsWith('nested: objects must be closed'))).toBe(true);
    expect(problems.some((problem) => problem.startsWith('tags:'))).toBe(true);
    expect(problems.some((problem) => problem.startsWith('blob: has no type'))).toBe(true);
    expect(() => strictInputSchema(make(z.strictObject({ blob: z.unknown() })))).toThrow(
      /not strict-compatible/,
    );
  });

  it('moves range and length constraints into the description', () => {
    const schema = strictInputSchema(exampleCatalog['slow_search']!) as {
      properties: Record<string, Schema>;
    };
    expect(schema.properties['query']!['description']).toBe('(Constraints: minLength 1, maxLength 500.)');
    expect(schema.properties['delayMs']!['description']).toContain('maximum 60000');
  });
});

describe('tool definition builders', () => {
  const include = ['read_config', 'transfer_funds'];

  it('builds the Anthropic tools array', () => {
    const tools = anthropicTools(exampleCatalog, { include });
    expect(tools.map((tool) => tool.name)).toEqual(include);
    expect(tools[0]).toMatchObject({
      strict: true,
      input_schema: { type: 'object', additionalProperties: false },
    });
    expect(tools[1]!.description).toContain('A human must approve');
  });

  it('builds the OpenAI Chat Completions tools array', () => {
    const tools = openAIChatTools(exampleCatalog, { include });
    expect(tools[1]).toMatchObject({
      type: 'function',
      function: { name: 'transfer_funds', strict: true, parameters: { additionalProperties: false } },
    });
    expect((tools[1]!.function.parameters as Schema)['required']).toContain('memo');
  });

  it('builds the OpenAI Responses tools array, with the strict flag optional', () => {
    const tools = openAIResponsesTools(exampleCatalog, { include, strict: false });
    expect(tools[0]).toMatchObject({ type: 'function', name: 'read_config', strict: false });
    expect(tools[0]!.parameters).toMatchObject({ type: 'object', required: ['name'] });
  });
});
