import { generateKeyPairSync } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exampleAllowlist, exampleCatalog } from '../../examples/contracts.ts';
import { createApprovalSigner, decisionClaims } from '../../src/client/approval-signer.ts';
import type { CallRecord } from '../../src/contracts/call-record.ts';
import { lookupTool } from '../../src/contracts/define-tool.ts';
import { checkInputLimits } from '../../src/contracts/limits.ts';
import { decisionSignal } from '../../workflows/messages.ts';
import { agent, createHarness, type Harness } from '../support/harness.ts';
import { hostilePaths, hostileUrls, legitimatePaths } from '../support/hostile-inputs.ts';

const signalKinds = [
  'garbage',
  'forged',
  'self',
  'agent',
  'wrong-hash',
  'unlisted',
  'valid-approve',
  'valid-reject',
] as const;
type SignalKind = (typeof signalKinds)[number];

let run = 0;
const unique = () => `${Date.now().toString(36)}-${run}`;

/** Arguments that are valid for a tool most of the time, and broken in many ways otherwise. */
const argumentsFor = (tool: string): fc.Arbitrary<unknown> => {
  const valid: Record<string, fc.Arbitrary<Record<string, unknown>>> = {
    read_config: fc.record({ name: fc.constantFrom('region', 'retries', 'region', 'missing', 'bad name!') }),
    slow_search: fc.record({
      query: fc.string({ maxLength: 20 }),
      delayMs: fc.integer({ min: -5, max: 30 }),
    }),
    stubborn_search: fc.record({
      query: fc.string({ minLength: 1, maxLength: 5 }),
      delayMs: fc.constantFrom(0, 5),
    }),
    write_report: fc.record({
      path: fc.oneof(
        fc.constantFrom(...legitimatePaths).map((path) => `${unique()}/${path}`),
        fc.constantFrom(...hostilePaths.map(([, path]) => path)),
      ),
      content: fc.string({ maxLength: 50 }),
    }),
    transfer_funds: fc.record({
      reference: fc.constant('REF'),
      from: fc.constantFrom('ACC-1', 'ACC-1', 'ACC-1', 'acc-1'),
      to: fc.constant('ACC-2'),
      amountCents: fc.oneof(fc.integer({ min: 1, max: 5_000 }), fc.constantFrom(0, -5, 1.5)),
      currency: fc.constantFrom('EUR', 'USD', 'GBP', 'BTC'),
      memo: fc.constantFrom(null, 'rent'),
    }),
    add_label: fc.record({
      item: fc.constantFrom('item-1', 'item 2'),
      label: fc.constantFrom('urgent', 'URGENT'),
    }),
    http_fetch: fc.record({
      url: fc.constantFrom(...hostileUrls.map(([, url]) => url), 'not a url', 'ftp://x.y'),
    }),
    delete_everything: fc.record({ confirm: fc.boolean() }),
  };
  const base = Object.hasOwn(valid, tool)
    ? valid[tool]!
    : fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue());
  return fc.oneof(
    { weight: 8, arbitrary: base },
    { weight: 1, arbitrary: base.map((input) => ({ ...input, extra: 'smuggled' })) },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  );
};

const toolNames = fc.oneof(
  {
    weight: 12,
    arbitrary: fc.constantFrom(
      ...Object.keys(exampleCatalog),
      'transfer_funds',
      'transfer_funds',
      'write_report',
    ),
  },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      '__proto__',
      'constructor',
      'toString',
      'READ_CONFIG',
      'read_config ',
      'run_shell',
    ),
  },
  { weight: 1, arbitrary: fc.string({ minLength: 1, maxLength: 12 }) },
);

const scenario = toolNames.chain((tool) =>
  fc.record({
    tool: fc.constant(tool),
    input: argumentsFor(tool),
    withKey: fc.constantFrom(true, true, true, false),
    // Mostly hostile signals, often followed by a genuine decision.
    signals: fc
      .tuple(
        fc.array(fc.constantFrom(...signalKinds), { maxLength: 3 }),
        fc.constantFrom<SignalKind[]>([], ['valid-approve'], ['valid-approve'], ['valid-reject']),
      )
      .map(([noise, decision]) => [...noise, ...decision]),
  }),
);

