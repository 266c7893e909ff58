/**
 * One worker's prefix cache: blocks keyed by their chained key, pinned while a running request
 * uses them, evicted least recently used first when they are not.
 *
 * @module
 * @internal
 */

/** @internal */
export class PrefixCache {
  readonly #capacity: number;
  /** Reusable blocks → number of running requests pinning them. */
  readonly #refs = new Map<number, number>();
  /** Reusable blocks that no request pins, oldest first (insertion order is the LRU order). */
  readonly #idle = new Set<number>();
  /** Blocks held by running requests that are not (yet) reusable: fresh prefill, output. */
  #private = 0;

  /** @param capacity - blocks; `Infinity` for an unbounded cache. */
  constructor(capacity: number) {
    this.#capacity = capacity;
  }

  /** Blocks in use: reusable ones plus private ones. */
  get used(): number {
    return this.#refs.size + this.#private;
  }

  get capacity(): number {
    return this.#capacity;
  }

  /** How many leading `keys` are reusable here, at most `limit`. O(match). */
  match(keys: Float64Array, limit: number = keys.length): number {
    let n = 0;
    while (n < limit && this.#refs.has(keys[n]!)) n++;
    return n;
  }

  /**
   * Pins `keys[0, matched)` and reserves `fresh` private blocks, evicting idle blocks as needed.
   * Returns `false` and changes nothing when that does not fit, unless `force` (then the cache
   * may exceed its capacity, so a request larger than the cache still runs). O(matched + evicted).
   */
  admit(keys: Float64Array, matched: number, fresh: number, force: boolean): boolean {
    if (!force && this.#capacity !== Number.POSITIVE_INFINITY) {
      let idlePinned = 0;
      for (let i = 0; i < matched; i++) if (this.#refs.get(keys[i]!) === 0) idlePinned++;
      const evictable = this.#idle.size - idlePinned;
      if (this.#capacity - this.used + evictable < fresh) return false;
    }
    for (let i = 0; i < matched; i++) {
      const key = keys[i]!;
      const refs = this.#refs.get(key)!;
      if (refs === 0) this.#idle.delete(key);
      this.#refs.set(key, refs + 1);
    }
    this.#private += fresh;
    this.#evict();
    return true;
  }

  /**
   * Makes `keys[from, to)` reusable: each becomes a pinned reusable block, converting one of the
   * request's private blocks; a key another request already made reusable stays private.
   * Returns how many became reusable (the request now pins them). O(to − from).
   */
  publish(keys: Float64Array, from: number, to: number, pinned: number[]): number {
    let published = 0;
    for (let i = from; i < to; i++) {
      const key = keys[i]!;
      if (this.#refs.has(key)) continue;
      this.#refs.set(key, 1);
      this.#private--;
      pinned.push(key);
      published++;
    }
    return published;
  }

  /**
   * Adds `keys[from, to)` as idle reusable blocks (a finished request's output), converting
   * private blocks; keys already present are left alone. Returns how many were added.
   */
  keep(keys: Float64Array, from: number, to: number): number {
    let kept = 0;
    for (let i = from; i < to; i++) {
      const key = keys[i]!;
      if (this.#refs.has(key)) continue;
      this.#refs.set(key, 0);
      this.#idle.add(key);
      this.#private--;
      kept++;
    }
    this.#evict();
    return kept;
  }

  /** Unpins `pinned` (most recently used last) and frees `privateBlocks`. O(pinned). */
  release(pinned: readonly number[], privateBlocks: number): void {
    for (let i = 0; i < pinned.length; i++) {
      const key = pinned[i]!;
      const refs = this.#refs.get(key)! - 1;
      this.#refs.set(key, refs);
      if (refs === 0) this.#idle.add(key);
    }
    this.#private -= privateBlocks;
  }

  /** Evicts idle blocks, oldest first, until the cache fits (or nothing idle is left). */
  #evict(): void {
    if (this.used <= this.#capacity) return;
    for (const key of this.#idle) {
      if (this.used <= this.#capacity) break;
      this.#idle.delete(key);
      this.#refs.delete(key);
    }
  }
}
