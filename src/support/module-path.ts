import { fileURLToPath } from 'node:url';

/**
 * The file path of a module given relative to another module's URL, without its extension, in the
 * form the calling code runs as: `.ts` when it runs from source (tests, tsx), `.js` when it runs
 * compiled from `dist/`. Paths handed to the workflow bundler and to `node` need the real file.
 *
 * ```ts
 * const workflowsPath = modulePath('./workflows', import.meta.url);
 * ```
 */
export function modulePath(relativePath: string, baseUrl: string): string {
  const extension = /\.(?:[cm]?ts)$/.test(fileURLToPath(baseUrl)) ? '.ts' : '.js';
  return fileURLToPath(new URL(`${relativePath}${extension}`, baseUrl));
}
