import { describe, expect, it } from 'vitest';
import type { CallRecord } from '../../../src/contracts/call-record.ts';
import { createApproverDirectory } from '../../../src/inbox/approver-tokens.ts';
import { mayDecide } from '../../../src/inbox/inbox-app.ts';
import { renderOverviewSvg, summarizeCalls } from '../../../src/inbox/overview-chart.ts';

describe('inbox safety', () => {
  it('escapes model-written tool names in the overview picture', () => {
    const svg = renderOverviewSvg(
      summarizeCalls([
        {
          callId: 'a',
          runId: 'r',
          tool: '<script>alert(1)</script>',
          status: 'failed',
          startedAt: '2025-01-01T00:00:00.000Z',
          workflowStatus: 'FAILED',
        },
      ]),
    );
    expect(svg).not.toContain('<script>');
    expect(svg).toContain('&#60;script&#62;');
  });

  it('lets only listed approvers decide, never the requester', () => {
    const record = {
      tool: 'transfer_funds',
      principal: 'bob',
      approval: { approvers: ['alice', 'role:finance'], expiresAt: '2030-01-01T00:00:00.000Z' },
    } as unknown as CallRecord;
    expect(mayDecide({ name: 'alice', roles: [] }, record)).toBeUndefined();
    expect(mayDecide({ name: 'carol', roles: ['finance'] }, record)).toBeUndefined();
    expect(mayDecide({ name: 'mallory', roles: ['support'] }, record)).toMatch(/not an approver/);
    expect(mayDecide({ name: 'bob', roles: ['finance'] }, record)).toMatch(/requester/);
  });

  it('authenticates by exact token only', () => {
    const directory = createApproverDirectory('approvers.json', {
      approvers: [{ name: 'alice', roles: ['finance'], token: 'alice-token-0123456789' }],
    });
    expect(directory.authenticate('alice-token-0123456789')?.name).toBe('alice');
    expect(directory.authenticate('alice-token-012345678')).toBeUndefined();
    expect(directory.authenticate('')).toBeUndefined();
  });
});
