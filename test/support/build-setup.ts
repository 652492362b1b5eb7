import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

/**
 * Compiles the package into dist/ before the tests run: the `toolgate` binary the tests spawn, and
 * the example config they name, run the compiled JavaScript, which must be this checkout's.
 */
export async function setup(): Promise<void> {
  const root = fileURLToPath(new URL('../..', import.meta.url));
  const tsc = fileURLToPath(new URL('../../node_modules/typescript/bin/tsc', import.meta.url));
  await promisify(execFile)(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: root }).catch(
    (error: { stdout?: string; stderr?: string }) => {
      throw new Error(`npm run build failed:\n${error.stdout ?? ''}${error.stderr ?? ''}`);
    },
  );
}
