import { generateKeyPairSync } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { verifySignedDecision } from '../../../activities/create-activities.ts';
import { exampleCatalog } from '../../../examples/contracts.ts';
import { createApprovalSigner, decisionClaims } from '../../../src/client/approval-signer.ts';
import { ToolgateClient } from '../../../src/client/toolgate-client.ts';
import { callId, toolSegment } from '../../../src/contracts/call-id.ts';
import type { CallRecord } from '../../../src/contracts/call-record.ts';
import { keyIsReleased } from '../../../src/contracts/call-record.ts';
import { canonicalJson } from '../../../src/contracts/canonical-json.ts';
import {
  checkCatalogSchemas,
  createCatalog,
  defineTool,
  lookupTool,
} from '../../../src/contracts/define-tool.ts';
import { callFingerprint, sha256Hex } from '../../../src/contracts/fingerprint.ts';
import { checkInputLimits, utf8Length } from '../../../src/contracts/limits.ts';
import { deriveCallKey, KeyDerivationError, prepareCall } from '../../../src/contracts/prepare-call.ts';
import { reasonCodes, retryableReasonCodes } from '../../../src/contracts/reason-codes.ts';
import { isToolAllowed } from '../../../src/policy/allowlist.ts';
import { payInvoiceWithBuggyKey } from '../../support/throwing-key-contract.ts';

