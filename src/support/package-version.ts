import { readFileSync } from 'node:fs';

/**
 * toolgate's own version, from its package.json: two folders up from this module when it runs from
 * source, three when it runs compiled from `dist/`. Read at run time rather than imported, so the
 * compiled package does not carry a second copy of its manifest.
 */
export const toolgateVersion: string = readToolgateVersion();

function readToolgateVersion(): string {
  for (const candidate of ['../../package.json', '../../../package.json']) {
    try {
      const manifest = JSON.parse(readFileSync(new URL(candidate, import.meta.url), 'utf8')) as {
        name?: unknown;
        version?: unknown;
      };
      if (manifest.name === 'toolgate' && typeof manifest.version === 'string') return manifest.version;
    } catch {
      // Not there: try the next candidate.
    }
  }
  return '0.0.0';
}
