import { describe, expect, it } from 'vitest';
import { docBlocks, docProject } from '../support/doc-blocks.ts';

const block = (language: string, ...lines: string[]) => [`\`\`\`${language}`, ...lines, '```'].join('\n');

describe('the docs as a consumer project', () => {
  it('takes each ts and jsonc block as the file its first line names, and skips the others', () => {
    const markdown = [
      'Text.',
      block('ts', '// src/contracts.ts: the contracts', 'export const a = 1;'),
      block('sh', 'npm test'),
      block('jsonc', '// tsconfig.json', '{ "compilerOptions": {} }'),
    ].join('\n\n');
    expect(docBlocks(markdown, 'README.md')).toEqual([
      {
        origin: 'README.md:3',
        path: 'src/contracts.ts',
        code: '// src/contracts.ts: the contracts\nexport const a = 1;\n',
      },
      {
        origin: 'README.md:12',
        path: 'tsconfig.json',
        code: '// tsconfig.json\n{ "compilerOptions": {} }\n',
      },
    ]);
  });

  it('refuses a ts block that does not say which file it is, or names one outside the project', () => {
    expect(() => docBlocks(block('ts', 'const a = 1;'), 'docs/x.md')).toThrow(
      /docs\/x\.md:1: a ts block must open with the file it is/,
    );
    expect(() => docBlocks(block('ts', '// ../outside.ts', 'export {};'), 'docs/x.md')).toThrow(/must open/);
    expect(() => docBlocks('```ts\n// src/a.ts\n', 'docs/x.md')).toThrow(/never closed/);
  });

  it('refuses two blocks that claim the same file', () => {
    const markdown = block('ts', '// src/a.ts', 'export {};');
    expect(() =>
      docProject([
        { name: 'README.md', markdown },
        { name: 'docs/agents.md', markdown },
      ]),
    ).toThrow('docs/agents.md:1: src/a.ts is already the block at README.md:1.');
  });
});
