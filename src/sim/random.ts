/**
 * `SeededRandom`: the simulator's only source of randomness. Every workload, arrival process and
 * policy seed derives from one integer, so a run is reproducible bit for bit.
 *
 * @module
 */

/**
 * A small, fast, seeded generator (sfc32, 128 bits of state). Not cryptographic.
 *
 * @public
 */
export class SeededRandom {
  #a: number;
  #b: number;
  #c: number;
  #d: number;

  /** @param seed - any integer; equal seeds give equal sequences. */
  constructor(seed: number) {
    // splitmix32 spreads the seed over the four words.
    let s = seed >>> 0;
    const next = (): number => {
      s = (s + 0x9e3779b9) >>> 0;
      let z = s;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
      return (z ^ (z >>> 16)) >>> 0;
    };
    this.#a = next();
    this.#b = next();
    this.#c = next();
    this.#d = next();
    for (let i = 0; i < 12; i++) this.uint32();
  }

  /** A uniform 32-bit unsigned integer. O(1). */
  uint32(): number {
    const t = (((this.#a + this.#b) >>> 0) + this.#d) >>> 0;
    this.#d = (this.#d + 1) >>> 0;
    this.#a = this.#b ^ (this.#b >>> 9);
    this.#b = (this.#c + (this.#c << 3)) >>> 0;
    this.#c = ((this.#c << 21) | (this.#c >>> 11)) >>> 0;
    this.#c = (this.#c + t) >>> 0;
    return t;
  }

  /** A uniform number in [0, 1). O(1). */
  next(): number {
    return this.uint32() / 4_294_967_296;
  }

  /** A uniform integer in [0, n). O(1). */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }

  /** An exponentially distributed number with the given mean. O(1). */
  exponential(mean: number): number {
    return -mean * Math.log(1 - this.next());
  }

  /** Shuffles `items` in place (Fisher–Yates) and returns it. O(n). */
  shuffle<T>(items: T[]): T[] {
    for (let i = items.length - 1; i > 0; i--) {
      const j = this.int(i + 1);
      const t = items[i]!;
      items[i] = items[j]!;
      items[j] = t;
    }
    return items;
  }

  /** `n` random token ids below `vocabulary` (default 128,000). O(n). */
  tokens(n: number, vocabulary = 128_000): Uint32Array {
    const out = new Uint32Array(n);
    for (let i = 0; i < n; i++) out[i] = this.int(vocabulary);
    return out;
  }

  /** A new generator seeded from this one: independent streams for independent parts. */
  fork(): SeededRandom {
    return new SeededRandom(this.uint32());
  }
}
