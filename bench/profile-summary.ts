/**
 * Sums the `.cpuprofile` files that `npm run bench -- --cpu-profile DIR` writes, per thread kind and
 * per where the code lives, so that two codes' profiles can be compared without DevTools.
 *
 *   npx tsx bench/profile-summary.ts --calls N DIR [--calls M OTHER_DIR]
 *
 * `--calls` is what the figures are divided by: usually the measured calls of the variant whose code
 * is of interest (the run's JSON, `latency.cells[].operations`, summed over its cells). Warm-up calls
 * are in the profiles too, so figures per call are slight overestimates, the same for both codes.
 * With two folders, the last table lists the functions whose time per call moved most between them.
 *
 * A workflow bundle is one script to V8, so its frames name the bundle, not toolgate's files. The
 * bench writes each bundle beside the profiles (`workflow-bundle-<hash>.js`, with its inline source
 * map); where the folder holds the bundle a frame points into, the frame is mapped back to the
 * module it came from, and its category says whose code that is (`workflow bundle: toolgate`,
 * `workflow bundle: temporal sdk`, ...). Toolgate's own workflow code can then be compared between
 * two codes without the SDK's and the bare workflows' time in the same figure.
 */
import { readdir, readFile } from 'node:fs/promises';
import { SourceMap } from 'node:module';
import { basename, join } from 'node:path';

interface ProfileNode {
  readonly id: number;
  readonly callFrame: {
    readonly functionName: string;
    readonly url: string;
    readonly lineNumber: number;
    readonly columnNumber?: number;
  };
}

