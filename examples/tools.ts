import { randomUUID } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  type AdmissionGate,
  type CreateActivitiesOptions,
  createActivities,
  type ToolPolicy,
} from '../activities/create-activities.ts';
import { createBreakerGate } from '../activities/safety/admission-gates.ts';
import { type SafeUrlOptions, safeUrl } from '../activities/safety/safe-url.ts';
import { sandboxedPath } from '../activities/safety/sandbox.ts';
import {
  type CompensationImplementation,
  implementCompensation,
  implementTool,
  ToolError,
  type ToolImplementation,
} from '../activities/tool-implementation.ts';
import type { ToolgateActivities } from '../src/contracts/activity-types.ts';
import { withFileLock } from '../src/support/file-lock.ts';
import {
  addLabel,
  deleteEverything,
  exampleAllowlist,
  exampleCatalog,
  httpFetch,
  readConfig,
  slowSearch,
  stubbornSearch,
  transferFunds,
  writeReport,
} from './contracts.ts';
import { appendJsonLine } from './side-effect-log.ts';

/** Where the example tools keep their observable state. */
export interface ExampleToolPaths {
  readonly dataDir: string;
  /** Settings read by read_config. */
  readonly configFile: string;
  /** The sandbox write_report writes into. */
  readonly reportsDir: string;
  /** One line per executed transfer. */
  readonly ledgerFile: string;
  /** Labels per item, for add_label and its compensation. */
  readonly labelsFile: string;
  /** One line per tool start, stop and abort, for tests and the demo. */
  readonly executionsFile: string;
}

export function exampleToolPaths(dataDir: string): ExampleToolPaths {
  return {
    dataDir,
    configFile: join(dataDir, 'config.json'),
    reportsDir: join(dataDir, 'reports'),
    ledgerFile: join(dataDir, 'ledger.jsonl'),
    labelsFile: join(dataDir, 'labels.json'),
    executionsFile: join(dataDir, 'executions.jsonl'),
  };
}

export interface ExampleTools {
  readonly paths: ExampleToolPaths;
  readonly tools: readonly ToolImplementation[];
  readonly compensations: readonly CompensationImplementation[];
}

/** Settings for the example tools that reach the network. */
export interface ExampleToolOptions {
  /**
   * http_fetch's safeUrl settings: allowed hosts and ports, bounds, and for tests
   * `allowLoopbackForTests`. Default: any public host on ports 80, 443, 8080 and 8443.
   */
  readonly http?: SafeUrlOptions;
}

/** The tail of each label file's queue of updates (see updateLabels). */
const labelQueues = new Map<string, Promise<void>>();

// A Map, not a plain object: an item may be named `__proto__` or `constructor`, which an object
// would answer from its prototype (and an assignment to `__proto__` would silently drop).
async function readLabels(paths: ExampleToolPaths): Promise<Map<string, string[]>> {
  let stored: unknown;
  try {
    stored = JSON.parse(await readFile(paths.labelsFile, 'utf8'));
  } catch {
    return new Map();
  }
  return new Map(
    Object.entries(stored ?? {}).filter((entry): entry is [string, string[]] => Array.isArray(entry[1])),
  );
}

async function writeLabels(paths: ExampleToolPaths, labels: Map<string, string[]>): Promise<void> {
  await mkdir(paths.dataDir, { recursive: true });
  // A fresh name per write: a name from the clock alone would be shared by two writes in one millisecond.
  const temporary = `${paths.labelsFile}.${process.pid}.${randomUUID()}.tmp`;
  // Object.fromEntries defines own properties, so even `__proto__` is written as a plain key.
  await writeFile(temporary, JSON.stringify(Object.fromEntries(labels), null, 2));
  await rename(temporary, paths.labelsFile);
}

/**
 * Runs one read-modify-write of the label store at a time, so concurrent add_label calls (and their
 * undos) never lose each other's labels: a queue per file within this process, and a lock file
 * (`labels.json.lock`) between processes, such as two worker replicas on one volume.
 */
function updateLabels<Result>(
  paths: ExampleToolPaths,
  update: (labels: Map<string, string[]>) => Promise<Result>,
): Promise<Result> {
  const previous = labelQueues.get(paths.labelsFile) ?? Promise.resolve();
  const turn = previous.then(async () => {
    await mkdir(paths.dataDir, { recursive: true });
    return withFileLock(`${paths.labelsFile}.lock`, async () => update(await readLabels(paths)), labelLock);
  });
  const settled = turn.then(
    () => undefined,
    () => undefined,
  );
  labelQueues.set(paths.labelsFile, settled);
  // The last in the queue removes it, so the map does not keep every data directory ever used.
  void settled.then(() => {
    if (labelQueues.get(paths.labelsFile) === settled) labelQueues.delete(paths.labelsFile);
  });
  return turn;
}

/** An update takes milliseconds; a lock held 10 s was left by a process that died holding it. */
const labelLock = {
  staleMs: 10_000,
  waitMs: 4_000,
  // The model reads this message: no paths in it.
  timeoutError: () => new ToolError('The label store is busy; try again.', { effect: 'none' }),
};

