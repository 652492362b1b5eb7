/** Runs the real `toolgate` binary as a child process with `--json`, for the CLI's tests. */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const binary = fileURLToPath(new URL('../../bin/toolgate.js', import.meta.url));

/**
 * The bundled examples' config, compiled (what `--example` loads). The CLI's tests run against the
 * example tools through TOOLGATE_CONFIG, the way a deployment names its config.
 */
export const exampleConfig = fileURLToPath(
  new URL('../../dist/examples/toolgate.config.js', import.meta.url),
);

/** This process's environment with the example config named, for spawning the binary. */
export function exampleEnv(extra: Readonly<Record<string, string>> = {}): NodeJS.ProcessEnv {
  return { ...process.env, TOOLGATE_CONFIG: exampleConfig, ...extra };
}

export interface CliResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
  /** stdout parsed as JSON, or `{}` when it is not JSON. */
  readonly json: Record<string, unknown>;
}

export type CliRunner = (...args: string[]) => Promise<CliResult>;

/** A runner for the binary with the given environment added to this process's and the example config's. */
export function createCliRunner(env: Readonly<Record<string, string>>): CliRunner {
  const fullEnv = exampleEnv(env);
  return (...args) =>
    new Promise((resolve) => {
      execFile(
        process.execPath,
        [binary, ...args, '--json'],
        { env: fullEnv, timeout: 60_000 },
        (error, stdout, stderr) => {
          const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
          let json: Record<string, unknown> = {};
          try {
            json = JSON.parse(stdout) as Record<string, unknown>;
          } catch {
            json = {};
          }
          resolve({ code, stdout, stderr, json });
        },
      );
    });
}
