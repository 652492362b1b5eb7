import { describe, expect, it } from 'vitest';
import { createBreakerGate, createQuotaGate } from '../../activities/safety/admission-gates.ts';
import type { AdmitRequest } from '../../src/contracts/activity-types.ts';
import { CircuitBreaker } from '../../src/policy/circuit-breaker.ts';
import { QuotaLedger } from '../../src/policy/quotas.ts';

function clock(startMs = 1_000_000) {
  let nowMs = startMs;
  return { now: () => nowMs, advance: (ms: number) => (nowMs += ms) };
}

const admitRequest = (callId: string, tool = 'http_fetch', tenant = 'acme'): AdmitRequest => ({
  callId,
  tool,
  tier: 'readonly',
  context: { tenant, principal: 'agent-1', principalKind: 'agent' },
});

describe('QuotaLedger', () => {
  it('refuses past the concurrency limit and admits again after a release', () => {
    const ledger = new QuotaLedger({ perTool: { http_fetch: { maxConcurrent: 2 } } });
    expect(ledger.admit({ callId: 'a', tool: 'http_fetch', tenant: 't' })).toEqual({
      allowed: true,
      holdsSlot: true,
    });
    expect(ledger.admit({ callId: 'b', tool: 'http_fetch', tenant: 't' }).allowed).toBe(true);
    const refused = ledger.admit({ callId: 'c', tool: 'http_fetch', tenant: 't' });
    expect(refused).toMatchObject({ allowed: false, retryAfterSeconds: 1 });
    // Another tool is not affected.
    expect(ledger.admit({ callId: 'd', tool: 'read_config', tenant: 't' })).toEqual({
      allowed: true,
      holdsSlot: false,
    });
    ledger.release('a');
    expect(ledger.admit({ callId: 'c', tool: 'http_fetch', tenant: 't' }).allowed).toBe(true);
    expect(ledger.running('tool:http_fetch')).toBe(2);
  });

  it('does not take a second slot when an admission is retried for the same call', () => {
    const ledger = new QuotaLedger({ defaultPerTenant: { maxConcurrent: 1 } });
    expect(ledger.admit({ callId: 'a', tool: 'x', tenant: 't' }).allowed).toBe(true);
    expect(ledger.admit({ callId: 'a', tool: 'x', tenant: 't' }).allowed).toBe(true);
    expect(ledger.running('tenant:t')).toBe(1);
    ledger.release('unknown-call');
    expect(ledger.running('tenant:t')).toBe(1);
  });

  it('rate-limits per tenant with an accurate retry-after, and refills over time', () => {
    const time = clock();
    const ledger = new QuotaLedger({ perTenant: { acme: { maxPerWindow: 3, windowMs: 6_000 } } }, time.now);
    for (const id of ['1', '2', '3'])
      expect(ledger.admit({ callId: id, tool: 'x', tenant: 'acme' }).allowed).toBe(true);
    const refused = ledger.admit({ callId: '4', tool: 'x', tenant: 'acme' });
    expect(refused).toMatchObject({ allowed: false, retryAfterSeconds: 2 });
    // Another tenant has no entry and no default: unlimited.
    expect(ledger.admit({ callId: '5', tool: 'x', tenant: 'other' }).allowed).toBe(true);
    time.advance(2_000);
    expect(ledger.admit({ callId: '4', tool: 'x', tenant: 'acme' }).allowed).toBe(true);
    expect(ledger.admit({ callId: '6', tool: 'x', tenant: 'acme' }).allowed).toBe(false);
  });

  it('is all-or-nothing: a tenant refusal takes nothing from the tool scope', () => {
    const ledger = new QuotaLedger({
      perTool: { x: { maxConcurrent: 5 } },
      perTenant: { acme: { maxConcurrent: 1 } },
    });
    expect(ledger.admit({ callId: 'a', tool: 'x', tenant: 'acme' }).allowed).toBe(true);
    expect(ledger.admit({ callId: 'b', tool: 'x', tenant: 'acme' }).allowed).toBe(false);
    expect(ledger.running('tool:x')).toBe(1);
  });

  it('looks tool and tenant names up by own property only', () => {
    const ledger = new QuotaLedger({ perTool: { x: { maxConcurrent: 0 } } });
    expect(ledger.admit({ callId: 'a', tool: 'constructor', tenant: '__proto__' }).allowed).toBe(true);
  });
});

describe('CircuitBreaker', () => {
  it('opens after the threshold, refuses during the cooldown, lets one probe through after it', () => {
    const time = clock();
    const breaker = new CircuitBreaker({ failureThreshold: 3, cooldownMs: 10_000, now: time.now });
    for (let index = 0; index < 3; index++) {
      expect(breaker.request().allowed).toBe(true);
      breaker.recordFailure();
    }
    expect(breaker.state).toBe('open');
    expect(breaker.request()).toEqual({ allowed: false, retryAfterSeconds: 10 });
    time.advance(4_000);
    expect(breaker.request()).toEqual({ allowed: false, retryAfterSeconds: 6 });
    time.advance(6_000);
    expect(breaker.state).toBe('half-open');
    expect(breaker.request().allowed).toBe(true);
    // Only one probe at a time.
    expect(breaker.request().allowed).toBe(false);
    breaker.recordFailure();
    expect(breaker.state).toBe('open');
    time.advance(10_000);
    expect(breaker.request().allowed).toBe(true);
    breaker.recordSuccess();
    expect(breaker.state).toBe('closed');
    expect(breaker.stats.opened).toBe(2);
  });

  it('a success resets the count of consecutive failures', () => {
    const breaker = new CircuitBreaker({ failureThreshold: 2 });
    breaker.recordFailure();
    breaker.recordSuccess();
    breaker.recordFailure();
    expect(breaker.state).toBe('closed');
  });
});

describe('admission gates', () => {
  it('the quota gate returns RATE_LIMITED with retry-after and hands back slots', () => {
    const gate = createQuotaGate({ perTool: { http_fetch: { maxConcurrent: 1 } } });
    expect(gate.admit(admitRequest('a'))).toEqual({ allowed: true, holdsSlot: true });
    expect(gate.admit(admitRequest('b'))).toMatchObject({
      allowed: false,
      reason: 'RATE_LIMITED',
      retryAfterSeconds: 1,
    });
    gate.release({ callId: 'a', tool: 'http_fetch', context: admitRequest('a').context });
    expect(gate.admit(admitRequest('b'))?.allowed).toBe(true);
    // A tool without limits passes without taking anything.
    expect(gate.admit(admitRequest('c', 'read_config'))).toBeUndefined();
  });

  it('the breaker gate refuses a tool while its breaker is open', () => {
    const time = clock();
    const breaker = new CircuitBreaker({ failureThreshold: 1, cooldownMs: 5_000, now: time.now });
    const gate = createBreakerGate({ http_fetch: breaker });
    expect(gate.admit(admitRequest('a'))).toBeUndefined();
    breaker.recordFailure();
    expect(gate.admit(admitRequest('b'))).toMatchObject({
      allowed: false,
      reason: 'RATE_LIMITED',
      retryAfterSeconds: 5,
    });
    expect(gate.admit(admitRequest('c', 'read_config'))).toBeUndefined();
    time.advance(5_000);
    // Admission only peeks: the half-open probe is left for the tool's own attempt.
    expect(gate.admit(admitRequest('d'))).toBeUndefined();
    expect(breaker.request().allowed).toBe(true);
  });
});
