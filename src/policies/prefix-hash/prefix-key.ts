/**
 * The prefix key of a request. Prompts are cut into blocks of N tokens (as little-endian uint32)
 * or, without tokens, of 4·N characters (UTF-8); the hash of the first k blocks is xxh64 of block
 * k seeded with the hash of the first k − 1 (the first block: seed 0, or the whole prompt when it
 * is shorter than a block). The key is the hash through the first ⅛, ¼, ½ or whole block past
 * the deepest *branch point* — a prefix that earlier requests continued in two different ways —
 * whichever is the shortest that told those continuations apart; the branch point itself when
 * the prompt ends before that; with no branch point known, the first block's hash. Stable across
 * processes for the same table contents. Token blocks are hashed by the block hasher (each block
 * copied into its memory once, its hashes computed there), text by xxhash-wasm; hash halves are
 * kept as signed 32-bit integers.
 *
 * @module
 * @internal
 */
import { blockHasher } from '../../core/block-hasher.js';
import type { Hasher } from '../../core/hash.js';
import { NO_NEXT, OTHER_NEXT, PROBES, type PrefixTable } from './prefix-table.js';

/** @internal Hashes request prefixes into {@link PrefixKey.hi} / {@link PrefixKey.lo}. */
export class PrefixKey {
  readonly #block: number;
  readonly #maxBlocks: number;
  readonly #table: PrefixTable | undefined;
  /** The probes of the block being walked (see {@link PROBES}). */
  readonly #probeHi = new Int32Array(PROBES);
  readonly #probeLo = new Int32Array(PROBES);
  /** The table slots of the prefixes walked by the current request, shallowest first. */
  readonly #path: Int32Array;
  // Hash halves are kept as signed 32-bit integers: values V8 passes on without boxing them.
  #hi = 0;
  #lo = 0;
  /** The last {@link PrefixKey.#hashPart}. */
  #partHi = 0;
  #partLo = 0;

  /**
   * @param blockTokens - N, tokens per block.
   * @param maxBlocks - the most blocks hashed per request (≥ 1).
   * @param table - the seen prefixes; without one, the key is the first block's hash.
   */
  constructor(blockTokens: number, maxBlocks: number, table: PrefixTable | undefined) {
    this.#block = blockTokens;
    this.#maxBlocks = Math.max(1, maxBlocks);
    this.#table = table;
    this.#path = new Int32Array(table === undefined ? 0 : this.#maxBlocks);
  }

  /** High 32 bits of the last key, as a signed 32-bit integer (the ring reads it unsigned). */
  get hi(): number {
    return this.#hi;
  }

  /** Low 32 bits of the last key, signed like {@link PrefixKey.hi}. */
  get lo(): number {
    return this.#lo;
  }

  /**
   * Computes the request's key, updating the table. Cost: one xxh64 per block hashed — through
   * the block after the one that holds the key, when the prompt's path has a branch point, else
   * up to the first prefix the table has not seen; at most `maxBlocks` — plus one table lookup
   * each, whatever the prompt's length; one more xxh64 past a branch point, three more when a
   * prefix is first continued or branches.
   *
   * @returns `false` when the request has neither tokens nor text (nothing hashed).
   */
  hash(hasher: Hasher, tokens: ArrayLike<number> | undefined, text: string | undefined): boolean {
    const size = this.#block;
    if (
      tokens !== undefined &&
      tokens !== null &&
      typeof tokens === 'object' &&
      tokens.length > 0
    ) {
      const units = tokens.length;
      const words = blockHasher();
      const count = Math.min(units, size);
      words.loadWords(tokens, 0, count);
      words.hashWords(count, 0, 0);
      this.#hi = words.lastHi;
      this.#lo = words.lastLo;
      if (units >= size + probeLength(0, size) && this.#table !== undefined) {
        this.#follow(hasher, this.#table, tokens, undefined, units, size);
      }
      return true;
    }
    if (typeof text === 'string' && text.length > 0) {
      const units = text.length;
      hasher.hashString(units <= 4 * size ? text : text.slice(0, 4 * size));
      this.#hi = hasher.hi | 0;
      this.#lo = hasher.lo | 0;
      if (units >= 4 * size + probeLength(0, 4 * size) && this.#table !== undefined) {
        this.#follow(hasher, this.#table, undefined, text, units, 4 * size);
      }
      return true;
    }
    return false;
  }

