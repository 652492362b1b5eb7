import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, type Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createActivities } from '../../activities/create-activities.ts';
import { implementTool } from '../../activities/tool-implementation.ts';
import { ToolgateClient } from '../../src/client/toolgate-client.ts';
import { createWorker } from '../../src/worker/create-worker.ts';
import { installRuntimeLogging } from '../../src/worker/runtime-logging.ts';
import { agent } from '../support/harness.ts';
import {
  brokenLazySchema,
  brokenSchema,
  checkFormats,
  formatsCatalog,
} from '../support/workflows/formats-catalog.ts';

const workflowsPath = fileURLToPath(new URL('../support/workflows/formats-catalog.ts', import.meta.url));

const validInput = {
  email: 'ada@example.com',
  id: '0f8fad5b-d9cb-469f-a165-70867728950e',
  at: '2026-11-30T12:00:00Z',
  site: 'https://docs.example.com/page',
  tag: 'tag-7',
};

/**
 * zod is loaded once per workflow thread and frozen by the SDK (src/worker/shared-libraries.ts).
 * Validation must give the same answers as with a copy per workflow, including zod's built-in
 * formats, whose patterns are part of the frozen module.
 */
describe.each([
  { shareLibraries: true, label: 'shared zod' },
  { shareLibraries: false, label: 'zod per workflow' },
])('validation with $label', ({ shareLibraries }) => {
  let nativeConnection: NativeConnection;
  let connection: Connection;
  let worker: Worker;
  let running: Promise<void>;
  let temporal: Client;
  let client: ToolgateClient;
  let taskQueue: string;

  beforeAll(async () => {
    installRuntimeLogging();
    const address = inject('temporalAddress');
    taskQueue = `formats-${randomUUID()}`;
    nativeConnection = await NativeConnection.connect({ address });
    const activities = createActivities({
      tools: [
        implementTool(checkFormats, async ({ input }) => ({ accepted: input })),
        implementTool(brokenSchema, async () => ({ ran: true })),
        implementTool(brokenLazySchema, async () => ({ ran: true })),
      ],
      policy: { allow: [checkFormats.name, brokenSchema.name, brokenLazySchema.name] },
      approvalPublicKeys: [generateKeyPairSync('ed25519').publicKey],
    });
    worker = await createWorker({
      connection: nativeConnection,
      taskQueue,
      activities,
      workflowsPath,
      shareLibraries,
    });
    running = worker.run();
    connection = await Connection.connect({ address });
    temporal = new Client({ connection });
    client = new ToolgateClient({ client: temporal, taskQueue, catalog: formatsCatalog });
  });

  afterAll(async () => {
    worker?.shutdown();
    await running;
    await nativeConnection?.close();
    await connection?.close();
  });

  it(`${shareLibraries ? 'shares' : 'does not share'} zod and the gates between workflows`, async () => {
    const shared = await temporal.workflow.execute('zodIsShared', {
      workflowId: `shared-${randomUUID()}`,
      taskQueue,
    });
    expect(shared).toBe(shareLibraries);
    // toolgate's own workflow modules are shared with the libraries, never without them.
    const gates = await temporal.workflow.execute('gatesAreShared', {
      workflowId: `gates-shared-${randomUUID()}`,
      taskQueue,
    });
    expect(gates).toBe(shareLibraries);
  });

  it('accepts valid built-in formats, call after call', async () => {
    // Several calls in a row: one thread runs them all, and the global pattern's lastIndex must
    // not carry over from one test to the next.
    for (let round = 0; round < 3; round++) {
      const record = await client.call({ tool: 'check_formats', input: validInput }, agent);
      expect(record).toMatchObject({ status: 'succeeded', output: { accepted: validInput } });
    }
  });

  it.each([
    ['email', { email: 'not-an-email' }],
    ['id', { id: 'not-a-uuid' }],
    ['at', { at: 'yesterday' }],
    ['site', { site: 'https://docs1.example.com/' }],
    ['site', { site: 'http://docs.example.com/' }],
    ['tag', { tag: 'tag-x' }],
  ])('denies an invalid %s with INVALID_INPUT naming the field', async (field, change) => {
    const record = await client.call({ tool: 'check_formats', input: { ...validInput, ...change } }, agent);
    expect(record).toMatchObject({ status: 'denied', reason: 'INVALID_INPUT', effect: 'none' });
    expect(record.message).toContain(`${field}:`);
  });

  it('denies a call whose lazy schema cannot be built, instead of holding it open', async () => {
    const record = await client.call({ tool: 'broken_lazy_schema', input: { text: 'abc' } }, agent);
    expect(record).toMatchObject({ status: 'denied', reason: 'INVALID_INPUT', effect: 'none' });
    expect(record.message).toContain("the tool's schema failed while checking them (SyntaxError)");
  });

  it('denies a call whose schema throws, instead of holding it open', async () => {
    const record = await client.call({ tool: 'broken_schema', input: { text: 'abc' } }, agent);
    expect(record).toMatchObject({ status: 'denied', reason: 'INVALID_INPUT', effect: 'none' });
    // The model learns the kind of error, not its text (that goes to the operator log).
    expect(record.message).toContain("the tool's schema failed while checking them (RangeError)");
    expect(record.message).not.toContain('cannot check');
    // The throw interrupted a parse of the shared zod halfway; later parses in the same thread
    // must still answer right.
    const valid = await client.call({ tool: 'check_formats', input: validInput }, agent);
    expect(valid.status).toBe('succeeded');
    const invalid = await client.call(
      { tool: 'check_formats', input: { ...validInput, email: 'nope' } },
      agent,
    );
    expect(invalid).toMatchObject({ status: 'denied', reason: 'INVALID_INPUT' });
    expect(invalid.message).toContain('email:');
  });
});
