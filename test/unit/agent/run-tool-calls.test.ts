import { describe, expect, it } from 'vitest';
import { exampleCatalog } from '../../../examples/contracts.ts';
import { answerAnthropicToolUse } from '../../../src/agent/anthropic.ts';
import {
  awaitPendingCall,
  concurrencyLimit,
  type KeyFunction,
  runToolCalls,
} from '../../../src/agent/run-tool-calls.ts';
import { ToolgateUsageError } from '../../../src/client/toolgate-client.ts';
import type { CallContext } from '../../../src/contracts/call-record.ts';
import { createCatalog } from '../../../src/contracts/define-tool.ts';
import { payInvoiceWithBuggyKey } from '../../support/throwing-key-contract.ts';
import { createFakeClient } from './fake-client.ts';

const context: CallContext = { tenant: 'acme', principal: 'agent-7', principalKind: 'agent' };
const transfer = { reference: 'INV-7', from: 'AA', to: 'BB', amountCents: 100, currency: 'EUR', memo: null };

describe('a call context the client refuses', () => {
  it('tells the model not to retry: the set-up is wrong, not the service', async () => {
    const client = createFakeClient({});
    const refusing = {
      ...client,
      start: async () => {
        throw new ToolgateUsageError('context.tenant must be 1-64 letters, digits, _ . or -.');
      },
    };
    const errors: unknown[] = [];
    const [outcome] = await runToolCalls(
      [{ id: 'toolu_1', name: 'read_config', input: { name: 'region' } }],
      {
        client: refusing,
        context: { ...context, tenant: 'acme corp' },
        catalog: exampleCatalog,
        onError: (error) => errors.push(error),
      },
    );
    // Before: "could not run this call right now. Retrying the same call later may help."
    expect(outcome!.text).toMatch(/^Error TOOL_FAILED: The tool service is set up wrongly/);
    expect(outcome!.text).toContain('Retrying will not help');
    expect(outcome!.state).toBe('not_started');
    expect(errors).toHaveLength(1);
  });
});

describe('bounded fan-out', () => {
  it('refuses a maxConcurrency that is not a number of at least 1, before any call starts', async () => {
    expect(concurrencyLimit(undefined)).toBe(4);
    expect(concurrencyLimit(2.7)).toBe(2);
    for (const bad of [Number.NaN, Number.POSITIVE_INFINITY, 0, 0.5, -3]) {
      expect(() => concurrencyLimit(bad)).toThrow(/maxConcurrency must be a finite number of at least 1/);
    }
    const client = createFakeClient({ read_config: { kind: 'closed', status: 'succeeded', output: 1 } });
    const calls = [{ id: 'toolu_1', name: 'read_config', input: { name: 'region' } }];
    // Before, NaN made zero lanes: the promise resolved with holes and no call ever ran.
    await expect(
      runToolCalls(calls, { client, context, catalog: exampleCatalog, maxConcurrency: Number.NaN }),
    ).rejects.toThrow(/got NaN/);
    expect(client.maxConcurrent).toBe(0);
  });

  it('runs at most 2 of 5 slow calls at once, so the turn takes about 3 rounds', async () => {
    const roundMs = 200;
    const client = createFakeClient({
      slow_search: { kind: 'closed', status: 'succeeded', output: 'ok', delayMs: roundMs },
    });
    const calls = Array.from({ length: 5 }, (_, index) => ({
      id: `toolu_${index}`,
      name: 'slow_search',
      input: { query: `q${index}`, delayMs: roundMs },
    }));
    const startedAt = performance.now();
    const outcomes = await runToolCalls(calls, {
      client,
      context,
      catalog: exampleCatalog,
      maxConcurrency: 2,
    });
    const elapsedMs = performance.now() - startedAt;
    expect(client.maxConcurrent).toBe(2);
    expect(elapsedMs).toBeGreaterThanOrEqual(3 * roundMs - 20);
    expect(elapsedMs).toBeLessThan(4 * roundMs);
    expect(outcomes.map((outcome) => outcome.id)).toEqual(calls.map((call) => call.id));
    expect(outcomes.every((outcome) => outcome.text === '"ok"')).toBe(true);
  });

  it('keeps the other results when one call fails and one cannot be started', async () => {
    const client = createFakeClient({
      read_config: { kind: 'closed', status: 'succeeded', output: 1, delayMs: 30 },
      slow_search: { kind: 'closed', status: 'timeout', reason: 'TIMEOUT', delayMs: 10 },
      add_label: { kind: 'throws', message: 'socket hang up' },
    });
    const errors: unknown[] = [];
    const outcomes = await runToolCalls(
      [
        { id: 'a', name: 'slow_search', input: { query: 'q', delayMs: 1 } },
        { id: 'b', name: 'add_label', input: { item: 'i', label: 'l' } },
        { id: 'c', name: 'read_config', input: { name: 'x' } },
      ],
      { client, context, catalog: exampleCatalog, onError: (error) => errors.push(error) },
    );
    expect(outcomes.map((outcome) => [outcome.id, outcome.state, outcome.isError])).toEqual([
      ['a', 'closed', true],
      ['b', 'not_started', true],
      ['c', 'closed', false],
    ]);
    expect(outcomes[1]!.text).not.toContain('socket');
    expect(errors).toHaveLength(1);
  });
});

