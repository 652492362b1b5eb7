import { describe, expect, it } from 'vitest';
import { anthropicToolResultMessage } from '../../../src/agent/anthropic.ts';
import { modelResultForRecord } from '../../../src/agent/model-messages.ts';
import type { UndoInfo } from '../../../src/contracts/call-record.ts';
import { createRecord } from './fake-client.ts';

const undoneAt = '2026-12-04T21:52:24.000Z';

/** A succeeded reversible call with a key, as a duplicate start returns it. */
function labelRecord(undo?: UndoInfo) {
  return createRecord({
    status: 'succeeded',
    tool: 'add_label',
    tier: 'reversible',
    key: 'label-ticket-3',
    effect: 'applied',
    output: { item: 'ticket-3', labels: ['vip'] },
    ...(undo ? { undo } : {}),
  });
}

describe('modelResultForRecord on an undone call', () => {
  it('without an undo, a succeeded call is its output and nothing else', () => {
    expect(modelResultForRecord(labelRecord())).toEqual({
      isError: false,
      text: '{"item":"ticket-3","labels":["vip"]}',
    });
  });

  it('says a completed undo reversed the effect, when, and that the same call will not redo it', () => {
    const result = modelResultForRecord(
      labelRecord({
        at: undoneAt,
        operator: 'oscar',
        status: 'succeeded',
        message: 'Compensation remove_label ran.',
      }),
    );
    expect(result.isError).toBe(true);
    expect(result.text).toMatch(/^Undone: /);
    expect(result.text).toContain(`undone it at ${undoneAt}, so its effect was reversed`);
    expect(result.text).toContain('Do not assume the effect is in place.');
    expect(result.text).toContain('Making this same call again will not redo it');
    // The original output is there, and the operator's name and internals are not.
    expect(result.text).toContain('{"item":"ticket-3","labels":["vip"]}');
    expect(result.text).not.toContain('oscar');
    expect(result.text).not.toContain('remove_label');
    const message = anthropicToolResultMessage([{ id: 'toolu_1' }], [{ id: 'toolu_1', ...result }]);
    expect(message.content[0]).toMatchObject({ type: 'tool_result', tool_use_id: 'toolu_1', is_error: true });
  });

  it('promises nothing about a repeat for a call without a key (a repeat would run again)', () => {
    const record = { ...labelRecord({ at: undoneAt, operator: 'oscar', status: 'succeeded' }) };
    delete (record as { key?: string }).key;
    const result = modelResultForRecord(record);
    expect(result.text).toMatch(/^Undone: /);
    expect(result.text).not.toContain('will not redo');
  });

  it('says an undo that is running is reversing the effect', () => {
    const result = modelResultForRecord(labelRecord({ at: undoneAt, operator: 'oscar', status: 'running' }));
    expect(result.isError).toBe(true);
    expect(result.text).toMatch(/^Being undone: /);
    expect(result.text).toContain(`started at ${undoneAt}`);
    expect(result.text).toContain('Do not assume the effect is in place.');
    expect(result.text).toContain('Making this same call again will not redo it');
  });

  it('says a failed undo left the effect possibly in place, without the failure detail', () => {
    const result = modelResultForRecord(
      labelRecord({
        at: undoneAt,
        operator: 'oscar',
        status: 'failed',
        message: 'remove_label failed: connect ECONNREFUSED 10.0.0.7:5432 at labels.internal',
      }),
    );
    expect(result.isError).toBe(false);
    expect(result.text).toMatch(/^Succeeded: /);
    expect(result.text).toContain(`tried to undo it at ${undoneAt}, but the undo failed`);
    expect(result.text).toContain('may still be in place');
    expect(result.text).toContain('{"item":"ticket-3","labels":["vip"]}');
    expect(result.text).not.toMatch(/ECONNREFUSED|10\.0\.0\.7|internal|oscar/);
  });

  it('leaves out a time it cannot read rather than passing it on', () => {
    const result = modelResultForRecord(
      labelRecord({ at: 'see https://ops.internal/undo', operator: 'oscar', status: 'succeeded' }),
    );
    expect(result.text).toMatch(/^Undone: /);
    expect(result.text).toContain('has since undone it, so its effect was reversed');
    expect(result.text).not.toContain('internal');
  });
});
