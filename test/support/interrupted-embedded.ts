/**
 * A library caller whose `startEmbedded` is interrupted at the moment the worker starts being
 * created (bundling its workflow code, which cannot itself be cut short). Prints
 * its progress lines as `PROGRESS <line>` and `INTERRUPTED <reason>` when the start rejects, then does nothing more: the process must end on its
 * own, with nothing that the start began left holding it open.
 * Run with `node --import tsx test/support/interrupted-embedded.ts <dataDir>`.
 */
import { Worker } from '@temporalio/worker';
import { exampleToolSet } from '../../examples/tool-set.ts';
import { startEmbedded } from '../../src/dev/embedded.ts';

const dataDir = process.argv[2];
if (!dataDir) throw new Error('usage: interrupted-embedded.ts <dataDir>');
const controller = new AbortController();
const create = Worker.create.bind(Worker);
Worker.create = (options) => {
  const creating = create(options);
  controller.abort(new Error('interrupted while the worker was being created'));
  return creating;
};
startEmbedded({
  tools: exampleToolSet,
  dataDir,
  env: { ...process.env, TEMPORAL_ADDRESS: '', TEMPORAL_PROFILE: '', TEMPORAL_CONFIG_FILE: '' },
  grpcPort: 0,
  uiPort: 0,
  headless: true,
  signal: controller.signal,
  onProgress: (line) => process.stdout.write(`PROGRESS ${line}\n`),
}).then(
  () => process.stdout.write('STARTED\n'),
  (error: unknown) => process.stdout.write(`INTERRUPTED ${(error as Error).message}\n`),
);
