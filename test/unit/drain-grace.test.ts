import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { exampleCatalog } from '../../examples/contracts.ts';
import { createCatalog, defineTool } from '../../src/contracts/define-tool.ts';
import { drainGraceMsFor } from '../../src/worker/drain-grace.ts';

const toolTaking = (name: string, timeoutMs: number) =>
  defineTool({ name, description: name, input: () => z.strictObject({}), tier: 'readonly', timeoutMs });

describe('the drain grace of a stopping worker', () => {
  it("covers the catalog's longest tool deadline, its 1 s grace and a second to report", () => {
    expect(drainGraceMsFor(createCatalog([toolTaking('a', 2_000), toolTaking('b', 45_000)]))).toBe(47_000);
    // The examples' longest tool (slow_search) may take 30 s.
    expect(drainGraceMsFor(exampleCatalog)).toBe(32_000);
  });

  it('is never under 5 s, and follows a longer deadline grace', () => {
    expect(drainGraceMsFor(createCatalog([toolTaking('a', 500)]))).toBe(5_000);
    expect(drainGraceMsFor(createCatalog([toolTaking('a', 10_000)]), 4_000)).toBe(15_000);
  });
});