interface CpuProfile {
  readonly nodes: readonly ProfileNode[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

/** Self time in ms, by a key. */
type Totals = Map<string, number>;

export interface ProfileSummary {
  readonly files: number;
  /** `<thread> <category>` → ms. */
  readonly byCategory: Totals;
  /** `<thread> <function> <where>` → ms. */
  readonly byFunction: Totals;
}

/** Where a frame's code lives, from its URL. Workflow bundles have no URL of a source file. */
export function categoryOf(url: string, functionName: string): string {
  if (url === '') return functionName.startsWith('(') ? functionName : 'native or bundle';
  if (url.startsWith('node:')) return 'node internals';
  // The workflow bundle holds toolgate's workflow code, the SDK's workflow side and the bench's
  // bare workflows together; its functions are named in the table of functions.
  if (/\/workflow-bundle-[0-9a-f]+\.js$/.test(url) || url.startsWith('evalmachine.'))
    return 'workflow bundle';
  if (url.startsWith('wasm://')) return 'wasm';
  if (url.includes('/node_modules/@temporalio/')) return 'temporal sdk';
  if (url.includes('/node_modules/zod/')) return 'zod';
  if (url.includes('/node_modules/')) return 'other dependencies';
  for (const folder of ['src', 'workflows', 'activities']) {
    if (url.includes(`/${folder}/`) && !url.includes('/bench/')) return 'toolgate';
  }
  if (url.includes('/bench/')) return 'bench';
  return 'other';
}

/** Whose code a module of a workflow bundle is, from its source path. */
export function bundleCategoryOf(source: string): string {
  const owner = categoryOf(source.startsWith('/') ? `file://${source}` : source, 'x');
  return `workflow bundle: ${owner === 'other' || owner === 'node internals' ? 'other' : owner}`;
}

/** The file name a worker gives a bundle's script: the `file` of the bundle's inline source map. */
export function bundleFileName(code: string): string {
  const file = inlineSourceMap(code).file;
  if (typeof file !== 'string' || !/^workflow-bundle-[0-9a-f]+\.js$/.test(basename(file))) {
    throw new Error('The workflow bundle has no source map naming a workflow-bundle-<hash>.js file.');
  }
  return basename(file);
}

function inlineSourceMap(code: string): { file?: unknown } & Record<string, unknown> {
  // webpack writes `data:application/json;charset=utf-8;base64,`; the parameters may vary.
  const marker = '//# sourceMappingURL=data:application/json';
  const at = code.lastIndexOf(marker);
  const payload = at < 0 ? undefined : /^[^,\s]*;base64,(\S+)\s*$/.exec(code.slice(at + marker.length));
  if (!payload?.[1]) throw new Error('The workflow bundle has no inline source map.');
  return JSON.parse(Buffer.from(payload[1], 'base64').toString('utf8'));
}

/** Maps frames of the bundles in a folder back to their modules. */
export interface BundleMaps {
  /** The module and line a frame's position came from, or undefined where no bundle maps it. */
  find(url: string, lineNumber: number, columnNumber: number): { source: string; line: number } | undefined;
}

export function bundleMaps(bundles: ReadonlyMap<string, string>): BundleMaps {
  const maps = new Map<string, SourceMap>();
  for (const [name, code] of bundles) maps.set(name, new SourceMap(inlineSourceMap(code) as never));
  return {
    find(url, lineNumber, columnNumber) {
      const map = maps.get(basename(url.replace(/^file:\/\//, '')));
      if (!map || lineNumber < 0) return undefined;
      const entry = map.findEntry(lineNumber, Math.max(0, columnNumber)) as {
        originalSource?: string;
        originalLine?: number;
      };
      if (!entry.originalSource) return undefined;
      return { source: entry.originalSource.replace(/^file:\/\//, ''), line: entry.originalLine ?? 0 };
    },
  };
}

const noBundles: BundleMaps = { find: () => undefined };

/** A name for a frame's file, short and the same on both codes' worktrees. */
function whereOf(url: string, lineNumber: number): string {
  if (url === '') return '';
  const path = url.replace(/^file:\/\//, '');
  const inModules = path.lastIndexOf('/node_modules/');
  const short =
    inModules >= 0
      ? path.slice(inModules + '/node_modules/'.length)
      : path
          .replace(/^.*\/(workflow-bundle)-[0-9a-f]+\.js$/, '$1')
          .replace(/^.*?\/(src|workflows|activities|bench)\//, '$1/');
  return `${short}:${lineNumber + 1}`;
}

function add(totals: Totals, key: string, ms: number): void {
  totals.set(key, (totals.get(key) ?? 0) + ms);
}

/** Node names profiles `CPU.<date>.<time>.<pid>.<thread id>.<seq>.cpuprofile`; thread 0 is main. */
export function threadOf(fileName: string): string {
  const parts = fileName.split('.');
  return parts.length >= 7 && parts[parts.length - 3] === '0' ? 'main' : 'worker thread';
}

export function summarise(
  profiles: readonly { name: string; profile: CpuProfile }[],
  bundles: BundleMaps = noBundles,
): ProfileSummary {
  const byCategory: Totals = new Map();
  const byFunction: Totals = new Map();
  for (const { name, profile } of profiles) {
    const thread = threadOf(name);
    const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
    profile.samples.forEach((nodeId, index) => {
      const node = nodes.get(nodeId);
      if (!node) return;
      // Each delta is the time before its sample: count it against the frame sampled.
      const ms = (profile.timeDeltas[index] ?? 0) / 1000;
      const { functionName, url, lineNumber, columnNumber = 0 } = node.callFrame;
      const mapped = bundles.find(url, lineNumber, columnNumber);
      const category = mapped ? bundleCategoryOf(mapped.source) : categoryOf(url, functionName);
      const where = mapped ? whereOf(`file://${mapped.source}`, mapped.line) : whereOf(url, lineNumber);
      add(byCategory, `${thread}\t${category}`, ms);
      add(byFunction, `${thread}\t${functionName || '(anonymous)'}\t${where}`, ms);
    });
  }
  return { files: profiles.length, byCategory, byFunction };
}

async function readProfiles(folder: string): Promise<{ name: string; profile: CpuProfile }[]> {
  const names = (await readdir(folder)).filter((name) => name.endsWith('.cpuprofile')).sort();
  if (names.length === 0) throw new Error(`${folder} holds no .cpuprofile files.`);
  return Promise.all(
    names.map(async (name) => ({
      name,
      profile: JSON.parse(await readFile(join(folder, name), 'utf8')) as CpuProfile,
    })),
  );
}

/** The workflow bundles the bench wrote beside the profiles (none in folders from before it did). */
async function readBundles(folder: string): Promise<Map<string, string>> {
  const names = (await readdir(folder)).filter((name) => /^workflow-bundle-[0-9a-f]+\.js$/.test(name));
  return new Map(
    await Promise.all(names.map(async (name) => [name, await readFile(join(folder, name), 'utf8')] as const)),
  );
}

function perCall(totals: Totals, calls: number): Map<string, number> {
  return new Map([...totals].map(([key, ms]) => [key, ms / calls]));
}

function table(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const line = (cells: readonly string[]) => `| ${cells.join(' | ')} |`;
  return [line(headers), line(headers.map(() => '---')), ...rows.map(line)].join('\n');
}

async function main(argv: readonly string[]): Promise<void> {
  const runs: { folder: string; calls: number }[] = [];
  for (let index = 0; index < argv.length; index++) {
    if (argv[index] !== '--calls') throw new Error(`Expected --calls N FOLDER, got ${argv[index]}.`);
    const calls = Number(argv[index + 1]);
    const folder = argv[index + 2];
    if (!Number.isFinite(calls) || calls <= 0 || !folder) {
      throw new Error('Usage: npx tsx bench/profile-summary.ts --calls N DIR [--calls M OTHER_DIR]');
    }
    runs.push({ folder, calls });
    index += 2;
  }
  if (runs.length === 0 || runs.length > 2) {
    throw new Error('Usage: npx tsx bench/profile-summary.ts --calls N DIR [--calls M OTHER_DIR]');
  }
  const summaries = await Promise.all(
    runs.map(async (run) => {
      const bundles = await readBundles(run.folder);
      return {
        ...run,
        bundles: bundles.size,
        summary: summarise(await readProfiles(run.folder), bundleMaps(bundles)),
      };
    }),
  );
  const categories = summaries.map((run) => perCall(run.summary.byCategory, run.calls));
  const categoryKeys = [...new Set(categories.flatMap((totals) => [...totals.keys()]))].sort();
  const format = (ms: number | undefined) => (ms ?? 0).toFixed(3);
  console.log(
    `Profiles: ${summaries.map((run) => `${run.folder} (${run.summary.files} files, ${run.bundles} workflow bundles, ${run.calls} calls)`).join(' against ')}\n`,
  );
  console.log('Self time, ms per call, by thread and where the code lives:\n');
  console.log(
    table(
      [
        'thread',
        'code',
        ...summaries.map((_, index) => `run ${index + 1}`),
        ...(summaries.length === 2 ? ['2 − 1'] : []),
      ],
      categoryKeys.map((key) => {
        const values = categories.map((totals) => totals.get(key));
        return [
          ...key.split('\t'),
          ...values.map(format),
          ...(values.length === 2 ? [format((values[1] ?? 0) - (values[0] ?? 0))] : []),
        ];
      }),
    ),
  );
  const functions = summaries.map((run) => perCall(run.summary.byFunction, run.calls));
  const rows = (order: (key: string) => number) =>
    [...new Set(functions.flatMap((totals) => [...totals.keys()]))]
      .sort((a, b) => order(b) - order(a))
      .slice(0, 30)
      .map((key) => {
        const values = functions.map((totals) => totals.get(key));
        return [
          ...key.split('\t'),
          ...values.map(format),
          ...(values.length === 2 ? [format((values[1] ?? 0) - (values[0] ?? 0))] : []),
        ];
      });
  const headers = ['thread', 'function', 'where', ...summaries.map((_, index) => `run ${index + 1}`)];
  console.log('\nThe 30 functions with the most self time per call in run 1:\n');
  console.log(
    table(
      summaries.length === 2 ? [...headers, '2 − 1'] : headers,
      rows((key) => functions[0]?.get(key) ?? 0),
    ),
  );
  if (summaries.length === 2) {
    console.log('\nThe 30 functions whose self time per call moved most between the runs:\n');
    console.log(
      table(
        [...headers, '2 − 1'],
        rows((key) => Math.abs((functions[1]?.get(key) ?? 0) - (functions[0]?.get(key) ?? 0))),
      ),
    );
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main(process.argv.slice(2)).catch((error: unknown) => {
    console.error(`profile-summary: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(2);
  });
}