  /**
   * The walk past the first block (just hashed; the prompt reaches at least the shortest probe
   * past it — a shorter one has the first block's key whatever the table holds): each
   * block-boundary prefix is looked up, its continuation recorded, and the key moved past every
   * branch point met, up to the first prefix not seen before. Past a branch point, the walk also
   * stops once it has recorded the continuation of the first prefix that neither is a branch
   * point nor lies above one (see {@link PrefixTable.setAboveBranch}): no known branch point lies
   * deeper, and that continuation is what shows this prefix becoming one. So a conversation's
   * turn costs the depth of its deepest branch point plus two blocks, not its length; the price
   * is that a divergence deeper than that is not looked for. A new branch point flags every
   * prefix walked above it; once one of those is replaced in the table, walks stop there and key
   * on the shallower branch point.
   */
  #follow(
    hasher: Hasher,
    table: PrefixTable,
    tokens: ArrayLike<number> | undefined,
    text: string | undefined,
    units: number,
    size: number,
  ): void {
    // The hash of the prefix before the block walked: the key so far, and the next one's seed.
    let hi = this.#hi;
    let lo = this.#lo;
    let slot = table.find(hi, lo);
    if (slot < 0) {
      table.insert(hi, lo);
      return;
    }
    const limit = Math.min(units, this.#maxBlocks * size);
    const path = this.#path;
    let walked = 0;
    let passed = false;
    for (let start = size; start < limit; start += size) {
      path[walked++] = slot;
      const avail = Math.min(limit - start, size);
      if (tokens !== undefined) blockHasher().loadWords(tokens, start, avail);
      // Past a branch point, the key is the prefix through the shortest probe that told its
      // branches apart: the same for every turn of a conversation, even a first turn that ends
      // inside this block. A prompt too short for it stays on the branch point itself.
      const depth = table.branchDepth(slot);
      if (depth >= 0) {
        passed = true;
        const length = probeLength(depth, size);
        if (avail < length) {
          this.#hi = hi;
          this.#lo = lo;
        } else if (length < size) {
          this.#hashPart(hasher, text, start, length, hi, lo);
          this.#hi = this.#partHi;
          this.#lo = this.#partLo;
        }
      }
      if (avail < size) return;
      this.#hashPart(hasher, text, start, size, hi, lo);
      const nextHi = this.#partHi;
      const nextLo = this.#partLo;
      if (depth === PROBES) {
        this.#hi = nextHi;
        this.#lo = nextLo;
      }
      const state = table.compare(slot, nextLo);
      if (state === NO_NEXT || state === OTHER_NEXT) {
        this.#probe(hasher, text, start, size, hi, lo);
        if (state === NO_NEXT) table.setNext(slot, nextLo, this.#probeLo);
        else {
          const found = table.setBranch(slot, this.#probeLo);
          this.#hi = found < PROBES ? this.#probeHi[found]! : nextHi;
          this.#lo = found < PROBES ? this.#probeLo[found]! : nextLo;
          for (let i = 0; i < walked - 1; i++) table.setAboveBranch(path[i]!);
          passed = true;
        }
      }
      if (passed && !table.leadsToBranch(slot)) return;
      hi = nextHi;
      lo = nextLo;
      slot = table.find(hi, lo);
      if (slot < 0) {
        table.insert(hi, lo);
        return;
      }
    }
    // A branch point at the deepest boundary walked has nothing past it to tell branches apart.
    if (table.branchDepth(slot) >= 0) {
      this.#hi = hi;
      this.#lo = lo;
    }
  }

  /** Hashes the {@link PROBES} probes of the block at `start` into `#probeHi` / `#probeLo`. */
  #probe(
    hasher: Hasher,
    text: string | undefined,
    start: number,
    size: number,
    seedHi: number,
    seedLo: number,
  ): void {
    for (let depth = 0; depth < PROBES; depth++) {
      this.#hashPart(hasher, text, start, probeLength(depth, size), seedHi, seedLo);
      this.#probeHi[depth] = this.#partHi;
      this.#probeLo[depth] = this.#partLo;
    }
  }

  /**
   * Hashes `count` units from `start` seeded with the hash `seedHi:seedLo` of the prefix before
   * `start`, into `#partHi` / `#partLo`: characters of `text`, else the first `count` tokens
   * loaded from `start` into the block hasher.
   */
  #hashPart(
    hasher: Hasher,
    text: string | undefined,
    start: number,
    count: number,
    seedHi: number,
    seedLo: number,
  ): void {
    if (text !== undefined) {
      hasher.chainStringFrom(text.slice(start, start + count), seedHi, seedLo);
      this.#partHi = hasher.hi | 0;
      this.#partLo = hasher.lo | 0;
      return;
    }
    const words = blockHasher();
    words.hashWords(count, seedHi, seedLo);
    this.#partHi = words.lastHi;
    this.#partLo = words.lastLo;
  }
}

/** Units of a block of `size` hashed for probe `depth`: ⅛, ¼, ½ of it, then all of it. */
function probeLength(depth: number, size: number): number {
  return depth >= PROBES ? size : Math.max(1, size >>> (PROBES - depth));
}
