/**
 * The keys of a request's prefix in the shared index: chained xxh64 hashes of its leading
 * blocks (tokens, else characters), seeded by the model, as `p:<16 hex digits>`. No prompt text leaves
 * the process: only these hashes.
 *
 * @module
 * @internal
 */
import { blockHashHalves } from '../cache/block-hashes.js';
import { loadedHasher } from '../core/hash.js';

const hex = (n: number): string => (n >>> 0).toString(16).padStart(8, '0');
/** The prefix of every block key (the store adds its namespace before it). */
const BLOCK = 'p:';

/** @internal Computes the shared-index block keys of requests. */
export class PrefixBlocks {
  readonly #blockTokens: number;
  readonly #blockChars: number;
  readonly #maxBlocks: number;
  readonly #hi: Uint32Array;
  readonly #lo: Uint32Array;
  /** model → [seed hi, seed lo] for token chains, and the text seed. */
  readonly #seeds = new Map<string, { hi: number; lo: number; text: bigint }>();

  constructor(blockTokens: number, blockChars: number, maxBlocks: number) {
    this.#blockTokens = blockTokens;
    this.#blockChars = blockChars;
    this.#maxBlocks = maxBlocks;
    this.#hi = new Uint32Array(maxBlocks);
    this.#lo = new Uint32Array(maxBlocks);
  }

  /** Tokens (or characters) per block of `tokens` (or `text`). */
  unitsPerBlock(kind: 'tokens' | 'text'): number {
    return kind === 'tokens' ? this.#blockTokens : this.#blockChars;
  }

  /**
   * The keys of the full blocks of `key` (tokens or text), at most `maxBlocks`; empty when the
   * hasher is not loaded yet (the registry loads it) or the key is shorter than one block.
   */
  of(model: string, key: string | ArrayLike<number>): string[] {
    const seed = this.#seedOf(model);
    if (seed === undefined) return [];
    const out: string[] = [];
    if (typeof key !== 'string') {
      const n = blockHashHalves(
        key,
        this.#blockTokens,
        this.#maxBlocks,
        this.#hi,
        this.#lo,
        seed.hi,
        seed.lo,
      );
      for (let i = 0; i < n; i++) out.push(BLOCK + hex(this.#hi[i]!) + hex(this.#lo[i]!));
      return out;
    }
    const hasher = loadedHasher()!;
    const size = this.#blockChars;
    const blocks = Math.min(Math.floor(key.length / size), this.#maxBlocks);
    let last = seed.text;
    for (let i = 0; i < blocks; i++) {
      hasher.chainString(key.slice(i * size, (i + 1) * size), last);
      last = hasher.last;
      out.push(BLOCK + hex(hasher.hi) + hex(hasher.lo));
    }
    return out;
  }

  #seedOf(model: string): { hi: number; lo: number; text: bigint } | undefined {
    let seed = this.#seeds.get(model);
    if (seed !== undefined) return seed;
    const hasher = loadedHasher();
    if (hasher === undefined) return undefined;
    hasher.hashString(`fleetroute:tokens:${model}`);
    const hi = hasher.hi;
    const lo = hasher.lo;
    seed = { hi, lo, text: hasher.h64(`fleetroute:text:${model}`) };
    if (this.#seeds.size >= 1024) this.#seeds.clear();
    this.#seeds.set(model, seed);
    return seed;
  }
}