/** Builds the example tools over a data directory (created on first use). */
export function createExampleTools(dataDir: string, options: ExampleToolOptions = {}): ExampleTools {
  const paths = exampleToolPaths(dataDir);
  const web = safeUrl({ ports: [80, 443, 8080, 8443], ...options.http });
  const reports = sandboxedPath(paths.reportsDir);
  const logExecution = (tool: string, callId: string, event: string, extra: Record<string, unknown> = {}) =>
    appendJsonLine(paths.executionsFile, { tool, callId, event, ...extra });

  const tools: ToolImplementation[] = [
    implementTool(readConfig, async ({ input, callId }) => {
      let settings: Record<string, unknown>;
      try {
        settings = JSON.parse(await readFile(paths.configFile, 'utf8')) as Record<string, unknown>;
      } catch {
        throw new ToolError('The configuration is not available right now.', { effect: 'none' });
      }
      await logExecution('read_config', callId, 'read', { name: input.name });
      if (!Object.hasOwn(settings, input.name)) {
        throw new ToolError(`There is no setting named ${input.name}.`, { effect: 'none', retryable: false });
      }
      return { name: input.name, value: settings[input.name] };
    }),

    implementTool(slowSearch, async ({ input, signal, callId }) => {
      await logExecution('slow_search', callId, 'start');
      let abortedAtMs: number | undefined;
      signal.addEventListener('abort', () => {
        abortedAtMs = Date.now();
      });
      try {
        await sleep(input.delayMs, undefined, { signal });
      } catch (error) {
        await logExecution('slow_search', callId, 'stopped', { abortedAtMs, stoppedAtMs: Date.now() });
        throw error;
      }
      await logExecution('slow_search', callId, 'finished');
      return { query: input.query, hits: [`${input.query} — result 1`, `${input.query} — result 2`] };
    }),

    implementTool(stubbornSearch, async ({ input, callId }) => {
      // Deliberately ignores its AbortSignal: the executor's deadline must still end the call.
      await logExecution('stubborn_search', callId, 'start');
      await sleep(input.delayMs);
      await logExecution('stubborn_search', callId, 'finished');
      return { query: input.query, hits: [] };
    }),

    implementTool(writeReport, async ({ input, callId, signal }) => {
      const written = await reports.writeNewFile(input.path, input.content, { signal });
      await logExecution('write_report', callId, 'wrote', { bytes: Buffer.byteLength(input.content) });
      return { path: input.path, bytes: Buffer.byteLength(input.content), written: written.length > 0 };
    }),

    implementTool(deleteEverything, async ({ callId }) => {
      // Never reached in the examples: the allowlist refuses it. If it ever runs, the log shows it.
      await logExecution('delete_everything', callId, 'ran');
      return { deleted: 0 };
    }),

    implementTool(transferFunds, async ({ input, key, callId }) => {
      await appendJsonLine(paths.ledgerFile, {
        callId,
        key,
        reference: input.reference,
        from: input.from,
        to: input.to,
        amountCents: input.amountCents,
        currency: input.currency,
      });
      await logExecution('transfer_funds', callId, 'transferred');
      return { transferred: true, reference: input.reference };
    }),

    implementTool(addLabel, async ({ input, callId }) => {
      const added = await updateLabels(paths, async (labels) => {
        const current = new Set(labels.get(input.item) ?? []);
        if (current.has(input.label)) return false;
        current.add(input.label);
        labels.set(input.item, [...current].sort());
        await writeLabels(paths, labels);
        return true;
      });
      await logExecution('add_label', callId, 'added', { item: input.item, label: input.label });
      return { item: input.item, label: input.label, added };
    }),

    // The worker's breaker gate (`exampleLoadGates`) counts this tool's attempts: a transport error
    // or a 5xx/429 is a retryable ToolError, which counts against the site; a refused URL
    // (ToolDenied) sent nothing and counts for nothing.
    implementTool(httpFetch, async ({ input, signal, callId }) => {
      const response = await web.fetch(input.url, { signal });
      await logExecution('http_fetch', callId, 'fetched', { status: response.status, bytes: response.bytes });
      if (response.status >= 500 || response.status === 429) {
        throw new ToolError(`The site answered ${response.status}. Try again later.`, { effect: 'none' });
      }
      return {
        status: response.status,
        contentType: response.contentType ?? null,
        body: response.body,
        url: response.url,
        redirects: response.redirects,
      };
    }),
  ];

  const compensations: CompensationImplementation[] = [
    implementCompensation(addLabel, async ({ input, output, callId }) => {
      // Only undo what this call did: a label that was already there before stays.
      if ((output as { added?: boolean } | null)?.added) {
        await updateLabels(paths, async (labels) => {
          labels.set(
            input.item,
            (labels.get(input.item) ?? []).filter((label) => label !== input.label),
          );
          await writeLabels(paths, labels);
        });
      }
      await logExecution('remove_label', callId, 'removed', { item: input.item, label: input.label });
      return { item: input.item, label: input.label, removed: true };
    }),
  ];

  return { paths, tools, compensations };
}

/**
 * The activities of a worker that runs the example tools: their implementations and compensations,
 * allowlisted by `exampleAllowlist` unless a policy is given. One place, so the embedded default,
 * the example agent and the tests assemble the same worker.
 */
export function createExampleActivities(
  tools: Pick<ExampleTools, 'tools' | 'compensations'>,
  options: Omit<CreateActivitiesOptions, 'tools' | 'compensations' | 'policy'> & {
    readonly policy?: ToolPolicy;
  },
): ToolgateActivities {
  return createActivities({
    catalog: exampleCatalog,
    admissionGates: exampleLoadGates(),
    ...options,
    tools: tools.tools,
    compensations: tools.compensations,
    policy: options.policy ?? { allow: exampleAllowlist },
  });
}

/**
 * The example worker's load gates: a circuit breaker on http_fetch, kept in the cluster, so that a
 * failing site gets no new calls from any worker (5 failed attempts in a row open it for 30 s).
 */
export function exampleLoadGates(): AdmissionGate[] {
  return [createBreakerGate({ http_fetch: { failureThreshold: 5, cooldownMs: 30_000 } })];
}
