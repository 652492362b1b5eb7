import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { outcomeOf } from '../../activities/safety/admission-gates.ts';
import { ToolFailureType } from '../../src/contracts/activity-types.ts';
import {
  type AcquireRequest,
  acquire,
  emptyScopeState,
  reclaim,
  recordOutcome,
  release,
} from '../../src/policy/scope-state.ts';

const start = 1_000_000;
const ask = (callId: string, extra: Partial<AcquireRequest> = {}): AcquireRequest => ({
  callId,
  label: 'http_fetch',
  leaseMs: 60_000,
  ...extra,
});

describe('a scope: concurrency', () => {
  it('refuses past the limit and admits again after a release', () => {
    const state = emptyScopeState();
    const limit = { maxConcurrent: 2 };
    expect(acquire(state, ask('a', { limit }), start)).toEqual({ granted: true, holdsSlot: true });
    expect(acquire(state, ask('b', { limit }), start).granted).toBe(true);
    const refused = acquire(state, ask('c', { limit }), start);
    expect(refused).toMatchObject({ granted: false, cause: 'concurrency', retryAfterSeconds: 1 });
    if (!refused.granted)
      expect(refused.message).toMatch(/Too many http_fetch calls are running at once \(limit 2\)/);
    release(state, 'a');
    expect(acquire(state, ask('c', { limit }), start).granted).toBe(true);
    expect(Object.keys(state.holders).sort()).toEqual(['b', 'c']);
  });

  it('does not take a second slot when an admission is retried for the same call', () => {
    const state = emptyScopeState();
    const limit = { maxConcurrent: 1 };
    expect(acquire(state, ask('a', { limit }), start).granted).toBe(true);
    expect(acquire(state, ask('a', { limit }), start)).toEqual({ granted: true, holdsSlot: true });
    expect(Object.keys(state.holders)).toEqual(['a']);
    release(state, 'unknown-call');
    expect(Object.keys(state.holders)).toEqual(['a']);
  });

  it('reclaims a slot whose lease ran out, and one whose holder is known to have closed', () => {
    const state = emptyScopeState();
    const limit = { maxConcurrent: 1 };
    acquire(state, ask('a', { limit, leaseMs: 5_000 }), start);
    expect(acquire(state, ask('b', { limit }), start + 4_999).granted).toBe(false);
    expect(acquire(state, ask('b', { limit }), start + 5_000).granted).toBe(true);
    expect(reclaim(state, ['b', 'never-held'])).toBe(1);
    expect(acquire(state, ask('c', { limit }), start + 5_000).granted).toBe(true);
  });
});

describe('a scope: rate', () => {
  it('holds at most maxPerWindow in any window, with an accurate retry-after', () => {
    const state = emptyScopeState();
    const limit = { maxPerWindow: 3, windowMs: 6_000 };
    for (const [index, id] of ['1', '2', '3'].entries()) {
      expect(acquire(state, ask(id, { limit }), start + index * 1_000).granted).toBe(true);
    }
    // The first admission leaves the window just after start + 6 s: a wait of 3 s is not enough.
    expect(acquire(state, ask('4', { limit }), start + 3_000)).toMatchObject({
      granted: false,
      cause: 'rate',
      retryAfterSeconds: 4,
    });
    expect(acquire(state, ask('4', { limit }), start + 6_000).granted).toBe(false);
    expect(acquire(state, ask('4', { limit }), start + 6_001).granted).toBe(true);
    // No edge doubles the rate: right after, the window still holds 3.
    expect(acquire(state, ask('5', { limit }), start + 6_002).granted).toBe(false);
  });

  it('gives a rolled-back admission its place back (refund), and only then', () => {
    const state = emptyScopeState();
    const limit = { maxPerWindow: 1, windowMs: 60_000 };
    expect(acquire(state, ask('a', { limit }), start).granted).toBe(true);
    release(state, 'a');
    expect(acquire(state, ask('b', { limit }), start).granted).toBe(false);
    release(state, 'a', true);
    expect(acquire(state, ask('b', { limit }), start).granted).toBe(true);
  });
});

describe('a scope: the breaker', () => {
  const breaker = { failureThreshold: 3, cooldownMs: 10_000 };
  const attempt = (callId: string) => ask(callId, { breaker, attempt: true });

  it('opens after the threshold, refuses during the cooldown, lets one probe through after it', () => {
    const state = emptyScopeState();
    for (const id of ['1', '2', '3']) {
      expect(acquire(state, attempt(id), start).granted).toBe(true);
      recordOutcome(state, { callId: id, outcome: 'failure', breaker }, start);
    }
    expect(acquire(state, attempt('4'), start)).toMatchObject({
      granted: false,
      cause: 'breaker',
      retryAfterSeconds: 10,
    });
    expect(acquire(state, attempt('4'), start + 4_000)).toMatchObject({ retryAfterSeconds: 6 });
    // Half-open: one probe; an admission (not an attempt) may pass to wait for it.
    expect(acquire(state, attempt('5'), start + 10_000)).toEqual({
      granted: true,
      holdsSlot: false,
      probe: true,
    });
    expect(acquire(state, attempt('6'), start + 10_000).granted).toBe(false);
    expect(acquire(state, ask('7', { breaker }), start + 10_000).granted).toBe(true);
    // The probe fails: open again at once, for a full cooldown.
    recordOutcome(state, { callId: '5', outcome: 'failure', breaker }, start + 10_500);
    expect(acquire(state, attempt('8'), start + 20_000).granted).toBe(false);
    expect(acquire(state, attempt('8'), start + 20_500)).toMatchObject({ granted: true, probe: true });
    recordOutcome(state, { callId: '8', outcome: 'success', breaker }, start + 20_600);
    expect(state.breaker).toMatchObject({ open: false, failures: 0, opened: 2 });
    expect(acquire(state, attempt('9'), start + 20_600)).toEqual({ granted: true, holdsSlot: false });
  });

  it('a success resets the count; a neutral outcome only frees the probe', () => {
    const state = emptyScopeState();
    recordOutcome(state, { callId: 'a', outcome: 'failure', breaker }, start);
    recordOutcome(state, { callId: 'b', outcome: 'success', breaker }, start);
    recordOutcome(state, { callId: 'c', outcome: 'failure', breaker }, start);
    recordOutcome(state, { callId: 'd', outcome: 'neutral', breaker }, start);
    expect(state.breaker).toMatchObject({ open: false, failures: 1 });
  });

  it('classifies what an attempt did: only a timeout or a retryable failure counts against the downstream', () => {
    const failed = (nonRetryable: boolean) =>
      ApplicationFailure.create({ type: ToolFailureType.failed, message: 'x', nonRetryable });
    expect(outcomeOf(failed(false))).toBe('failure');
    expect(outcomeOf(failed(true))).toBe('neutral');
    expect(outcomeOf(ApplicationFailure.create({ type: ToolFailureType.timeout, message: 'x' }))).toBe(
      'failure',
    );
    expect(outcomeOf(ApplicationFailure.create({ type: ToolFailureType.denied, message: 'x' }))).toBe(
      'neutral',
    );
    expect(outcomeOf(new CancelledFailure('cancelled'))).toBe('neutral');
    expect(outcomeOf(new Error('socket hang up'))).toBe('failure');
  });
});
