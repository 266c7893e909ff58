/**
 * Random index sources for policies: `Math.random` by default, a seeded generator so a run can
 * be replayed exactly (tests, the simulator), or the caller's own function.
 *
 * Sources hand out integer indices rather than floats: a float returned from a function that is
 * not inlined is boxed on the heap, an index below 2³⁰ is not, so drawing allocates nothing.
 *
 * @module
 * @internal
 */

/** @internal Draws uniform random indices. */
export interface RandomSource {
  /** A uniform integer in [0, n), n ≥ 1. */
  index(n: number): number;
}

/** `i` within [0, n); NaN (a caller's source returning garbage) reads as 0. */
function clamp(i: number, n: number): number {
  if (!(i > 0)) return 0;
  return i >= n ? n - 1 : i;
}

class MathRandomSource implements RandomSource {
  index(n: number): number {
    return clamp(Math.floor(Math.random() * n), n);
  }
}

/** mulberry32: the same seed gives the same sequence in every process. */
class SeededSource implements RandomSource {
  // A typed array keeps the full 32-bit state unboxed.
  readonly #state: Uint32Array;

  constructor(seed: number) {
    this.#state = new Uint32Array([seed]);
  }

  index(n: number): number {
    const a = (this.#state[0]! + 0x6d2b79f5) >>> 0;
    this.#state[0] = a;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return clamp(Math.floor((((t ^ (t >>> 14)) >>> 0) / 4_294_967_296) * n), n);
  }
}

class FunctionSource implements RandomSource {
  readonly #random: () => number;

  constructor(random: () => number) {
    this.#random = random;
  }

  index(n: number): number {
    const x = this.#random();
    return clamp(Math.floor((typeof x === 'number' ? x : 0) * n), n);
  }
}

const MATH_RANDOM: RandomSource = new MathRandomSource();

/** @internal `Math.random`, shared. */
export function mathRandom(): RandomSource {
  return MATH_RANDOM;
}

/** @internal A deterministic source for `seed`. */
export function seededRandom(seed: number): RandomSource {
  return new SeededSource(seed);
}

/** @internal A source over the caller's `() => number` in [0, 1) (values outside are clamped). */
export function functionRandom(random: () => number): RandomSource {
  return new FunctionSource(random);
}

/** @internal An integer in [0, n), n ≥ 1. */
export function randomIndex(random: RandomSource, n: number): number {
  return random.index(n);
}
