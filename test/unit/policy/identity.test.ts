import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { CallRecord } from '../../../src/contracts/call-record.ts';
import { mayDecide } from '../../../src/inbox/inbox-app.ts';
import { approverRefusal, identityKey, sameIdentity } from '../../../src/policy/identity.ts';

/** Spellings of one name that must count as the same person. */
const respellings = (name: string): string[] => [
  name.toUpperCase(),
  name.toLowerCase(),
  // Full-width forms of ASCII letters and digits, which NFKC maps back.
  [...name]
    .map((char) => (/[!-~]/.test(char) ? String.fromCodePoint(char.codePointAt(0)! + 0xfee0) : char))
    .join(''),
];

describe('identities', () => {
  it('are one across case, full-width forms and the folds lower-casing alone misses', () => {
    expect(sameIdentity('alice', 'Alice')).toBe(true);
    expect(sameIdentity('alice', 'ＡＬＩＣＥ')).toBe(true);
    expect(sameIdentity('strauß', 'STRAUSS')).toBe(true);
    expect(sameIdentity('ſam', 'sam')).toBe(true);
    expect(sameIdentity('ὀδυσσεύς', 'ὈΔΥΣΣΕΎΣ')).toBe(true);
    expect(sameIdentity('ﬁona', 'fiona')).toBe(true);
    expect(sameIdentity('alice', 'alicia')).toBe(false);
    expect(sameIdentity('bob', 'b0b')).toBe(false);
  });

  it('never let the requester approve their own call under another spelling (property)', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1, maxLength: 24 }), fc.nat(2), (name, which) => {
        const spelling = respellings(name)[which]!;
        expect(identityKey(spelling)).toBe(identityKey(name));
        expect(
          approverRefusal({
            approver: spelling,
            roles: ['finance'],
            requester: name,
            approvers: [spelling, 'role:finance'],
          }),
        ).toBe('the requester may not approve their own call');
      }),
      { numRuns: 500 },
    );
  });

  it('match the approvers list and roles the same way, in the worker and in the inbox', () => {
    const call = {
      principal: 'agent-7',
      tool: 'transfer_funds',
      approval: { approvers: ['Alice', 'role:Finance'] },
    };
    const refusal = (approver: string, roles: string[]) =>
      approverRefusal({ approver, roles, requester: 'agent-7', approvers: call.approval.approvers });
    expect(refusal('alice', [])).toBeUndefined();
    expect(refusal('bob', ['finance'])).toBeUndefined();
    expect(refusal('bob', ['ops'])).toBe('bob is not an approver for this tool');
    const record = call as unknown as CallRecord;
    expect(mayDecide({ name: 'ALICE', roles: [] } as never, record)).toBeUndefined();
    expect(
      mayDecide({ name: 'Agent-7', roles: ['finance'] } as never, { ...record, principal: 'agent-7' }),
    ).toBe('the requester may not approve their own call');
    expect(mayDecide({ name: 'carol', roles: [] } as never, record)).toBe(
      'carol is not an approver for transfer_funds',
    );
  });
});
