/**
 * What a model is told about retrying, for every reason code, tier, key and the tool's own word:
 * "may help" only when repeating the same call can change the outcome.
 */
import { describe, expect, it } from 'vitest';
import { modelResultForRecord } from '../../../src/agent/model-messages.ts';
import { type CallEffect, type CallRecord, keyIsReleased } from '../../../src/contracts/call-record.ts';
import { type ReasonCode, reasonCodes } from '../../../src/contracts/reason-codes.ts';
import { type SideEffectTier, sideEffectTiers } from '../../../src/contracts/tier.ts';

/** The status and effect a closed call with this reason has, as the workflow closes it. */
function closing(reason: ReasonCode): { status: CallRecord['status']; effects: CallEffect[] } {
  switch (reason) {
    case 'TIMEOUT':
      return { status: 'timeout', effects: ['none', 'unknown'] };
    case 'CANCELLED':
      return { status: 'cancelled', effects: ['none', 'unknown'] };
    case 'TOOL_FAILED':
    case 'PAYLOAD_TOO_LARGE':
      return { status: 'failed', effects: ['none', 'applied', 'unknown'] };
    case 'OUTCOME_UNKNOWN':
      return { status: 'failed', effects: ['unknown'] };
    default:
      return { status: 'denied', effects: ['none'] };
  }
}

function record(
  reason: ReasonCode,
  status: CallRecord['status'],
  effect: CallEffect,
  tier: SideEffectTier,
  key: string | undefined,
  retryable: boolean | undefined,
): CallRecord {
  return {
    callId: 'toolgate/t/x/k/1',
    runId: 'run',
    tool: 'x',
    tier,
    tenant: 't',
    principal: 'p',
    principalKind: 'agent',
    ...(key !== undefined ? { key } : {}),
    fingerprint: 'f',
    input: {},
    status,
    effect,
    reason,
    message: 'What happened.',
    attempts: 1,
    transitions: [],
    refusedDecisions: [],
    ...(retryable !== undefined ? { retryable } : {}),
  };
}

describe('retry guidance to the model', () => {
  it('says a retry may help only for a retryable reason, a tool that did not say no, and a key that is free', () => {
    let cases = 0;
    for (const reason of Object.keys(reasonCodes) as ReasonCode[]) {
      const { status, effects } = closing(reason);
      for (const effect of effects) {
        for (const tier of sideEffectTiers) {
          for (const key of [undefined, 'order-42']) {
            for (const retryable of [undefined, false]) {
              const call = record(reason, status, effect, tier, key, retryable);
              const helps =
                reasonCodes[reason].retryable &&
                retryable !== false &&
                (key === undefined || keyIsReleased(call, tier));
              const { isError, text } = modelResultForRecord(call);
              const label = JSON.stringify({ reason, effect, tier, key, retryable });
              expect(isError, label).toBe(true);
              expect(text.startsWith(`Error ${reason}:`), label).toBe(true);
              expect(text.includes('may help'), label).toBe(helps);
              expect(text.includes('will not help'), label).toBe(!helps);
              // A "will not help" never ends with advice to retry.
              if (!helps) expect(text, label).not.toMatch(/retry once|try again/i);
              cases++;
            }
          }
        }
      }
    }
    expect(cases).toBeGreaterThan(200);
  });

  it("passes the tool's own no on: a ToolError({ retryable: false }) reads as final", () => {
    const { text } = modelResultForRecord(
      record('TOOL_FAILED', 'failed', 'none', 'readonly', undefined, false),
    );
    expect(text).toBe(
      'Error TOOL_FAILED: What happened. Retrying the same call unchanged will not help: the tool said it cannot succeed as asked. Do not repeat it; change the request, or report the error to the user.',
    );
  });

  it('tells a call that keeps its key that a repeat only returns this result', () => {
    const { text } = modelResultForRecord(
      record('TOOL_FAILED', 'failed', 'applied', 'irreversible', 'k-1', undefined),
    );
    expect(text).toContain('its idempotency key is taken, so a repeat only returns this result again');
  });
});
