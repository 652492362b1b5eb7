/**
 * The TypeScript blocks of the project's Markdown docs, as the files of one consumer project. Each
 * ```ts (or ```jsonc) block opens with a comment naming the file it is, relative to that project:
 * `// src/contracts.ts: what it holds`. The consumer test writes them out and compiles them against
 * the packed package, so an example that no longer compiles fails CI.
 */

export interface DocBlock {
  /** The Markdown file and the line its block starts on, for messages. */
  readonly origin: string;
  /** Where the block goes in the consumer project, e.g. `src/contracts.ts`. */
  readonly path: string;
  readonly code: string;
}

const fence = /^```([A-Za-z]*)\s*$/;
const compiledLanguages = new Set(['ts', 'typescript', 'jsonc']);
const header = /^\/\/ ((?:[A-Za-z0-9_-]+\/)*[A-Za-z0-9_.-]+\.(?:ts|json))(?::.*)?$/;

/** The compiled blocks of one Markdown text; a block without a file header is an error. */
export function docBlocks(markdown: string, name: string): DocBlock[] {
  const lines = markdown.split('\n');
  const blocks: DocBlock[] = [];
  for (let index = 0; index < lines.length; index++) {
    const open = fence.exec(lines[index] ?? '');
    if (!open) continue;
    const start = index;
    const body: string[] = [];
    for (index++; index < lines.length && !/^```\s*$/.test(lines[index] ?? ''); index++) {
      body.push(lines[index] ?? '');
    }
    if (index >= lines.length) throw new Error(`${name}:${start + 1}: the code block is never closed.`);
    if (!compiledLanguages.has(open[1] ?? '')) continue;
    const named = header.exec(body[0] ?? '');
    if (!named?.[1] || named[1].split('/').includes('..')) {
      throw new Error(
        `${name}:${start + 1}: a ${open[1]} block must open with the file it is, e.g. "// src/contracts.ts: what it holds", so CI can compile it.`,
      );
    }
    blocks.push({ origin: `${name}:${start + 1}`, path: named[1], code: `${body.join('\n')}\n` });
  }
  return blocks;
}

/** The blocks of several documents as one project's files; two blocks may not claim one file. */
export function docProject(documents: ReadonlyArray<{ name: string; markdown: string }>): DocBlock[] {
  const byPath = new Map<string, DocBlock>();
  for (const document of documents) {
    for (const block of docBlocks(document.markdown, document.name)) {
      const earlier = byPath.get(block.path);
      if (earlier)
        throw new Error(`${block.origin}: ${block.path} is already the block at ${earlier.origin}.`);
      byPath.set(block.path, block);
    }
  }
  return [...byPath.values()];
}