describe('property: the gates hold for random tools, arguments and approval signals', () => {
  let harness: Harness;
  beforeAll(async () => {
    harness = await createHarness({
      // Short approval expiry so unanswered calls close within the test.
      policy: { allow: exampleAllowlist, approvals: { transfer_funds: { expiresAfterMs: 1_500 } } },
    });
  });
  afterAll(async () => harness?.close());

  it('never executes outside the allowlist or schema; denials have effect none; ledger = succeeded', async () => {
    const strangerSigner = createApprovalSigner(generateKeyPairSync('ed25519').privateKey);
    const outcomes: Array<{ tool: string; status: string; reason?: string | undefined }> = [];
    let succeededTransfers = 0;

    await fc.assert(
      fc.asyncProperty(scenario, async ({ tool, input: rawInput, withKey, signals }) => {
        run++;
        // Transfers need distinct references so business keys never collide across runs.
        const input =
          tool === 'transfer_funds' && rawInput && typeof rawInput === 'object' && 'reference' in rawInput
            ? { ...rawInput, reference: `REF-${unique()}` }
            : rawInput;
        const key = withKey ? `prop-${unique()}` : undefined;
        const started = await harness.client.start({ tool, input, ...(key ? { key } : {}) }, agent);
        let record: CallRecord;
        if (started.record) {
          record = started.record;
        } else {
          const handle = harness.temporal.workflow.getHandle(started.callId);
          const description = await handle.describe();
          const fingerprint = description.memo?.['fingerprint'] as string;
          const claim = (overrides: Partial<Parameters<typeof decisionClaims>[0]>) =>
            decisionClaims({
              callId: started.callId,
              runId: description.runId,
              decision: 'approve',
              approver: 'alice',
              approverKind: 'human',
              roles: [],
              fingerprint,
              ...overrides,
            });
          const payloads: Record<SignalKind, () => unknown> = {
            garbage: () => ({ claims: { approver: 'alice', decision: 'approve' }, signature: 'AAAA' }),
            forged: () => strangerSigner.sign(claim({})),
            self: () => harness.signer.sign(claim({ approver: agent.principal })),
            agent: () =>
              harness.signer.sign(claim({ approver: 'bot', approverKind: 'agent', roles: ['finance'] })),
            'wrong-hash': () => harness.signer.sign(claim({ fingerprint: 'f'.repeat(64) })),
            unlisted: () => harness.signer.sign(claim({ approver: 'mallory' })),
            'valid-approve': () => harness.signer.sign(claim({})),
            'valid-reject': () => harness.signer.sign(claim({ decision: 'reject' })),
          };
          for (const kind of signals) {
            await handle.signal(decisionSignal, payloads[kind]()).catch(() => undefined);
          }
          record = await harness.client.result(started.callId);
        }
        outcomes.push({ tool, status: record.status, reason: record.reason });

        const contract = lookupTool(exampleCatalog, tool);
        const allowed = contract !== undefined && exampleAllowlist.includes(tool);
        const valid =
          contract !== undefined &&
          checkInputLimits(input) === undefined &&
          contract.input.safeParse(input).success;
        const executions = (await harness.readLines(harness.tools.paths.executionsFile)).filter(
          (line) => record.callId !== '' && line['callId'] === record.callId,
        );
        if (!allowed || !valid) {
          expect(executions).toEqual([]);
          expect(record.status).toBe('denied');
        }
        if (record.status === 'denied') expect(record.effect).toBe('none');
        if (contract?.tier === 'approval' && executions.length > 0) {
          const firstValid = signals.find((kind) => kind === 'valid-approve' || kind === 'valid-reject');
          expect(firstValid).toBe('valid-approve');
        }
        if (tool === 'transfer_funds' && record.status === 'succeeded') succeededTransfers++;
        const ledger = await harness.readLines(harness.tools.paths.ledgerFile);
        expect(ledger).toHaveLength(succeededTransfers);
        expect(
          (await harness.readLines(harness.tools.paths.executionsFile)).filter(
            (line) => line['tool'] === 'delete_everything',
          ),
        ).toEqual([]);
      }),
      { numRuns: 45, seed: Number(process.env['TOOLGATE_PROPERTY_SEED'] ?? Date.now() % 2 ** 31) },
    );
    const summary = outcomes.reduce<Record<string, number>>((counts, outcome) => {
      const label = `${outcome.status}${outcome.reason ? `/${outcome.reason}` : ''}`;
      counts[label] = (counts[label] ?? 0) + 1;
      return counts;
    }, {});
    console.info(`property runs: ${outcomes.length}, transfers succeeded: ${succeededTransfers}`, summary);
    expect(outcomes.length).toBeGreaterThanOrEqual(45);
  });
});
