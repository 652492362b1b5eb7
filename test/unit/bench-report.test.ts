import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { productDigest } from '../../bench/digest.ts';
import { renderMarkdown, renderSvg } from '../../bench/report.ts';
import { benchCell, renderLatencyReport } from '../support/bench-cells.ts';

describe('the bench report', () => {
  it('shows the kept variants and leaves out those an older result still holds', () => {
    // An older result may hold cells of variants the bench no longer runs.
    const older = { ...benchCell('B', 'c1', 40), variant: 'B-idx' } as unknown as ReturnType<
      typeof benchCell
    >;
    const cells = [benchCell('B', 'c1', 20), benchCell('C', 'c1', 22), older];
    const markdown = renderLatencyReport({ cells });
    expect(markdown).toContain('| C | 1.10× / 1.10× / 0.91× |');
    expect(markdown).not.toContain('B-idx');
    const svg = renderSvg({ latency: { cells } } as never);
    expect(svg).toContain('>C<');
    expect(svg).not.toContain('B-idx');
  });

  it('puts B beside C at each point of the waiting phase', () => {
    const summary = (p50Ms: number) => ({
      count: 10,
      p50Ms,
      p90Ms: p50Ms,
      p99Ms: p50Ms,
      maxMs: p50Ms,
      meanMs: p50Ms,
    });
    const markdown = renderMarkdown({
      meta: {
        startedAt: 'now',
        cores: 2,
        repetitions: 1,
        openLoopRatePerSecond: 15,
        openLoopDurationMs: 8000,
      },
      waiting: {
        cacheSize: 100,
        levels: [],
        resumeCached: summary(20),
        resumeEvicted: summary(25),
        callUnloaded: summary(40),
        callWhileWaiting: summary(44),
        callAfterDrain: summary(45),
        bBesideC: { unloaded: summary(38), whileWaiting: summary(43) },
        approvedCalls: 50,
        secondsToApproveAll: 2,
        approvalsPerSecond: 25,
        approvalErrors: 0,
      },
      targets: [],
    } as never);
    expect(markdown).toContain('| C, all waiting | 10 | 44.0 | 44.0 | 44.0 | 44.0 |');
    expect(markdown).toContain('| B beside C, all waiting | 10 | 43.0 |');
    // A point B was not measured at has no row for B.
    expect(markdown).not.toContain('B beside C, after');
  });
});

describe('the product digest a result records', () => {
  it('changes with a product file and with nothing else', async () => {
    const base = await mkdtemp(join(tmpdir(), 'toolgate-digest-'));
    try {
      for (const directory of ['src', 'workflows', 'activities']) {
        await mkdir(join(base, directory, 'x'), { recursive: true });
      }
      await writeFile(join(base, 'src', 'x', 'a.ts'), 'export const a = 1;\n');
      await writeFile(join(base, 'workflows', 'w.ts'), 'export {};\n');
      const first = await productDigest(base);
      expect(first).toMatch(/^[0-9a-f]{64}$/);
      expect(await productDigest(base)).toBe(first);
      await mkdir(join(base, 'bench'));
      await writeFile(join(base, 'bench', 'main.ts'), 'not product code\n');
      expect(await productDigest(base)).toBe(first);
      await writeFile(join(base, 'src', 'x', 'a.ts'), 'export const a = 2;\n');
      expect(await productDigest(base)).not.toBe(first);
    } finally {
      await rm(base, { recursive: true, force: true });
    }
  });
});
