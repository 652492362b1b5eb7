import { Client, Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time.js';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { exampleCatalog } from '../../examples/contracts.ts';
import { ClusterNotReadyError, ToolgateClient } from '../../src/client/toolgate-client.ts';
import { createCliRunner } from '../support/cli-runner.ts';
import { agent } from '../support/harness.ts';

/**
 * A cluster whose namespace lacks toolgate's search attributes (one set up by hand, not by
 * `toolgate dev` or deploy/): a start is refused with a message that says how to register them,
 * not the server's bare "Failed to start Workflow".
 */
describe('a namespace without toolgate search attributes', () => {
  let connection: Connection;
  const namespace = `bare-${Date.now()}`;
  beforeAll(async () => {
    connection = await Connection.connect({ address: inject('temporalAddress') });
    await connection.workflowService.registerNamespace({
      namespace,
      workflowExecutionRetentionPeriod: msToTs('24h'),
    });
  });
  afterAll(async () => connection?.close());

  it('refuses a start with ClusterNotReadyError naming the attribute and the script', async () => {
    const client = new ToolgateClient({
      client: new Client({ connection, namespace }),
      taskQueue: 'toolgate-bare',
      catalog: exampleCatalog,
    });
    const start = client.start({ tool: 'read_config', input: { name: 'region' } }, agent);
    await expect(start).rejects.toBeInstanceOf(ClusterNotReadyError);
    await expect(start).rejects.toThrow(
      new RegExp(
        `namespace "${namespace}" does not have toolgate's search attribute \\w+.*register-search-attributes\\.sh`,
      ),
    );
  });

  it('the CLI says the same', async () => {
    const run = createCliRunner({ TEMPORAL_ADDRESS: inject('temporalAddress') });
    const result = await run('call', 'read_config', '--input', '{"name":"region"}', '--namespace', namespace);
    expect(result.code).not.toBe(0);
    expect(String(result.json['error'])).toContain("does not have toolgate's search attribute");
  });
});
