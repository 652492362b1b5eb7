import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);

describe('npm run demo', () => {
  it('ends every case as expected and says so in its summary', async () => {
    const { stdout } = await run(process.execPath, ['--import', 'tsx', 'examples/demo.ts', '--json'], {
      timeout: 120_000,
      env: { ...process.env, TEMPORAL_ADDRESS: '' },
    });
    const summary = JSON.parse(stdout.trim().split('\n').at(-1)!) as {
      passed: number;
      total: number;
      results: Array<{ title: string; ok: boolean; status: string; reason: string | null; effect: string }>;
    };
    expect(summary.total).toBe(11);
    expect(summary.results.filter((result) => !result.ok)).toEqual([]);
    expect(summary.passed).toBe(11);
    const statuses = summary.results.map(
      (result) => `${result.status}/${result.reason ?? '-'}/${result.effect}`,
    );
    expect(statuses).toContain('timeout/TIMEOUT/none');
    expect(statuses).toContain('denied/APPROVAL_EXPIRED/none');
  }, 150_000);
});
