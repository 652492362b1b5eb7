/**
 * The order in which the variants run their blocks, one round (every variant once) per repetition
 * and condition.
 *
 * - `shuffled` (the default): each round is a fresh random permutation, drawn from a seeded
 *   generator, so a run can be repeated in the same order with `--seed`. No variant keeps a
 *   neighbour: what one block leaves behind on the server (timers that fire about 10 s later,
 *   history and visibility writes still in flight) falls on every variant alike, on average.
 * - `rotated`: the order of the first round, rotated by one position per round. Every variant
 *   keeps the same predecessor in every round (B always ran right after A), which is how the bench
 *   ordered its blocks until round 10; kept to compare against earlier runs.
 */
export const blockOrderKinds = ['shuffled', 'rotated'] as const;
export type BlockOrderKind = (typeof blockOrderKinds)[number];

export interface BlockOrder {
  readonly kind: BlockOrderKind;
  /** The generator's seed (an unsigned 32-bit integer). Ignored by `rotated`. */
  readonly seed: number;
}

/** A seed for a run that was not given one. */
export function freshSeed(): number {
  return Math.floor(Math.random() * 2 ** 32) >>> 0;
}

/**
 * Returns a function that gives the order of each successive round. The same items and order give
 * the same sequence of rounds, so a run's order can be reproduced from its recorded seed.
 */
export function blockRounds<T>(items: readonly T[], order: BlockOrder): () => T[] {
  if (order.kind === 'rotated') {
    let round = 0;
    return () => {
      const shift = round++ % items.length;
      return [...items.slice(shift), ...items.slice(0, shift)];
    };
  }
  const next = seededUniform(order.seed);
  return () => {
    // Fisher-Yates, back to front: every permutation is equally likely.
    const result = [...items];
    for (let last = result.length - 1; last > 0; last--) {
      const pick = Math.floor(next() * (last + 1));
      [result[last], result[pick]] = [result[pick] as T, result[last] as T];
    }
    return result;
  };
}

/**
 * A small seeded generator of numbers in [0, 1): a 32-bit state advanced by a Weyl step (adding an
 * odd constant, the golden ratio's fraction) and scrambled by multiply-xorshift rounds with the
 * constants of MurmurHash3's 32-bit finaliser. Far more than ordering a dozen blocks needs; the
 * point is that it is reproducible, which Math.random is not.
 */
function seededUniform(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x9e3779b9) >>> 0;
    let mixed = state;
    mixed = Math.imul(mixed ^ (mixed >>> 16), 0x85ebca6b);
    mixed = Math.imul(mixed ^ (mixed >>> 13), 0xc2b2ae35);
    mixed ^= mixed >>> 16;
    return (mixed >>> 0) / 2 ** 32;
  };
}
