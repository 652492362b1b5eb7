import { describe, expect, it } from 'vitest';
import { blockRounds } from '../../bench/block-order.ts';

const variants = ['A', 'B', 'B-twin', 'C', 'C-fast', 'D'] as const;

function rounds(seed: number, count: number): string[][] {
  const next = blockRounds(variants, { seed });
  return Array.from({ length: count }, () => next());
}

/** How often `after` ran right after `before`, over all rounds. */
function followCount(all: string[][], before: string, after: string): number {
  return all.filter((order) => order.indexOf(after) === order.indexOf(before) + 1).length;
}

describe('the bench block order', () => {
  it('runs every variant exactly once per round', () => {
    for (const order of rounds(7, 50)) {
      expect([...order].sort()).toEqual([...variants].sort());
    }
  });

  it('repeats a run from its seed, and another seed gives another sequence', () => {
    expect(rounds(123, 15)).toEqual(rounds(123, 15));
    expect(rounds(124, 15)).not.toEqual(rounds(123, 15));
  });

  it('keeps no variant beside the same neighbour, and lets each lead a fair share of rounds', () => {
    const all = rounds(2026, 600);
    // In a uniform permutation of 6 items, B follows A with probability 1/6: 100 of 600 rounds.
    const count = followCount(all, 'A', 'B');
    expect(count).toBeGreaterThan(60);
    expect(count).toBeLessThan(140);
    for (const variant of variants) {
      const leads = all.filter((order) => order[0] === variant).length;
      expect(leads).toBeGreaterThan(60);
      expect(leads).toBeLessThan(140);
    }
  });
});
