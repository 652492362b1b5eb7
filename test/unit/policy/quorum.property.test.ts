import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decisionClaims } from '../../../src/client/approval-signer.ts';
import type { DecisionClaims } from '../../../src/contracts/approval.ts';
import { authorizeDecision } from '../../../src/policy/approvers.ts';
import { identityKey, sameIdentity } from '../../../src/policy/identity.ts';
import { type CountedApproval, countApproval } from '../../../src/policy/quorum.ts';

/**
 * The approval pipeline as the workflow runs it, minus the signature: each decision is authorised
 * by the verifier's own rules, then an approval is counted toward the quorum, and a rejection ends
 * the call. Property: no sequence of decisions lets the call run without the quorum of valid,
 * distinct approvers who are not the requester, on the exact arguments that run.
 */
const requester = 'agent-7';
const approvers = ['alice', 'role:finance'];
const fingerprint = 'f'.repeat(64);

const decisionArbitrary: fc.Arbitrary<Decision> = fc.record({
  approver: fc.constantFrom('alice', 'Alice', 'ＡＬＩＣＥ', 'bob', 'carol', 'agent-7', 'Agent-7', 'mallory'),
  roles: fc.subarray(['finance', 'ops']),
  decision: fc.constantFrom<'approve' | 'reject'>('approve', 'approve', 'approve', 'reject'),
  onTheseArguments: fc.boolean(),
  human: fc.boolean(),
});

interface Decision {
  readonly approver: string;
  readonly roles: string[];
  readonly decision: 'approve' | 'reject';
  readonly onTheseArguments: boolean;
  readonly human: boolean;
}

type Outcome =
  | { readonly kind: 'run'; readonly counted: readonly DecisionClaims[] }
  | { readonly kind: 'rejected' | 'waiting' };

function runPipeline(decisions: ReadonlyArray<Decision>, quorum: number): Outcome {
  const counted: CountedApproval[] = [];
  const countedClaims: DecisionClaims[] = [];
  const nowMs = Date.parse('2026-12-07T00:00:00Z');
  for (const [index, decision] of decisions.entries()) {
    const claims = decisionClaims({
      callId: 'c1',
      runId: 'r1',
      decision: decision.decision,
      approver: decision.approver,
      approverKind: decision.human ? 'human' : 'service',
      roles: decision.roles,
      fingerprint: decision.onTheseArguments ? fingerprint : '0'.repeat(64),
      issuedAt: new Date(nowMs).toISOString(),
      nonce: `n${index}`,
    });
    const refusal = authorizeDecision({
      claims,
      callId: 'c1',
      runId: 'r1',
      fingerprint,
      requester,
      approvers,
      nowMs,
      maxAgeMs: 60_000,
    });
    if (refusal) continue;
    if (claims.decision === 'reject') return { kind: 'rejected' };
    const step = countApproval(
      counted,
      { approver: claims.approver, at: claims.issuedAt, nonce: claims.nonce },
      quorum,
    );
    if (step.kind !== 'repeat') countedClaims.push(claims);
    if (step.kind === 'complete') return { kind: 'run', counted: countedClaims };
  }
  return { kind: 'waiting' };
}

describe('approval by quorum (property)', () => {
  it('never runs without the quorum of valid, distinct, non-requesting approvers on these arguments', () => {
    let ran = 0;
    fc.assert(
      fc.property(
        fc.array(decisionArbitrary, { maxLength: 12 }),
        fc.integer({ min: 1, max: 3 }),
        (decisions, quorum) => {
          const outcome = runPipeline(decisions, quorum);
          if (outcome.kind !== 'run') return;
          ran++;
          const people = new Set(outcome.counted.map((claims) => identityKey(claims.approver)));
          expect(people.size).toBe(quorum);
          for (const claims of outcome.counted) {
            expect(sameIdentity(claims.approver, requester)).toBe(false);
            expect(claims.fingerprint).toBe(fingerprint);
            expect(claims.approverKind).toBe('human');
            expect(claims.decision).toBe('approve');
            expect(sameIdentity(claims.approver, 'alice') || claims.roles.includes('finance')).toBe(true);
          }
        },
      ),
      { numRuns: 2_000 },
    );
    // Not vacuous: many sequences did reach a quorum.
    expect(ran).toBeGreaterThan(200);
  });

  it('runs as soon as enough distinct approvers approve, and a rejection ends it', () => {
    const approve = (approver: string, roles: string[] = []) => ({
      approver,
      roles,
      decision: 'approve' as const,
      onTheseArguments: true,
      human: true,
    });
    expect(runPipeline([approve('alice'), approve('ALICE'), approve('bob', ['finance'])], 2).kind).toBe(
      'run',
    );
    expect(runPipeline([approve('alice'), approve('Alice'), approve('ＡＬＩＣＥ')], 2).kind).toBe('waiting');
    expect(runPipeline([approve('agent-7', ['finance']), approve('alice')], 2).kind).toBe('waiting');
    expect(
      runPipeline([approve('alice'), { ...approve('bob', ['finance']), decision: 'reject' }], 2).kind,
    ).toBe('rejected');
  });
});
