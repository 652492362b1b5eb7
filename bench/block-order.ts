/**
 * The order in which the variants run their blocks: one round (every variant once) per repetition
 * and condition, each round a fresh random permutation drawn from a seeded generator. No variant
 * keeps a neighbour, so what one block leaves behind on the server (timers that fire about 10 s
 * later, history and visibility writes still in flight) falls on every variant alike, on average;
 * and the seed, which every run records, repeats a run's order with `--seed`.
 */
export interface BlockOrder {
  /** The generator's seed (an unsigned 32-bit integer). */
  readonly seed: number;
}

/** A seed for a run that was not given one. */
export function freshSeed(): number {
  return Math.floor(Math.random() * 2 ** 32) >>> 0;
}

/**
 * Returns a function that gives the order of each successive round. The same items and seed give
 * the same sequence of rounds, so a run's order can be reproduced from its recorded seed.
 */
export function blockRounds<T>(items: readonly T[], order: BlockOrder): () => T[] {
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
 * constants of MurmurHash3's 32-bit finaliser. Far more than ordering a few blocks needs; the
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
