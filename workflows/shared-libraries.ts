/**
 * The libraries every toolgate workflow uses, loaded once per workflow thread instead of once per
 * workflow (see `src/worker/shared-libraries.ts`, which preloads this module, and toolgate's own
 * `tool-call.ts` and `tool-undo.ts` with it: pure code and constants, which must stay free of
 * module state that a workflow writes, since the SDK freezes every shared module).
 *
 * Temporal gives each workflow its own copy of every module it imports. For zod and the hash that
 * is most of a call's worker CPU: about 4 ms of module evaluation and garbage per workflow, measured
 * in docs/benchmarks.md. Preloaded modules are shared and deep-frozen by the SDK instead, so the
 * lazy state they would write on first use is settled here, before the freeze:
 *
 * - zod's locale and memoizer are installed by constructing and parsing a schema once;
 * - zod runs `jitless`: a workflow parses its arguments once, so compiling a parser per workflow
 *   (what zod does on the first parse of an object schema) costs more than it saves, and code
 *   generation has no place in a sandbox anyway;
 * - the one cached probe zod reads later (`allowsEval`) is read now.
 *
 * Workflow code must therefore not call `z.config()` or change zod's global registry: they are
 * read-only once shared. Pass `shareLibraries: false` to `createWorker` for a catalog that must.
 */
import { sha256 } from '@noble/hashes/sha2';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils';
import * as z from 'zod';

z.config({ jitless: true });
z.strictObject({ text: z.string().regex(/^x$/), count: z.number().int() }).safeParse({ text: 'x', count: 1 });
void z.core.util.allowsEval.value;

/** Referenced so the bundler keeps the imports (zod declares itself free of side effects). */
export const sharedLibraries = { z, sha256, bytesToHex, utf8ToBytes };