describe('approval modes', () => {
  it('return-pending answers at once with the call ID; awaitPendingCall gets the outcome later', async () => {
    const client = createFakeClient({ transfer_funds: { kind: 'awaiting_approval' } });
    const { message, outcomes } = await answerAnthropicToolUse(
      {
        content: [
          {
            type: 'tool_use',
            id: 'toolu_1',
            name: 'transfer_funds',
            input: transfer,
            caller: { type: 'direct' },
          },
        ],
      },
      { client, context, catalog: exampleCatalog, pendingPollIntervalMs: 5 },
    );
    expect(outcomes[0]!.state).toBe('pending');
    expect(outcomes[0]!.callId).toBe('toolgate/acme/transfer_funds/k/transfer-INV-7');
    expect(message.content[0]).toMatchObject({ tool_use_id: 'toolu_1' });
    expect(String((message.content[0] as { content: string }).content)).toContain(
      'Call ID: toolgate/acme/transfer_funds/k/transfer-INV-7',
    );
    const later = await awaitPendingCall(client, outcomes[0]!);
    expect(later.record?.status).toBe('awaiting_approval');
  });

  it('wait mode holds the call until the client reports it closed', async () => {
    const client = createFakeClient({
      transfer_funds: { kind: 'closed', status: 'denied', reason: 'APPROVAL_REJECTED', delayMs: 50 },
    });
    const [outcome] = await runToolCalls([{ id: 't', name: 'transfer_funds', input: transfer }], {
      client,
      context,
      catalog: exampleCatalog,
      approvalMode: 'wait',
    });
    expect(outcome!.state).toBe('closed');
    expect(outcome!.text).toMatch(/^Error APPROVAL_REJECTED/);
  });
});

describe('idempotency keys from agents', () => {
  it('derives the same contract key for a re-sent call with a new tool_use id', async () => {
    const client = createFakeClient({ transfer_funds: { kind: 'closed', status: 'succeeded', output: 1 } });
    const options = { client, context, catalog: exampleCatalog, approvalMode: 'wait' as const };
    const [first] = await runToolCalls([{ id: 'toolu_A', name: 'transfer_funds', input: transfer }], options);
    const [second] = await runToolCalls(
      [{ id: 'toolu_B', name: 'transfer_funds', input: transfer }],
      options,
    );
    expect(client.starts.map((start) => start.request.key)).toEqual(['transfer-INV-7', 'transfer-INV-7']);
    expect(first!.callId).toBe(second!.callId);
  });

  it('asks the caller key function, with tool, input and context but never the tool_use id', async () => {
    const client = createFakeClient({ write_report: { kind: 'closed', status: 'succeeded', output: 1 } });
    const seen: unknown[][] = [];
    const keyFor: KeyFunction = (...args) => {
      seen.push(args);
      return `report-${(args[1] as { path: string }).path.replace(/\W/g, '-')}`;
    };
    await runToolCalls([{ id: 'toolu_X', name: 'write_report', input: { path: 'q3/a.md', content: 'x' } }], {
      client,
      context,
      catalog: exampleCatalog,
      keyFor,
    });
    expect(seen).toEqual([['write_report', { path: 'q3/a.md', content: 'x' }, context]]);
    expect(client.starts[0]!.request.key).toBe('report-q3-a-md');
  });

  it('sends no key when neither gives one, so an irreversible tool is denied KEY_REQUIRED by the workflow', async () => {
    const client = createFakeClient({
      write_report: { kind: 'closed', status: 'denied', reason: 'KEY_REQUIRED' },
    });
    const [outcome] = await runToolCalls(
      [{ id: 'w', name: 'write_report', input: { path: 'a.md', content: 'x' } }],
      {
        client,
        context,
        catalog: exampleCatalog,
      },
    );
    expect(client.starts[0]!.request.key).toBeUndefined();
    expect(outcome!.text).toMatch(/^Error KEY_REQUIRED: .*business key/);
  });
});

describe('a key function that throws', () => {
  it('answers INVALID_INPUT, not a service failure the model would retry, and starts nothing', async () => {
    const client = createFakeClient({ pay_invoice: { kind: 'closed', status: 'succeeded', output: 1 } });
    const errors: unknown[] = [];
    const [outcome] = await runToolCalls([{ id: 'p', name: 'pay_invoice', input: { invoice: null } }], {
      client,
      context,
      catalog: createCatalog([payInvoiceWithBuggyKey]),
      onError: (error) => errors.push(error),
    });
    expect(client.starts).toHaveLength(0);
    expect(outcome).toMatchObject({ id: 'p', state: 'not_started', isError: true });
    expect(outcome!.text).toMatch(/^Error INVALID_INPUT: No idempotency key could be derived/);
    expect(outcome!.text).toContain('will not help');
    expect(errors).toHaveLength(1);
  });
});

describe('one preparation per call', () => {
  it('looks the tool up once, in prepareCall, from the model call to the start', async () => {
    // Counts every read of a tool's contract from the catalog.
    const reads: string[] = [];
    const counted = new Proxy(exampleCatalog, {
      get(target, name, receiver) {
        if (typeof name === 'string') reads.push(name);
        return Reflect.get(target, name, receiver);
      },
    });
    const client = createFakeClient({ transfer_funds: { kind: 'awaiting_approval' } });
    const [outcome] = await runToolCalls([{ id: 'toolu_1', name: 'transfer_funds', input: transfer }], {
      client,
      context,
      catalog: counted,
      keyFor: () => 'fallback-key',
    });
    // The contract's key (not the caller's fallback) and the approval tier (so the call is
    // reported pending at once) both came from that one read.
    expect(client.starts[0]!.request.key).toBe('transfer-INV-7');
    expect(outcome!.state).toBe('pending');
    expect(reads.filter((name) => name === 'transfer_funds')).toHaveLength(1);
  });
});
