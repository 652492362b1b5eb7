import { readdirSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/** The loader's transform (the loader is CommonJS: webpack requires it by path). */
const { guardLastIndexResets } = createRequire(import.meta.url)(
  '../../src/worker/frozen-regex-loader.cjs',
) as {
  guardLastIndexResets: (source: string) => { source: string; rewritten: number };
};

const zodDirectory = fileURLToPath(new URL('../../node_modules/zod', import.meta.url));

function zodFilesWritingLastIndex(directory: string): string[] {
  return readdirSync(directory).flatMap((name) => {
    const path = join(directory, name);
    if (statSync(path).isDirectory()) return zodFilesWritingLastIndex(path);
    return /\.c?js$/.test(name) && readFileSync(path, 'utf8').includes('lastIndex') ? [path] : [];
  });
}

/** Runs a statement in strict mode with `pattern` in scope, as zod's modules would. */
function runWith(code: string, pattern: RegExp): void {
  new Function('pattern', `'use strict'; ${code}`)(pattern);
}

describe('the frozen-regex loader', () => {
  it('understands every lastIndex write in the installed zod', () => {
    const files = zodFilesWritingLastIndex(zodDirectory);
    const rewritten = Object.fromEntries(
      files.map((path) => [
        path.slice(zodDirectory.length + 1),
        guardLastIndexResets(readFileSync(path, 'utf8')).rewritten,
      ]),
    );
    // The resets zod 4 does before testing a format, a regex, a URL's host and protocol.
    expect(rewritten['v4/core/checks.js']).toBe(2);
    expect(rewritten['v4/core/schemas.js']).toBe(3);
    expect(rewritten['v4/core/compile.js']).toBe(2);
    for (const count of Object.values(rewritten)) expect(count).toBeGreaterThan(0);
  });

  it('makes a reset harmless on a frozen pattern and keeps it on a global one', () => {
    const reset = 'pattern.lastIndex = 0;';
    const guarded = guardLastIndexResets(reset).source;
    const frozen = Object.freeze(/^[a-z]+$/);
    expect(() => runWith(reset, frozen)).toThrow(TypeError);
    expect(() => runWith(guarded, frozen)).not.toThrow();

    const global = /a/g;
    global.lastIndex = 3;
    runWith(guarded, global);
    expect(global.lastIndex).toBe(0);
    const sticky = /a/y;
    sticky.lastIndex = 2;
    runWith(guarded, sticky);
    expect(sticky.lastIndex).toBe(0);
  });

  it('guards the resets zod writes into the parsers it generates', () => {
    // zod's compile.js writes this line of a template literal (spelled out to keep it a plain string).
    const generator = ['doc.write(`$', '{patternConst}.lastIndex = 0;`);'].join('');
    const { source, rewritten } = guardLastIndexResets(generator);
    expect(rewritten).toBe(1);
    const generated = new Function(
      'patternConst',
      `return \`${source.slice('doc.write(`'.length, -'`);'.length)}\`;`,
    )('pattern') as string;
    expect(generated).toBe('{ if (pattern.global || pattern.sticky) pattern.lastIndex = 0; }');
    expect(() => runWith(generated, Object.freeze(/x/))).not.toThrow();
  });

  it('refuses a write it does not understand, saying what to do', () => {
    expect(() => guardLastIndexResets('pattern.lastIndex = start + 1;')).toThrow(
      /cannot share this zod version.*shareLibraries: false/,
    );
    for (const write of ['re.lastIndex += 1;', 're.lastIndex++;', '--re.lastIndex;', 're.lastIndex ||= 0;']) {
      expect(() => guardLastIndexResets(write)).toThrow(/cannot share this zod version/);
    }
    // Reading it is fine.
    expect(guardLastIndexResets('if (re.lastIndex === 0) go();').rewritten).toBe(0);
  });
});
