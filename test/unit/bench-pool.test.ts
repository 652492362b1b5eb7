import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BenchResults } from '../../bench/main.ts';
import {
  checkSameCode,
  loadRun,
  median,
  PoolInputError,
  type PoolRun,
  poolTargets,
  productDigest,
  renderPool,
} from '../../bench/pool.ts';
import { benchCell } from '../support/bench-cells.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));

const cell = benchCell;

/** A run at 1 caller: B at 20 ms, C and B-idx at the given p50s (B-idx left out when undefined). */
function run(file: string, c: number, floor: number | undefined, digest?: string): PoolRun {
  const cells = [cell('B', 'c1', 20), cell('C', 'c1', c), ...(floor ? [cell('B-idx', 'c1', floor)] : [])];
  const results = {
    meta: { startedAt: `2026-12-01T00:00:0${file.length % 10}Z`, quick: false, cores: 2, repetitions: 3 },
    latency: { cells },
    targets: [],
    incomplete: [],
  } as unknown as BenchResults;
  if (digest) (results.meta as { productDigest?: string }).productDigest = digest;
  return { file, results };
}

const p50Line = (runs: PoolRun[]) => poolTargets(runs).find((target) => target.target.startsWith('C p50'))!;

describe('pooling bench runs', () => {
  it('takes the median of an odd and an even number of values', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(() => median([])).toThrow('no values');
  });

  it('holds a line when the median run meets it, and counts the runs that did', () => {
    // C/B: 1.05, 1.15, 1.08 → median 1.08; B-idx/B: 1.02, 1.10, 1.04.
    const pooled = p50Line([run('a', 21, 20.4), run('b', 23, 22), run('c', 21.6, 20.8)]);
    expect(pooled.verdict).toBe('holds');
    expect(pooled.holdingRuns).toBe(2);
    const [c1] = pooled.cells;
    expect(c1).toMatchObject({ condition: 'c1', runs: 3, holdingRuns: 2, verdict: 'holds' });
    expect(c1!.median).toBeCloseTo(1.08, 10);
    expect(c1!.min).toBeCloseTo(1.05, 10);
    expect(c1!.max).toBeCloseTo(1.15, 10);
    expect(c1!.reference).toMatchObject({ variant: 'B-idx', runs: 3, holdingRuns: 3 });
    expect(c1!.reference!.median).toBeCloseTo(1.04, 10);
  });

  it('calls a miss out of reach only when the median run of the reference misses too', () => {
    // C/B 1.14, 1.12, 1.16; B-idx/B 1.12, 1.11, 1.08 → median 1.11: out of reach.
    const floorMisses = p50Line([run('a', 22.8, 22.4), run('b', 22.4, 22.2), run('c', 23.2, 21.6)]);
    expect(floorMisses.verdict).toBe('out of reach');
    expect(floorMisses.cells[0]!.reference!.holdingRuns).toBe(1);
    // C over its floor in each run: 1.14/1.12, 1.12/1.11, 1.16/1.08 → median 1.0179.
    expect(floorMisses.cells[0]!.reference!.medianOverReference).toBeCloseTo(22.8 / 22.4, 10);
    // The same C with a floor whose median run holds (1.05): a plain miss.
    const floorHolds = p50Line([run('a', 22.8, 21), run('b', 22.4, 21), run('c', 23.2, 23)]);
    expect(floorHolds.verdict).toBe('misses');
    expect(floorHolds.cells[0]!.verdict).toBe('misses');
  });

  it('leaves out of a target, by name, a run that did not measure every variant it reads', () => {
    const pooled = p50Line([
      run('full-1', 21, 20.4),
      run('no-floor', 30, undefined),
      run('full-2', 21.8, 20.8),
    ]);
    // C/B 1.05 and 1.09 (not the 1.50 of the run without its floor); B-idx/B 1.02 and 1.04.
    expect(pooled.leftOut).toEqual(['no-floor']);
    expect(pooled.runs).toBe(2);
    expect(pooled.cells[0]!.max).toBeCloseTo(1.09, 10);
    const text = renderPool([run('full-1', 21, 20.4), run('no-floor', 30, undefined)], [pooled]);
    expect(text).toContain('Left out: no-floor');
    expect(text).toContain(
      '| c1 | 2 | 1.07× | 1.05–1.09× | 2 of 2 | B-idx 1.03× (1.02–1.04), 2 of 2 | 1.04× | holds |',
    );
  });

  it('refuses runs of different product code, and names the runs it could not check', () => {
    expect(checkSameCode([run('a', 21, 20, 'f'.repeat(64)), run('b', 21, 20, 'f'.repeat(64))])).toEqual({
      unchecked: [],
      digest: 'f'.repeat(64),
    });
    expect(checkSameCode([run('a', 21, 20, 'f'.repeat(64)), run('old', 21, 20)]).unchecked).toEqual(['old']);
    const mixed = () => checkSameCode([run('a', 21, 20, 'a'.repeat(64)), run('b', 21, 20, 'b'.repeat(64))]);
    expect(mixed).toThrow(PoolInputError);
    expect(mixed).toThrow(/aaaaaaaaaaaa: a\n {2}bbbbbbbbbbbb: b/);
    expect(mixed).toThrow('--allow-mixed-code');
  });

  it('gives a new digest when a product file changes, and the same one otherwise', async () => {
    const base = await mkdtemp(join(tmpdir(), 'toolgate-digest-'));
    try {
      for (const directory of ['src', 'workflows', 'activities'])
        await mkdir(join(base, directory, 'x'), { recursive: true });
      await writeFile(join(base, 'src', 'x', 'a.ts'), 'export const a = 1;\n');
      await writeFile(join(base, 'workflows', 'w.ts'), 'export {};\n');
      const first = await productDigest(base);
      expect(first).toMatch(/^[0-9a-f]{64}$/);
      expect(await productDigest(base)).toBe(first);
      await writeFile(join(base, 'bench.ts'), 'not product code\n');
      expect(await productDigest(base)).toBe(first);
      await writeFile(join(base, 'src', 'x', 'a.ts'), 'export const a = 2;\n');
      expect(await productDigest(base)).not.toBe(first);
    } finally {
      await rm(base, { recursive: true, force: true });
    }
  });
});

