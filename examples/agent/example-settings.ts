/** Settings shared by the example's parent process and its worker processes. */

/** Printed on stdout once the worker polls, so the parent knows it may go on. */
export const workerReadyLine = 'example worker ready';

/** Where a worker process finds its server, data and prebuilt workflow bundle. */
export interface ExampleWorkerSettings {
  readonly address: string;
  readonly namespace: string;
  readonly taskQueue: string;
  readonly dataDir: string;
  readonly bundleFile: string;
}

export function workerSettingsToEnv(settings: ExampleWorkerSettings): Record<string, string> {
  return {
    TOOLGATE_EXAMPLE_ADDRESS: settings.address,
    TOOLGATE_EXAMPLE_NAMESPACE: settings.namespace,
    TOOLGATE_EXAMPLE_TASK_QUEUE: settings.taskQueue,
    TOOLGATE_EXAMPLE_DATA_DIR: settings.dataDir,
    TOOLGATE_EXAMPLE_BUNDLE: settings.bundleFile,
  };
}

export function settingsFromEnv(env: NodeJS.ProcessEnv): ExampleWorkerSettings {
  const read = (name: string) => {
    const value = env[name];
    if (!value) throw new Error(`${name} is not set; start this worker through run-example-agent.ts.`);
    return value;
  };
  return {
    address: read('TOOLGATE_EXAMPLE_ADDRESS'),
    namespace: read('TOOLGATE_EXAMPLE_NAMESPACE'),
    taskQueue: read('TOOLGATE_EXAMPLE_TASK_QUEUE'),
    dataDir: read('TOOLGATE_EXAMPLE_DATA_DIR'),
    bundleFile: read('TOOLGATE_EXAMPLE_BUNDLE'),
  };
}
