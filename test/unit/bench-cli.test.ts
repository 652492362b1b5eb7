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
      '--order',
      '--seed',
      '--busy-ms',
      '--waiting-bare',
      '--open-seconds',
    ]) {
      expect(stdout).toContain(option);
    }
    expect(stdout).toContain('Examples:');
  });

  it.each([
    [['--variants', 'B,X'], /there is no variant "X"; the variants are A, B, B-E/],
    [['--concurrency', '4,0'], /--concurrency "0" is not a positive whole number/],
    [['--worker-tuning', '{oops'], /--worker-tuning is not JSON/],
    [['--output-name', '../escape'], /--output-name "..\/escape": use 1-64 letters/],
    [['--phase', 'both'], /use all, latency or waiting/],
    [['--order', 'sorted'], /--order "sorted": use shuffled or rotated/],
    [['--seed=-1'], /--seed "-1": use a whole number from 0 to 4294967295/],
    [['--seed', '4294967296'], /--seed "4294967296": use a whole number/],
    [['--busy-ms', '1,2'], /--busy-ms "1,2": give three numbers of milliseconds from 0 to 50/],
    [['--busy-ms', '1,x,1'], /--busy-ms "1,x,1": give three numbers/],
    [
      ['--waiting-bare', 'B,C'],
      /--waiting-bare: "C" cannot be measured in the waiting phase; use some of B, B-twin, B-idx, or none/,
    ],
    [['--open-seconds', '0'], /--open-seconds "0" is not a positive number/],
    [['--bogus'], /Unknown option '--bogus'/],
  ])('refuses %j with exit 2 and says what to do', (args, message) => {
    const { status, stderr } = bench(...args);
    expect(status).toBe(2);
    expect(stderr).toMatch(message);
    expect(stderr).toContain('npm run bench -- --help');
  });
});