describe('canonical JSON and fingerprints', () => {
  it('sorts keys at every level and ignores undefined members', () => {
    expect(canonicalJson({ b: 1, a: { d: [1, { z: 0, y: 'x' }], c: undefined } })).toBe(
      '{"a":{"d":[1,{"y":"x","z":0}]},"b":1}',
    );
  });
  it('refuses values JSON cannot carry', () => {
    expect(() => canonicalJson({ n: Number.NaN })).toThrow(/non-finite/);
    const cycle: Record<string, unknown> = {};
    cycle['self'] = cycle;
    expect(() => canonicalJson(cycle)).toThrow(/cycle/);
  });
  it('gives equal fingerprints to equal meaning and different ones otherwise', () => {
    expect(callFingerprint('t', { a: 1, b: 2 })).toBe(callFingerprint('t', { b: 2, a: 1 }));
    expect(callFingerprint('t', { a: 1 })).not.toBe(callFingerprint('u', { a: 1 }));
    expect(callFingerprint('t', { a: 1 })).not.toBe(callFingerprint('t', { a: '1' }));
    // A published SHA-256 test vector proves the hash is the real one.
    expect(sha256Hex('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });
});

describe('call IDs', () => {
  it('scopes a key by tenant and tool', () => {
    expect(callId({ tenant: 'acme', tool: 'write_report', key: 'k1', unique: 'u' })).toBe(
      'toolgate/acme/write_report/k/k1',
    );
    expect(callId({ tenant: 'acme', tool: 'write_report', unique: 'u' })).toBe(
      'toolgate/acme/write_report/~u',
    );
  });
  it('hashes a tool name that could inject separators', () => {
    expect(toolSegment('../../x')).toMatch(/^invalid-[0-9a-f]{16}$/);
    expect(toolSegment('a/b')).not.toContain('/');
  });
});

describe('defineTool', () => {
  const input = z.strictObject({ x: z.string() });
  it('caps attempts at one for irreversible tools whatever is asked', () => {
    const tool = defineTool({
      name: 'pay',
      description: 'd',
      input,
      tier: 'irreversible',
      timeoutMs: 100,
      retry: { maximumAttempts: 9 },
    });
    expect(tool.retry.maximumAttempts).toBe(1);
    const readonly = defineTool({ name: 'look', description: 'd', input, tier: 'readonly', timeoutMs: 100 });
    expect(readonly.retry.maximumAttempts).toBe(3);
  });
  it('refuses contracts that could not be honoured', () => {
    expect(() =>
      defineTool({ name: 'bad name', description: 'd', input, tier: 'readonly', timeoutMs: 1 }),
    ).toThrow(/invalid/);
    expect(() => defineTool({ name: 'a', description: 'd', input, tier: 'approval', timeoutMs: 1 })).toThrow(
      /approval settings/,
    );
    expect(() =>
      defineTool({
        name: 'a',
        description: 'd',
        input,
        tier: 'irreversible',
        timeoutMs: 1,
        compensation: 'x',
      }),
    ).toThrow(/reversible/);
    expect(() =>
      defineTool({ name: 'a', description: 'd', input, tier: 'irreversible', timeoutMs: 1, fastPath: true }),
    ).toThrow(/readonly/);
    expect(() =>
      defineTool({ name: 'a', description: 'd', input: z.string() as never, tier: 'readonly', timeoutMs: 1 }),
    ).toThrow(/strictObject/);
  });
  it('looks tools up by own property only', () => {
    const catalog = createCatalog([
      defineTool({ name: 'look', description: 'd', input, tier: 'readonly', timeoutMs: 1 }),
    ]);
    expect(lookupTool(catalog, 'look')?.name).toBe('look');
    for (const name of ['__proto__', 'constructor', 'hasOwnProperty', 'Look', 'look ', 42]) {
      expect(lookupTool(catalog, name)).toBeUndefined();
    }
    expect(() => createCatalog([lookupTool(catalog, 'look')!, lookupTool(catalog, 'look')!])).toThrow(
      /twice/,
    );
  });
  it('builds a lazy input schema on first use, once, and validates with it', () => {
    let builds = 0;
    const lazy = defineTool({
      name: 'lazy',
      description: 'd',
      input: () => {
        builds += 1;
        return z.strictObject({ n: z.number().int() });
      },
      tier: 'readonly',
      timeoutMs: 1,
    });
    const catalog = createCatalog([lazy]);
    expect(builds).toBe(0);
    expect(lazy.input.safeParse({ n: 1 }).success).toBe(true);
    expect(lazy.input.safeParse({ n: 1.5 }).success).toBe(false);
    expect(lazy.input.safeParse({ n: 1, extra: true }).success).toBe(false);
    checkCatalogSchemas(catalog);
    expect(builds).toBe(1);
    // The contract stays frozen: its schema cannot be swapped.
    expect(() => {
      (lazy as { input: unknown }).input = z.strictObject({});
    }).toThrow(TypeError);
  });
  it('derives no business key from a schema that throws, instead of throwing (agent workflows call this)', () => {
    const context = { tenant: 't', principal: 'p', principalKind: 'agent' } as const;
    let fail = true;
    const keyed = defineTool({
      name: 'keyed',
      description: 'd',
      input: () => {
        if (fail) throw new RangeError('cannot build');
        return z.strictObject({ ref: z.string() });
      },
      tier: 'reversible',
      timeoutMs: 1,
      idempotencyKey: (input) => `ref-${input.ref}`,
    });
    const catalog = createCatalog([keyed]);
    const request = { tool: 'keyed', input: { ref: 'a' } };
    expect(deriveCallKey(request, context, { catalog })).toBeUndefined();
    expect(deriveCallKey(request, context, { catalog, keyFor: () => 'fallback' })).toBe('fallback');
    fail = false;
    expect(deriveCallKey(request, context, { catalog })).toBe('ref-a');
  });
  it('reports a lazy schema that is not an object schema when it is checked, every time', () => {
    const wrong = defineTool({
      name: 'wrong',
      description: 'd',
      input: () => z.string() as never,
      tier: 'readonly',
      timeoutMs: 1,
    });
    const catalog = createCatalog([wrong]);
    // A client given the catalog finds the mistake when it is constructed, before any call.
    const temporal = { workflow: {} } as unknown as Client;
    expect(() => new ToolgateClient({ client: temporal, catalog })).toThrow(/wrong: input must be/);
    for (let i = 0; i < 2; i++) {
      expect(() => checkCatalogSchemas(catalog)).toThrow(
        /wrong: input must be a z\.strictObject\(\.\.\.\) schema, or a function/,
      );
    }
  });
});

describe('requests a client refuses before starting anything', () => {
  const context = { tenant: 't', principal: 'p', principalKind: 'agent' } as const;
  const catalog = createCatalog([payInvoiceWithBuggyKey]);
  // Any use of Temporal would throw: these requests must be answered before that.
  const client = new ToolgateClient({ client: { workflow: {} } as unknown as Client, catalog });

  it('turns a key function that throws into an INVALID_INPUT refusal', async () => {
    const request = { tool: 'pay_invoice', input: { invoice: null } };
    expect(() => deriveCallKey(request, context, { catalog })).toThrow(KeyDerivationError);
    const prepared = prepareCall(request, context, { catalog, unique: 'u' });
    expect(prepared.ok).toBe(false);
    const started = await client.start(request, context);
    expect(started).toMatchObject({ callId: '', disposition: 'refused' });
    expect(started.record).toMatchObject({ status: 'denied', reason: 'INVALID_INPUT', effect: 'none' });
    expect(started.record!.message).toMatch(/key function failed/);
    // So does a caller's key function, for a tool whose contract has none.
    const thrower = () => {
      throw new Error('boom');
    };
    expect(
      prepareCall({ tool: 'other', input: {} }, context, { keyFor: thrower, unique: 'u' }),
    ).toMatchObject({
      ok: false,
      record: { reason: 'INVALID_INPUT' },
    });
    // Arguments the key function can take still get their key.
    expect(deriveCallKey({ tool: 'pay_invoice', input: { invoice: 'INV-9' } }, context, { catalog })).toBe(
      'pay-inv-9',
    );
  });

  it('refuses a tool name longer than any tool can have, without putting it in a call ID', async () => {
    const started = await client.start({ tool: 'x'.repeat(600_000), input: {} }, context);
    expect(started).toMatchObject({ callId: '', disposition: 'refused' });
    expect(started.record).toMatchObject({ status: 'denied', reason: 'NOT_ALLOWED', effect: 'none' });
    expect(started.record!.message).toMatch(/^No tool has a name this long \(600000 characters/);
    expect(started.record!.tool.length).toBeLessThan(50);
    expect(JSON.stringify(started.record).length).toBeLessThan(5_000);
  });

  it('draws the long-name line at 128 characters, for the client and child calls alike', () => {
    const prepare = (tool: string, refuseLongToolName?: () => boolean) =>
      prepareCall({ tool, input: {} }, context, {
        catalog: exampleCatalog,
        unique: 'u-1',
        ...(refuseLongToolName ? { refuseLongToolName } : {}),
      });
    expect(prepare('x'.repeat(128)).ok).toBe(true);
    expect(prepare('x'.repeat(129))).toMatchObject({
      ok: false,
      record: { status: 'denied', reason: 'NOT_ALLOWED', tool: `${'x'.repeat(40)}…` },
    });
    // A child call asks its patch, and only for such a name: an unpatched history starts the call.
    let asked = 0;
    const ask = () => {
      asked++;
      return false;
    };
    expect(prepare('x'.repeat(128), ask).ok).toBe(true);
    expect(asked).toBe(0);
    expect(prepare('x'.repeat(129), ask).ok).toBe(true);
    expect(asked).toBe(1);
  });
});

describe('limits', () => {
  it('refuses size, depth and string length with guidance', () => {
    expect(checkInputLimits({ a: 'x'.repeat(70_000) })?.limit).toBe('maxStringLength');
    let deep: unknown = 'leaf';
    for (let level = 0; level < 40; level++) deep = { deep };
    expect(checkInputLimits(deep)?.limit).toBe('maxDepth');
    const wide = Object.fromEntries(
      Array.from({ length: 5000 }, (_, index) => [`k${index}`, 'y'.repeat(60)]),
    );
    const breach = checkInputLimits(wide);
    expect(breach?.limit).toBe('maxInputBytes');
    expect(breach?.message).toMatch(/limit is 262144/);
    expect(checkInputLimits({ ok: true })).toBeUndefined();
  });
  it('counts UTF-8 bytes like Buffer does', () => {
    for (const text of ['abc', 'é', '€', '😀', 'a😀é€'])
      expect(utf8Length(text)).toBe(Buffer.byteLength(text));
  });
});

describe('reason codes and the allowlist', () => {
  it('marks only codes where an unchanged retry can help as retryable', () => {
    expect([...retryableReasonCodes].sort()).toEqual(['RATE_LIMITED', 'TIMEOUT', 'TOOL_FAILED']);
    for (const info of Object.values(reasonCodes)) expect(info.nextStep.length).toBeGreaterThan(10);
  });
  it('denies by default and matches names exactly', () => {
    const policy = { allow: ['read_config'], tenants: { beta: ['slow_search'] } };
    expect(isToolAllowed(policy, 'read_config', 'acme')).toBe(true);
    expect(isToolAllowed(policy, 'slow_search', 'acme')).toBe(false);
    expect(isToolAllowed(policy, 'slow_search', 'beta')).toBe(true);
    expect(isToolAllowed(policy, 'slow_search', '__proto__')).toBe(false);
    expect(isToolAllowed({ allow: [] }, 'read_config', 'acme')).toBe(false);
  });
});

describe('key release rules', () => {
  const record = (status: CallRecord['status'], effect: CallRecord['effect']) =>
    ({ status, effect }) as CallRecord;
  it('keeps the key after success and after an unknown irreversible outcome', () => {
    expect(keyIsReleased(record('succeeded', 'applied'), 'irreversible')).toBe(false);
    expect(keyIsReleased(record('timeout', 'unknown'), 'irreversible')).toBe(false);
    expect(keyIsReleased(record('cancelled', 'unknown'), 'approval')).toBe(false);
  });
  it('releases it after a denial and after retry-safe failures', () => {
    expect(keyIsReleased(record('denied', 'none'), 'approval')).toBe(true);
    expect(keyIsReleased(record('failed', 'none'), 'readonly')).toBe(true);
    expect(keyIsReleased(record('timeout', 'unknown'), 'reversible')).toBe(true);
    expect(keyIsReleased(record('failed', 'none'), 'irreversible')).toBe(true);
  });
});

describe('signed decisions', () => {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const other = generateKeyPairSync('ed25519');
  const signer = createApprovalSigner(privateKey);
  const fingerprint = callFingerprint('transfer_funds', { a: 1 });
  const request = (payload: unknown) => ({
    payload,
    callId: 'c1',
    runId: 'r1',
    fingerprint,
    requester: 'agent-7',
    approvers: ['alice', 'role:finance'],
  });
  const claims = (overrides: Partial<Parameters<typeof decisionClaims>[0]> = {}) =>
    decisionClaims({
      callId: 'c1',
      runId: 'r1',
      decision: 'approve',
      approver: 'alice',
      approverKind: 'human',
      roles: [],
      fingerprint,
      ...overrides,
    });

  it('accepts a fresh decision signed by a trusted key from a listed human', () => {
    expect(verifySignedDecision(request(signer.sign(claims())), [publicKey], 60_000).accepted).toBe(true);
    expect(
      verifySignedDecision(
        request(signer.sign(claims({ approver: 'bob', roles: ['finance'] }))),
        [publicKey],
        60_000,
      ).accepted,
    ).toBe(true);
  });
  it('refuses each way a decision can be wrong, with a reason', () => {
    const cases: Array<[unknown, RegExp]> = [
      [{ claims: { approver: 'alice' }, signature: 'x' }, /not a signed decision/],
      [createApprovalSigner(other.privateKey).sign(claims()), /trusted approval signer/],
      [{ ...signer.sign(claims()), claims: { ...claims(), approver: 'mallory' } }, /trusted approval signer/],
      [signer.sign(claims({ approver: 'agent-7', roles: ['finance'] })), /requester/],
      // The requester under another spelling: case, full-width letters (NFKC).
      [signer.sign(claims({ approver: 'Agent-7', roles: ['finance'] })), /requester/],
      [signer.sign(claims({ approver: 'ＡＧＥＮＴ－７', roles: ['finance'] })), /requester/],
      [signer.sign(claims({ approverKind: 'service' })), /only humans/],
      [signer.sign(claims({ fingerprint: '0'.repeat(64) })), /argument hash/],
      [signer.sign(claims({ callId: 'c2' })), /different call/],
      [signer.sign(claims({ runId: 'r0' })), /earlier run/],
      [signer.sign(claims({ approver: 'mallory' })), /not an approver/],
      [signer.sign(claims({ issuedAt: new Date(Date.now() - 120_000).toISOString() })), /stale/],
    ];
    for (const [payload, reason] of cases) {
      const verdict = verifySignedDecision(request(payload), [publicKey], 60_000);
      expect(verdict.accepted).toBe(false);
      expect(verdict.accepted ? '' : verdict.reason).toMatch(reason);
    }
  });
});

describe('approval keys on disk', () => {
  it('derives the public key from the private key, so a half-written pair can never disagree', async () => {
    const { mkdtemp, rm, unlink } = await import('node:fs/promises');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const { loadOrCreateApprovalKeys } = await import('../../../src/client/approval-signer.ts');
    const directory = await mkdtemp(join(tmpdir(), 'toolgate-keys-'));
    try {
      const first = await loadOrCreateApprovalKeys(directory);
      await unlink(first.publicKeyFile);
      const second = await loadOrCreateApprovalKeys(directory);
      const signed = createApprovalSigner(second.privateKey).sign(
        decisionClaims({
          callId: 'c',
          runId: 'r',
          decision: 'approve',
          approver: 'a',
          approverKind: 'human',
          roles: [],
          fingerprint: '0'.repeat(64),
        }),
      );
      const verdict = verifySignedDecision(
        {
          payload: signed,
          callId: 'c',
          runId: 'r',
          fingerprint: '0'.repeat(64),
          requester: 'x',
          approvers: ['a'],
        },
        [first.publicKey],
        60_000,
      );
      expect(verdict.accepted).toBe(true);
      expect(second.publicKey.export({ type: 'spki', format: 'pem' })).toBe(
        first.publicKey.export({ type: 'spki', format: 'pem' }),
      );
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  });
});

describe('example catalog', () => {
  it('derives the transfer key from the business reference', () => {
    const contract = lookupTool(exampleCatalog, 'transfer_funds')!;
    expect(contract.idempotencyKey?.({ reference: 'INV-7' } as never)).toBe('transfer-INV-7');
  });
});
