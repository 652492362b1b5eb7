import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BenchResults } from '../../bench/main.ts';
import {
  benchDigest,
  checkDistinctRuns,
  checkSameCode,
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
    meta: { startedAt: `2026-12-01 run ${file}`, quick: false, cores: 2, repetitions: 3 },
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

  it('holds a target only when every condition holds, out of reach only when every miss is', () => {
    /** A run at 1 and 4 callers: B at 20 and 50 ms; C and B-idx as given per condition. */
    const twoLevels = (file: string, c1: [number, number], c4: [number, number]): PoolRun => ({
      file,
      results: {
        meta: { startedAt: file, quick: false, cores: 2, repetitions: 3 },
        latency: {
          cells: [
            cell('B', 'c1', 20),
            cell('C', 'c1', c1[0]),
            cell('B-idx', 'c1', c1[1]),
            cell('B', 'c4', 50),
            cell('C', 'c4', c4[0]),
            cell('B-idx', 'c4', c4[1]),
          ],
        },
        targets: [],
        incomplete: [],
      } as unknown as BenchResults,
    });
    // c1 holds (C 1.05), c4 misses with its floor holding (C 1.16, B-idx 1.04): the target misses.
    const oneMisses = p50Line([twoLevels('a', [21, 20.4], [58, 52]), twoLevels('b', [21, 20.4], [58, 52])]);
    expect(oneMisses.cells.map((c) => c.verdict)).toEqual(['holds', 'misses']);
    expect(oneMisses.verdict).toBe('misses');
    // c1 out of reach (C 1.15, B-idx 1.12), c4 holds: the target is out of reach.
    const reach = p50Line([twoLevels('a', [23, 22.4], [52, 51]), twoLevels('b', [23, 22.4], [52, 51])]);
    expect(reach.cells.map((c) => c.verdict)).toEqual(['out of reach', 'holds']);
    expect(reach.verdict).toBe('out of reach');
    // One cell out of reach and one plain miss: a miss.
    const both = p50Line([twoLevels('a', [23, 22.4], [58, 52]), twoLevels('b', [23, 22.4], [58, 52])]);
    expect(both.verdict).toBe('misses');
  });

  it('says a target was not measured when every run was left out of it', () => {
    const pooled = p50Line([run('x', 21, undefined), run('y', 22, undefined)]);
    expect(pooled).toMatchObject({ runs: 0, verdict: 'not measured', leftOut: ['x', 'y'] });
    expect(renderPool([run('x', 21, undefined)], [pooled])).toContain('No run measured it.');
    // A yes-or-no target a run did not measure (no duplicate calls) is left out the same way.
    const noDuplicates = poolTargets([run('x', 21, 20)]).find((t) => t.target.startsWith('D runs'));
    expect(noDuplicates).toBeUndefined();
  });

  it('pools the A/A control as a control, leaving out the runs without B-twin', () => {
    const withTwin = (file: string, twinP50: number): PoolRun => {
      const base = run(file, 21, 20.4);
      const cells = [...base.results.latency!.cells, cell('B-twin', 'c1', twinP50)];
      return { file, results: { ...base.results, latency: { ...base.results.latency!, cells } } };
    };
    // B-twin/B: 1.12, 0.97, 1.01 → median 1.01, one run of three missing.
    const runs = [withTwin('a', 22.4), withTwin('b', 19.4), withTwin('c', 20.2), run('old', 21, 20.4)];
    const control = poolTargets(runs).find((target) => target.target.startsWith('A/A control: B-twin p50'))!;
    expect(control).toMatchObject({ runs: 3, holdingRuns: 2, verdict: 'holds', leftOut: ['old'] });
    expect(control.cells[0]!.median).toBeCloseTo(1.01, 10);
    expect(control.cells[0]!.max).toBeCloseTo(1.12, 10);
    expect(control.control).toContain('not a target');
    expect(renderPool(runs, [control])).toContain(
      "Where a variant identical to B misses a line, that miss is the bench's own noise.",
    );
    // C's own target still pools over every run.
    expect(p50Line(runs)).toMatchObject({ runs: 4 });
  });

  it('refuses the same run given twice, and a figure that is no ratio', () => {
    expect(() =>
      checkDistinctRuns([run('a', 21, 20), run('a-copy', 21, 20)].map((r, i) => ({ ...r, file: `f${i}` }))),
    ).not.toThrow();
    const one = run('a', 21, 20);
    expect(() => checkDistinctRuns([one, { ...one, file: 'copy-of-a' }])).toThrow(
      'copy-of-a is the same run as a',
    );
    expect(() => p50Line([run('a', 0, 20), run('b', 21, 20)])).toThrow('not a ratio');
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
      // The bench's digest covers bench/ without its results.
      await mkdir(join(base, 'bench', 'results'), { recursive: true });
      await writeFile(join(base, 'bench', 'main.ts'), 'export {};\n');
      const bench = await benchDigest(base);
      await writeFile(join(base, 'bench', 'results', 'latest.json'), '{}\n');
      expect(await benchDigest(base)).toBe(bench);
      await writeFile(join(base, 'bench', 'main.ts'), 'export const changed = 1;\n');
      expect(await benchDigest(base)).not.toBe(bench);
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
    const failed = await write('failed.json', {
      ...run('failed', 21, 20.4).results,
      incomplete: ['C c1: 3 errors (deadline)'],
    });
    const cases: Array<[string[], RegExp]> = [
      [[good], /give two or more result files \(got 1\)/],
      [[good, join(directory, 'missing.json')], /missing\.json: cannot read it \(ENOENT\)/],
      [[good, markdownFile], /latest\.md: not JSON\. Give the \.json/],
      [[good, quick], /a --quick smoke run/],
      [[good, noLatency], /not the results of a bench run with a latency phase/],
      [['--bogus', good], /Unknown option '--bogus'.*\n.*--help/],
      [[good, failed], /failed\.json: not every call of that run completed \(C c1: 3 errors/],
      [[good, good], /good\.json is the same run as .*good\.json/],
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
