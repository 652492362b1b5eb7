import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { ToolgateUsageError } from '../client/errors.ts';
import { toolgateManifest, toolgateVersion } from '../support/package-version.ts';
import { initFiles } from './init-templates.ts';

export interface CreatedProject {
  readonly directory: string;
  /** The folder relative to the working one, for the `cd` in the next steps. */
  readonly relative: string;
  readonly files: readonly string[];
}

/**
 * Writes the project of `toolgate init` into `folder`. Nothing is written when any of its files
 * exists already, and the refusal names them.
 */
export async function initProject(folder: string, packageSpec?: string): Promise<CreatedProject> {
  const directory = resolve(folder);
  const name = projectName(basename(directory));
  const files = initFiles(name, {
    toolgate: packageSpec ?? `^${toolgateVersion}`,
    // The ranges toolgate itself asks of its peers, so the project gets what it was tested with.
    peers: toolgateManifest.peerDependencies,
    typescript: '^5.9.3',
    nodeTypes: '^24.0.0',
  });
  const existing = Object.keys(files).filter((file) => existsSync(join(directory, file)));
  if (existing.length > 0) {
    throw new ToolgateUsageError(
      `${directory} already has ${existing.join(', ')}; toolgate init overwrites nothing. Run it in an empty folder: toolgate init <new-folder>.`,
    );
  }
  for (const [file, text] of Object.entries(files)) {
    const path = join(directory, file);
    await mkdir(dirname(path), { recursive: true });
    // `wx`: a file that appeared since the check above is still not overwritten.
    await writeFile(path, text, { flag: 'wx' });
  }
  return { directory, relative: relative(process.cwd(), directory) || '.', files: Object.keys(files) };
}

/** A package name npm accepts, from the folder's name. */
function projectName(folder: string): string {
  const name = folder
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, '-')
    .replace(/^[._-]+|[-]+$/g, '');
  return name || 'toolgate-tools';
}
