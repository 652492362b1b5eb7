import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { exampleToolSet } from '../../examples/tool-set.ts';
import { type DevServer, findFreePort, findTemporalCli, startDevServer } from '../../src/dev/index.ts';
import { bundleToolgateWorkflows } from '../../src/worker/create-worker.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    temporalAddress: string;
    temporalCliPath: string;
    /** The server's Prometheus endpoint: what tests count requests with. */
    temporalMetricsUrl: string;
    workflowBundle: string;
  }
}

let server: DevServer | undefined;
let directory: string | undefined;

/**
 * One real Temporal dev server for the whole run, on free ports with a throwaway database. On a
 * machine that never built the CLI, this builds it first (minutes, with progress on stderr).
 */
export async function setup(project: TestProject): Promise<void> {
  const cli = await findTemporalCli({
    onProgress: (line) => process.stderr.write(`[temporal cli] ${line}\n`),
  });
  directory = await mkdtemp(join(tmpdir(), 'toolgate-test-'));
  const metricsPort = await findFreePort(0, '127.0.0.1');
  server = await startDevServer({
    cli,
    dbFile: join(directory, 'temporal.db'),
    grpcPort: 0,
    uiPort: 0,
    headless: true,
    extraArgs: ['--metrics-port', String(metricsPort)],
  });
  const bundle = await bundleToolgateWorkflows(exampleToolSet.workflowsPath);
  project.provide('temporalAddress', server.address);
  project.provide('temporalCliPath', cli.path);
  project.provide('temporalMetricsUrl', `http://127.0.0.1:${metricsPort}/metrics`);
  project.provide('workflowBundle', bundle.code);
}

export async function teardown(): Promise<void> {
  await server?.stop();
  if (directory) await rm(directory, { recursive: true, force: true });
}
