/**
 * Refusals that used to mislead: each value names what it is and what to send instead.
 */
import { describe, expect, it } from 'vitest';
import { addressProblem } from '../../../activities/safety/safe-url.ts';
import type { CallContext } from '../../../src/contracts/call-record.ts';
import { prepareCall } from '../../../src/contracts/prepare-call.ts';

const context: CallContext = { tenant: 't', principal: 'p', principalKind: 'agent' };

function refusal(input: unknown): { reason?: string; message?: string } {
  const prepared = prepareCall({ tool: 'read_config', input }, context, { unique: 'u' });
  return prepared.ok ? {} : { reason: prepared.record.reason, message: prepared.record.message };
}

describe('arguments that are not plain JSON', () => {
  it('are INVALID_INPUT, naming the value and what to send instead', () => {
    const cycle: Record<string, unknown> = {};
    cycle['self'] = { back: cycle };
    class Money {
      cents = 5;
    }
    const cases: Array<[unknown, string]> = [
      // Was PAYLOAD_TOO_LARGE ("cannot be encoded as JSON").
      [{ amount: 10n }, 'input.amount is a BigInt; send it as a number if it fits, or as a string.'],
      // Was a fingerprint mismatch: the client hashed {} and the workflow got a string.
      [
        { when: new Date(0) },
        'input.when is a Date; send it as an ISO 8601 string, e.g. date.toISOString().',
      ],
      // Was silently sent as {}.
      [
        { tags: new Map([['a', 1]]) },
        'input.tags is a Map; send a plain object, e.g. Object.fromEntries(map).',
      ],
      [{ ids: new Set([1]) }, 'input.ids is a Set; send an array, e.g. [...set].'],
      [{ price: new Money() }, 'input.price is a Money instance; send plain JSON'],
      [{ items: [1, undefined] }, 'input.items[1] is undefined; JSON has no such value'],
      [{ ratio: Number.NaN }, 'input.ratio is NaN; JSON has no such number'],
      [cycle, 'input.self.back refers back to a value that contains it; JSON cannot carry a cycle.'],
    ];
    for (const [input, message] of cases) {
      const refused = refusal(input);
      expect(refused.reason, message).toBe('INVALID_INPUT');
      expect(refused.message, message).toContain(`The arguments are not plain JSON: ${message}`);
    }
  });

  it('lets plain JSON through, the same object twice side by side included', () => {
    const shared = { x: 1 };
    expect(
      prepareCall({ tool: 'read_config', input: { a: shared, b: [shared, null, 'x', 2, true] } }, context, {
        unique: 'u',
      }).ok,
    ).toBe(true);
    // An undefined field is left out, as JSON.stringify does.
    expect(prepareCall({ tool: 'read_config', input: { a: undefined } }, context, { unique: 'u' }).ok).toBe(
      true,
    );
  });
});

describe('addresses a safe URL may not reach', () => {
  it('names loopback and unspecified IPv6 for what they are, not as IPv4-compatible', () => {
    expect(addressProblem('::1')).toBe('it is not a public internet address (loopback)');
    expect(addressProblem('::')).toBe('it is not a public internet address (unspecified)');
    expect(addressProblem('::ffff:10.0.0.1')).toBe('IPv4-mapped IPv6 addresses are not allowed');
  });
});
