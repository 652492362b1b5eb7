import { describe, expect, it } from 'vitest';
import { readConfig } from '../../../examples/contracts.ts';
import { checkArguments, describeIssues } from '../../../src/contracts/check-arguments.ts';

describe('the validation gate’s message', () => {
  it('cuts an issue listing thousands of unknown keys to 200 characters', () => {
    const input: Record<string, string> = { name: 'region' };
    for (let index = 0; index < 2000; index++) input[`extra_key_${index}`] = 'x';
    const check = checkArguments(readConfig, input);
    expect(check.ok).toBe(false);
    if (check.ok) return;
    // Before the cut this message listed all 2,000 keys (about 30,000 characters).
    expect(check.message.length).toBeLessThan(400);
    expect(check.message).toMatch(/^Invalid arguments: Unrecognized keys: "extra_key_0", "extra_key_1"/);
    expect(check.message).toMatch(/…\. Fix the arguments named in the error and call the tool again\.$/);
  });

  it('keeps short issues whole and counts the ones past five', () => {
    const issues = Array.from({ length: 7 }, (_, index) => ({
      path: ['items', index],
      message: 'Required.',
    }));
    expect(describeIssues(issues)).toBe(
      'Invalid arguments: items.0: Required; items.1: Required; items.2: Required; items.3: Required; items.4: Required (and 2 more). Fix the arguments named in the error and call the tool again.',
    );
    const long = describeIssues([{ path: ['p'], message: 'y'.repeat(500) }]);
    expect(long).toContain(`p: ${'y'.repeat(196)}…. Fix`);
  });
});
