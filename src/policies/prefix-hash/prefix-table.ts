/**
 * A bounded table of recently seen prefix hashes: which block-boundary prefixes this policy has
 * met, what each one continued with, and whether two requests continued it differently (a branch
 * point, where prompts diverge). Only hashes are stored, never tokens or text.
 *
 * @module
 * @internal
 */

/** Slots per bucket; a new hash replaces the least recently used slot of its bucket. */
const WAYS = 4;
/**
 * Words per slot: hash hi, hash lo, the low words of the first continuation's hash and of its
 * {@link PROBES} shorter probes, last use, flags — 32 bytes, so a bucket is two cache lines and a
 * probe touches nothing else.
 */
const STRIDE = 8;
const NEXT = 2;
const SUBS = 3;
const STAMP = 6;
const FLAGS = 7;
const OCCUPIED = 1;
const HAS_NEXT = 2;
const BRANCHES = 4;
/** A branch point lies below this prefix: a walk reaching it must go on. */
const ABOVE_BRANCH = 8;
/** Bits 8–15 of the flags: the branch point's probe index. */
const DEPTH_SHIFT = 8;

/** @internal Probes per block stored with a continuation (the block's ⅛, ¼ and ½). */
export const PROBES = 3;

/** @internal {@link PrefixTable.compare}: no continuation recorded yet. */
export const NO_NEXT = 0;
/** @internal {@link PrefixTable.compare}: the recorded continuation is this one. */
export const SAME_NEXT = 1;
/** @internal {@link PrefixTable.compare}: a different one is recorded (a new branch point). */
export const OTHER_NEXT = 2;
/** @internal {@link PrefixTable.compare}: the prefix is a known branch point. */
export const BRANCH = 3;

/**
 * @internal A 4-way set-associative table of 64-bit prefix hashes with least-recently-used
 * replacement per bucket. Memory: 32 bytes per slot, allocated once. Every method is O(1) and
 * allocates nothing. Hashes come as two 32-bit halves, signed or unsigned alike (stored signed).
 */
export class PrefixTable {
  readonly #mask: number;
  /** `STRIDE` words per slot; the last-use stamps are clock readings compared modulo 2³². */
  readonly #words: Int32Array;
  #clock = 0;

  /** Holds at least `capacity` hashes (rounded up to 4 × a power of two). */
  constructor(capacity: number) {
    let buckets = 1;
    while (buckets * WAYS < capacity) buckets *= 2;
    this.#mask = buckets - 1;
    this.#words = new Int32Array(buckets * WAYS * STRIDE);
  }

  /** Slots in the table. */
  get capacity(): number {
    return this.#words.length / STRIDE;
  }

  /** The slot holding (hi, lo), marked as just used, or -1. */
  find(hi: number, lo: number): number {
    hi |= 0;
    lo |= 0;
    const words = this.#words;
    const first = (lo & this.#mask) * WAYS;
    for (let slot = first; slot < first + WAYS; slot++) {
      const at = STRIDE * slot;
      if (words[at + 1] === lo && words[at] === hi && (words[at + FLAGS]! & OCCUPIED) !== 0) {
        this.#clock = (this.#clock + 1) | 0;
        words[at + STAMP] = this.#clock;
        return slot;
      }
    }
    return -1;
  }

  /** Stores (hi, lo), known to be absent, in a free or the least recently used slot of its bucket. */
  insert(hi: number, lo: number): void {
    const words = this.#words;
    const clock = (this.#clock = (this.#clock + 1) | 0);
    const first = (lo & this.#mask) * WAYS;
    let victim = first;
    let oldest = -1;
    for (let slot = first; slot < first + WAYS; slot++) {
      const at = STRIDE * slot;
      if ((words[at + FLAGS]! & OCCUPIED) === 0) {
        victim = slot;
        break;
      }
      const age = (clock - words[at + STAMP]!) >>> 0;
      if (age > oldest) {
        oldest = age;
        victim = slot;
      }
    }
    const at = STRIDE * victim;
    words[at] = hi;
    words[at + 1] = lo;
    words[at + STAMP] = clock;
    words[at + FLAGS] = OCCUPIED;
  }

  /** How the prefix in `slot` was continued so far, compared with a continuation whose hash's low word is `lo`. */
  compare(slot: number, lo: number): number {
    lo |= 0;
    const words = this.#words;
    const at = STRIDE * slot;
    const f = words[at + FLAGS]!;
    if ((f & BRANCHES) !== 0) return BRANCH;
    if ((f & HAS_NEXT) === 0) return NO_NEXT;
    return words[at + NEXT] === lo ? SAME_NEXT : OTHER_NEXT;
  }

  /** Records the first continuation of the prefix in `slot`: its hash's and its probes' low words. */
  setNext(slot: number, lo: number, probes: Int32Array | Uint32Array): void {
    const words = this.#words;
    const at = STRIDE * slot;
    words[at + NEXT] = lo;
    for (let i = 0; i < PROBES; i++) words[at + SUBS + i] = probes[i]!;
    words[at + FLAGS] = words[at + FLAGS]! | HAS_NEXT;
  }

  /**
   * Marks the prefix in `slot` as a branch point, given the probes of a continuation that
   * differs from the recorded one. @returns the branch's depth: the index of the shortest probe
   * that tells the two apart, {@link PROBES} when only the whole block does.
   */
  setBranch(slot: number, probes: Int32Array | Uint32Array): number {
    const words = this.#words;
    const at = STRIDE * slot;
    let depth = 0;
    while (depth < PROBES && words[at + SUBS + depth] === (probes[depth]! | 0)) depth++;
    words[at + FLAGS] = words[at + FLAGS]! | BRANCHES | (depth << DEPTH_SHIFT);
    return depth;
  }

  /**
   * Marks the prefix in `slot` as lying above a branch point, so walks past a shallower branch
   * point go on through it. Lost when the slot is replaced.
   */
  setAboveBranch(slot: number): void {
    const at = STRIDE * slot + FLAGS;
    this.#words[at] = this.#words[at]! | ABOVE_BRANCH;
  }

  /** Whether the prefix in `slot` is a branch point or lies above one (see {@link PrefixTable.setAboveBranch}). */
  leadsToBranch(slot: number): boolean {
    return (this.#words[STRIDE * slot + FLAGS]! & (BRANCHES | ABOVE_BRANCH)) !== 0;
  }

  /** The depth of the branch point in `slot` (see {@link PrefixTable.setBranch}), or -1 when it is none. */
  branchDepth(slot: number): number {
    const f = this.#words[STRIDE * slot + FLAGS]!;
    return (f & BRANCHES) === 0 ? -1 : f >>> DEPTH_SHIFT;
  }

  /** Forgets every hash. O(capacity). */
  clear(): void {
    this.#words.fill(0);
    this.#clock = 0;
  }
}
