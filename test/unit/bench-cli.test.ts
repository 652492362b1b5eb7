import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));

/** `npm run bench` with arguments; never reaches the dev server for these. */
function bench(...args: string[]) {
  const result = spawnSync(process.execPath, ['--import', 'tsx', 'bench/main.ts', ...args], {
    cwd: root,
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe('npm run bench, its options', () => {
  it('--help lists every option with examples and exits 0', () => {
    const { status, stdout } = bench('--help');
    expect(status).toBe(0);
    for (const option of [
      '--quick',
      '--variants',
      '--concurrency',
      '--output-name',
      '--cpu-profile',
      '--seed',
      '--waiting-prefill',
      '--open-seconds',
    ]) {
      expect(stdout).toContain(option);
    }
    expect(stdout).toContain('Examples:');
  });

  it.each([
    [['--variants', 'B,B-idx'], /there is no variant "B-idx"; the variants are A, B, B-twin, C, C-fast, D$/m],
    [['--concurrency', '4,0'], /--concurrency "0" is not a positive whole number/],
    [['--worker-tuning', '{oops'], /--worker-tuning is not JSON/],
    [['--output-name', '../escape'], /--output-name "..\/escape": use 1-64 letters/],
    [['--phase', 'both'], /use all, latency or waiting/],
    [['--seed=-1'], /--seed "-1": use a whole number from 0 to 4294967295/],
    [['--seed', '4294967296'], /--seed "4294967296": use a whole number/],
    [['--waiting-prefill', '1.5'], /--waiting-prefill "1.5" is not a positive whole number/],
    [['--open-seconds', '0'], /--open-seconds "0" is not a positive number/],
    [['--bogus'], /Unknown option '--bogus'/],
    // The options of removed variants and diagnostics are gone, not ignored.
    [['--busy-ms', '1,1,1'], /Unknown option '--busy-ms'/],
    [['--order', 'rotated'], /Unknown option '--order'/],
  ])('refuses %j with exit 2 and says what to do', (args, message) => {
    const { status, stderr } = bench(...args);
    expect(status).toBe(2);
    expect(stderr).toMatch(message);
    expect(stderr).toContain('npm run bench -- --help');
  });
});
