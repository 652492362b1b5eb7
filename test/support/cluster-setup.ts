import type { TestProject } from 'vitest/node';
import { findTemporalCli } from '../../src/dev/index.ts';
import { type ClusterStack, startClusterStack } from './cluster-stack.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    clusterAddress: string;
    clusterMetricsUrl: string;
    clusterNamespace: string;
    clusterWorkDir: string;
    /** What ran: the server and PostgreSQL versions, and how long each step of the set-up took. */
    clusterReport: string;
  }
}

let stack: ClusterStack | undefined;

/** `npm run test:cluster`: the compose stack as real processes, once for the run (cluster-stack.ts). */
export async function setup(project: TestProject): Promise<void> {
  const progress = (line: string) => process.stderr.write(`[cluster] ${line}\n`);
  const cli = await findTemporalCli({ onProgress: progress });
  stack = await startClusterStack(cli.path, progress);
  const report = `Temporal server ${stack.serverVersion} (built from Go modules) on PostgreSQL ${stack.postgresVersion} at ${stack.address}; set-up ms ${JSON.stringify(stack.timings)}`;
  progress(report);
  project.provide('clusterAddress', stack.address);
  project.provide('clusterMetricsUrl', stack.metricsUrl);
  project.provide('clusterNamespace', stack.namespace);
  project.provide('clusterWorkDir', stack.workDir);
  project.provide('clusterReport', report);
}

export async function teardown(): Promise<void> {
  await stack?.stop();
}
