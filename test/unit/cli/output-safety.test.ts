import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  createProgressReporter,
  describeBulkSummary,
  describeCalls,
  describeRecord,
  printJson,
} from '../../../src/cli/output.ts';
import type { BulkReplaySummary, CallSummary } from '../../../src/client/operations.ts';
import type { CallRecord } from '../../../src/contracts/call-record.ts';
import { abnormalCallRecord, refusedCallRecord } from '../../../src/contracts/prepare-call.ts';

/** What a hostile value carries: a title change, a screen clear, an 8-bit CSI, a bidi override. */
const hostile = (label: string) => `${label}\u001b]0;pwned\u0007\u001b[2J\u009b31m\u202e\u2028`;

/** Anything a terminal would act on rather than print. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point.
const terminalControl = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

/** A record in which every string a model, a caller, an approver or an operator can write is hostile. */
const hostileRecord: CallRecord = {
  callId: hostile('toolgate/acme/add_label/k/'),
  runId: hostile('run-'),
  tool: hostile('tool'),
  tier: hostile('tier') as CallRecord['tier'],
  tenant: hostile('tenant'),
  principal: hostile('principal'),
  principalKind: hostile('kind') as CallRecord['principalKind'],
  key: hostile('key'),
  fingerprint: 'f'.repeat(64),
  input: { item: hostile('input'), [hostile('field')]: 1 },
  status: hostile('status') as CallRecord['status'],
  effect: hostile('effect') as CallRecord['effect'],
  reason: hostile('reason') as CallRecord['reason'],
  message: hostile('message'),
  output: hostile('output'),
  attempts: 1,
  transitions: [{ status: 'pending', at: hostile('at'), note: hostile('note') }],
  refusedDecisions: [
    {
      at: hostile('at'),
      decision: hostile('decision'),
      claimedApprover: hostile('claimed'),
      reason: hostile('refusal'),
    },
  ],
  approval: {
    approvers: [hostile('alice'), 'bob'],
    expiresAt: hostile('expires'),
    preview: hostile('preview'),
    decision: 'approve',
    decidedBy: hostile('decidedBy'),
    comment: hostile('comment'),
  },
  replay: {
    replacesRunId: hostile('replaced'),
    operator: hostile('operator'),
    force: true,
    reason: hostile('replay-reason'),
  },
  undo: {
    at: hostile('undo-at'),
    operator: hostile('undo-operator'),
    status: 'failed',
    message: hostile('m'),
  },
};

describe('text output: no value can drive the terminal', () => {
  it('describeRecord routes every field through safeText', () => {
    const lines = describeRecord(hostileRecord);
    const unsafe = lines.filter((line) => terminalControl.test(line));
    expect(unsafe).toEqual([]);
    // The values are still there, their control characters shown as `?`.
    const text = lines.join('\n');
    for (const label of ['tool', 'principal', 'tenant', 'decidedBy', 'operator', 'undo-operator', 'key']) {
      expect(text).toContain(`${label}?]0;pwned??[2J?31m??`);
    }
  });

  it('describeCalls (list) and describeBulkSummary (bulk replay) sanitise every column', () => {
    const call: CallSummary = {
      callId: hostile('toolgate/acme/x/k/'),
      runId: 'run-1',
      tool: hostile('tool'),
      status: hostile('status'),
      effect: hostile('effect'),
      tenant: hostile('tenant'),
      principal: hostile('principal'),
      startedAt: '2026-12-04T07:00:00.000Z',
      workflowStatus: 'COMPLETED',
    };
    expect(describeCalls([call]).filter((line) => terminalControl.test(line))).toEqual([]);
    const summary: BulkReplaySummary = {
      total: 1,
      succeeded: 0,
      failed: 0,
      refused: 1,
      dryRun: false,
      items: [
        { callId: hostile('id'), tool: hostile('tool'), outcome: hostile('outcome'), message: hostile('m') },
      ],
    };
    expect(describeBulkSummary(summary).filter((line) => terminalControl.test(line))).toEqual([]);
  });

  it('the bulk replay progress lines sanitise the call ID', () => {
    const written: string[] = [];
    const stream = {
      isTTY: false,
      write: (text: string) => written.push(text),
    } as unknown as NodeJS.WriteStream;
    createProgressReporter(stream)({
      total: 1,
      done: 1,
      succeeded: 0,
      failed: 0,
      refused: 1,
      item: { callId: hostile('id'), tool: hostile('tool'), outcome: 'refused' },
    });
    expect(written).toHaveLength(1);
    expect(written[0]!.slice(0, -1)).not.toMatch(terminalControl);
  });
});

describe('--json output', () => {
  afterEach(() => vi.restoreAllMocks());

  it('stays valid JSON with the same value, and leaves nothing a terminal would act on', () => {
    const written: string[] = [];
    vi.spyOn(process.stdout, 'write').mockImplementation((text: string | Uint8Array) => {
      written.push(String(text));
      return true;
    });
    printJson(hostileRecord);
    const text = written.join('');
    expect(text.endsWith('\n')).toBe(true);
    // Parses back to exactly the record: escaped once, not twice.
    expect(JSON.parse(text)).toEqual(hostileRecord);
    expect(text.slice(0, -1).replace(/\n/g, '')).not.toMatch(terminalControl);
    expect(text).toContain('\\u001b]0;pwned\\u0007');
    expect(text).toContain('\\u009b31m\\u202e\\u2028');
    expect(text).not.toContain('\\\\u');
  });
});

describe('describeRecord of a call refused before any workflow started', () => {
  it('says there is no call and no run instead of blank lines and `input null`', () => {
    const refused = refusedCallRecord({
      request: { tool: 'read_config', input: { name: 'region' }, key: 'k-1' },
      context: { tenant: 'acme', principal: 'agent-1', principalKind: 'agent' },
      key: 'k-1',
      fingerprint: 'f'.repeat(64),
      reason: 'KEY_MISMATCH',
      message: 'This key was already used with other arguments.',
      tier: 'readonly',
    });
    const lines = describeRecord(refused);
    expect(lines).toContain('call      (none: refused before a call was started)');
    expect(lines).toContain('run       (none: no run was started)');
    expect(lines).toContain('input     (not kept: the call was refused before it started)');
    expect(lines).toContain('key       k-1');
    expect(lines.some((line) => /^(call|run|input)\s*(null)?$/.test(line.trimEnd()))).toBe(false);
    expect(lines).toContain('message   This key was already used with other arguments.');
  });

  it('says a run that ended without a record left its run and input unknown', () => {
    const lines = describeRecord(abnormalCallRecord('toolgate/acme/read_config/~1', 'failed', 'terminated'));
    expect(lines).toContain('call      toolgate/acme/read_config/~1');
    expect(lines).toContain('run       (unknown: the run ended without a record)');
    expect(lines).toContain('input     (unknown: the run ended without a record)');
  });
});
