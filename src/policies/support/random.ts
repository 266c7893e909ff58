/**
 * Random sources for policies: `Math.random` by default, or a seeded generator so a run can be
 * replayed exactly (tests, the simulator).
 *
 * @module
 * @internal
 */

/** Returns a number in [0, 1). @public */
export type RandomSource = () => number;

/**
 * A fast seeded generator (mulberry32): the same seed gives the same sequence in every process.
 *
 * @internal
 */
export function seededRandom(seed: number): RandomSource {
  // State in a typed array: a closure variable holding a full 32-bit value would be boxed as a
  // heap number on every step.
  const state = new Uint32Array([seed]);
  return () => {
    const a = (state[0]! + 0x6d2b79f5) >>> 0;
    state[0] = a;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** @internal An integer in [0, n), n ≥ 1. */
export function randomIndex(random: RandomSource, n: number): number {
  const i = Math.floor(random() * n);
  return Math.min(n - 1, Math.max(0, i));
}
