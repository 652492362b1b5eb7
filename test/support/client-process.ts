/**
 * A caller in its own process: starts one call, prints `STARTED <callId>`, then waits forever, so a
 * fault test can SIGKILL it between start() and result().
 */
import { Client, Connection } from '@temporalio/client';
import { exampleCatalog } from '../../examples/contracts.ts';
import { ToolgateClient } from '../../src/client/toolgate-client.ts';

const options = JSON.parse(process.argv[2] ?? '{}');
const connection = await Connection.connect({ address: options.address });
const client = new ToolgateClient({
  client: new Client({ connection }),
  taskQueue: options.taskQueue,
  catalog: exampleCatalog,
});
const started = await client.start(options.request, options.context);
process.stdout.write(`STARTED ${started.callId}\n`);
setInterval(() => undefined, 60_000);