describe('npm run bench:pool', () => {
  let directory: string;
  const write = async (name: string, content: unknown) => {
    const file = join(directory, name);
    await writeFile(file, typeof content === 'string' ? content : JSON.stringify(content));
    return file;
  };
  const pool = (...args: string[]) => {
    const result = spawnSync(process.execPath, ['--import', 'tsx', 'bench/pool.ts', ...args], {
      cwd: root,
      encoding: 'utf8',
      timeout: 60_000,
    });
    return { status: result.status, stdout: result.stdout, stderr: result.stderr };
  };
  beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), 'toolgate-pool-'));
  });
  afterAll(async () => {
    await rm(directory, { recursive: true, force: true });
  });

  it('pools two runs into markdown, or JSON with --json', async () => {
    const first = await write('one.json', run('one', 21, 20.4, 'c'.repeat(64)).results);
    const second = await write('two.json', run('two', 23, 22.4, 'c'.repeat(64)).results);
    const markdown = pool(first, second);
    expect(markdown.status).toBe(0);
    expect(markdown.stdout).toContain('# toolgate benchmark: targets over 2 runs');
    expect(markdown.stdout).toContain('## C p50 <= 1.10× B: holds');
    expect(markdown.stderr).toBe('');
    const json = pool('--json', first, second);
    expect(json.status).toBe(0);
    const parsed = JSON.parse(json.stdout) as { productDigest: string; targets: Array<{ target: string }> };
    expect(parsed.productDigest).toBe('c'.repeat(64));
    expect(parsed.targets.map((target) => target.target)).toContain('C p99 <= 1.25× B');
  });

  it('--help teaches the verdict and exits 0', () => {
    const { status, stdout } = pool('--help');
    expect(status).toBe(0);
    expect(stdout).toContain('out of reach');
    expect(stdout).toContain('Examples:');
  });

  it('refuses what it cannot pool with exit 2 and says what to give instead', async () => {
    const good = await write('good.json', run('good', 21, 20.4).results);
    const quick = await write('quick.json', {
      ...run('q', 21, 20).results,
      meta: { startedAt: 'x', quick: true },
    });
    const markdownFile = await write('latest.md', '# not json');
    const noLatency = await write('waiting.json', { meta: { startedAt: 'x' }, targets: [] });
    const cases: Array<[string[], RegExp]> = [
      [[good], /give two or more result files \(got 1\)/],
      [[good, join(directory, 'missing.json')], /missing\.json: cannot read it \(ENOENT\)/],
      [[good, markdownFile], /latest\.md: not JSON\. Give the \.json/],
      [[good, quick], /a --quick smoke run/],
      [[good, noLatency], /not the results of a bench run with a latency phase/],
      [['--bogus', good], /Unknown option '--bogus'.*\n.*--help/],
    ];
    for (const [args, message] of cases) {
      const { status, stderr } = pool(...args);
      expect(status, args.join(' ')).toBe(2);
      expect(stderr).toMatch(message);
    }
  });

  it('refuses runs of different code unless told, and names unchecked runs', async () => {
    const a = await write('a.json', run('a', 21, 20.4, 'a'.repeat(64)).results);
    const b = await write('b.json', run('b', 21, 20.4, 'b'.repeat(64)).results);
    const old = await write('old.json', run('old', 21, 20.4).results);
    const refused = pool(a, b);
    expect(refused.status).toBe(2);
    expect(refused.stderr).toContain('different product code');
    expect(pool('--allow-mixed-code', a, b).status).toBe(0);
    const unchecked = pool(a, old);
    expect(unchecked.status).toBe(0);
    expect(unchecked.stderr).toContain(`their code was not checked: ${old}`);
  });
});

it('loadRun keeps the file name it was given', async () => {
  const loaded = await loadRun(join(root, 'bench/results/latest.json'));
  expect(loaded.file).toBe(join(root, 'bench/results/latest.json'));
  expect(loaded.results.latency?.cells.length).toBeGreaterThan(0);
});
