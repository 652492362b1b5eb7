import { readFileSync } from 'node:fs';

/** The parts of toolgate's package.json that the running code reads about itself. */
export interface ToolgateManifest {
  readonly version: string;
  readonly peerDependencies: Readonly<Record<string, string>>;
}

/**
 * toolgate's own package.json: two folders up from this module when it runs from source, three
 * when it runs compiled from `dist/`. Read at run time rather than imported, so the compiled package
 * does not carry a second copy of its manifest.
 */
export const toolgateManifest: ToolgateManifest = readToolgateManifest();

/** toolgate's version, as its package.json gives it. */
export const toolgateVersion = toolgateManifest.version;

function readToolgateManifest(): ToolgateManifest {
  for (const candidate of ['../../package.json', '../../../package.json']) {
    try {
      const manifest = JSON.parse(readFileSync(new URL(candidate, import.meta.url), 'utf8')) as {
        name?: unknown;
        version?: unknown;
        peerDependencies?: Record<string, string>;
      };
      if (manifest.name === 'toolgate' && typeof manifest.version === 'string') {
        return { version: manifest.version, peerDependencies: manifest.peerDependencies ?? {} };
      }
    } catch {
      // Not there: try the next candidate.
    }
  }
  return { version: '0.0.0', peerDependencies: {} };
}
