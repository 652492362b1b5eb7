import { describe, expect, it } from 'vitest';
import { blockRounds } from '../../bench/block-order.ts';

const variants = ['A', 'B', 'B-E', 'C', 'C-E', 'C-fast', 'D', 'I', 'B-idx', 'B-LA', 'B-0', 'B-read'] as const;

function rounds(kind: 'shuffled' | 'rotated', seed: number, count: number): string[][] {
  const next = blockRounds(variants, { kind, seed });
  return Array.from({ length: count }, () => next());
}

/** How often `after` ran right after `before`, over all rounds. */
function followCount(all: string[][], before: string, after: string): number {
  return all.filter((order) => order.indexOf(after) === order.indexOf(before) + 1).length;
}

describe('the bench block order', () => {
  it('runs every variant exactly once per round', () => {
    for (const order of rounds('shuffled', 7, 50)) {
      expect([...order].sort()).toEqual([...variants].sort());
    }
  });

  it('repeats a run from its seed, and another seed gives another sequence', () => {
    expect(rounds('shuffled', 123, 15)).toEqual(rounds('shuffled', 123, 15));
    expect(rounds('shuffled', 124, 15)).not.toEqual(rounds('shuffled', 123, 15));
  });

  it('shuffled: no variant keeps its neighbour', () => {
    const all = rounds('shuffled', 2026, 300);
    // Under rotation B follows A in every round but the one that starts with B (see below). In a
    // uniform permutation of 12 items, B follows A with probability 1/12: 25 of 300 rounds.
    const count = followCount(all, 'A', 'B');
    expect(count).toBeGreaterThan(10);
    expect(count).toBeLessThan(45);
    // Every variant leads some rounds, and none leads more than a fair share by far.
    for (const variant of variants) {
      const leads = all.filter((order) => order[0] === variant).length;
      expect(leads).toBeGreaterThan(10);
      expect(leads).toBeLessThan(45);
    }
  });

  it('rotated: the old order, in which each variant keeps its predecessor', () => {
    const all = rounds('rotated', 0, 12);
    expect(all[0]).toEqual([...variants]);
    expect(all[1]?.[0]).toBe('B');
    expect(followCount(all, 'A', 'B')).toBe(11);
  });
});
