/**
 * A workflows module whose tool validates with zod's built-in formats, whose patterns belong to zod
 * itself: shared and frozen once zod is loaded once per workflow thread (shared-libraries.ts).
 */
import { z } from 'zod';
import { createCatalog, defineTool } from '../../../src/contracts/define-tool.ts';
import { createToolCallWorkflow } from '../../../workflows/tool-call.ts';

export const checkFormats = defineTool({
  name: 'check_formats',
  description: 'Echoes arguments that passed zod built-in formats.',
  input: z.strictObject({
    email: z.email(),
    id: z.uuid(),
    at: z.iso.datetime(),
    site: z.url({ hostname: /^[a-z.]+$/, protocol: /^https$/ }),
    // A global pattern: its lastIndex must still be reset before each test.
    tag: z.string().regex(/^tag-[0-9]+$/g),
  }),
  tier: 'readonly',
  timeoutMs: 5_000,
});

/** A schema with a bug: its refinement throws instead of returning false. */
export const brokenSchema = defineTool({
  name: 'broken_schema',
  description: 'A tool whose schema throws while validating.',
  input: z.strictObject({
    text: z.string().refine((text) => {
      throw new RangeError(`cannot check ${text.length} characters`);
    }),
  }),
  tier: 'readonly',
  timeoutMs: 5_000,
});

/** A lazy schema whose builder fails: the mistake is met inside the workflow, at the first call. */
export const brokenLazySchema = defineTool({
  name: 'broken_lazy_schema',
  description: 'A tool whose lazy schema cannot be built.',
  input: () => {
    throw new SyntaxError('the schema module is broken');
  },
  tier: 'readonly',
  timeoutMs: 5_000,
});

/** The client's catalog. A client given `brokenLazySchema` would refuse to start, by design. */
export const formatsCatalog = createCatalog([checkFormats, brokenSchema]);

export const toolCall = createToolCallWorkflow(createCatalog([checkFormats, brokenSchema, brokenLazySchema]));

/** Whether zod reached this workflow as a shared (frozen) module or as its own copy. */
export async function zodIsShared(): Promise<boolean> {
  return Object.isFrozen(z.globalRegistry);
}

/** Whether toolgate's own workflow code (the gates) reached this workflow shared and frozen. */
export async function gatesAreShared(): Promise<boolean> {
  return Object.isFrozen(createToolCallWorkflow);
}
