/**
 * The engine blocks a {@link KvEventTranslator} remembers, least recently stored first, with the
 * oldest found in O(1) for eviction.
 *
 * @module
 * @internal
 */

/** @internal No slot: an absent hash, or the end of the list. */
export const NONE = -1;
/** Slots allocated at first; the link arrays double as blocks are added. */
const MIN_SLOTS = 64;

/**
 * @internal Engine hash → the block's model and fleetroute keys, in the order the blocks were
 * last stored. Blocks live in slots: parallel arrays of hash, model, keys and a stamp (the
 * caller's number for the event that stored the block), with `prev`/`next` links of the list
 * (oldest first) in typed arrays; a `Map` goes from hash to slot, and freed slots are chained
 * through `next` and reused. Every operation is O(1) (amortised over the arrays' doubling); the
 * arrays never shrink but on {@link clear}, so memory is about 60 bytes per slot plus the `Map`
 * entry and the keys, at the most blocks ever held at once.
 *
 * A `Map`'s own insertion order would not do: V8 leaves a deleted entry's place in the table
 * until the table is rebuilt, and every walk from the start steps over them, so finding the
 * oldest block after many evictions costs one step per eviction since the last rebuild.
 */
export class EngineBlocks {
  readonly #slots = new Map<bigint, number>();
  readonly #hash: bigint[] = [];
  readonly #model: (string | undefined)[] = [];
  readonly #keys: (Uint32Array | undefined)[] = [];
  #stamp = new Float64Array(MIN_SLOTS);
  #prev = new Int32Array(MIN_SLOTS);
  #next = new Int32Array(MIN_SLOTS);
  /** The first free slot (chained through `#next`), or {@link NONE}. */
  #free = NONE;
  #head = NONE;
  #tail = NONE;

  /** Blocks held. */
  get size(): number {
    return this.#slots.size;
  }

  /** The slot of `hash`'s block, or {@link NONE}. */
  slotOf(hash: bigint): number {
    return this.#slots.get(hash) ?? NONE;
  }

  /** The slot of the least recently stored block, or {@link NONE} when there is none. */
  get oldest(): number {
    return this.#head;
  }

  modelAt(slot: number): string | undefined {
    return this.#model[slot];
  }

  /** The block's keys as halves `[hi0, lo0, hi1, lo1, …]`. */
  keysAt(slot: number): Uint32Array {
    return this.#keys[slot]!;
  }

  stampAt(slot: number): number {
    return this.#stamp[slot]!;
  }

  /**
   * Stores `hash`'s block as the most recent: a new slot for a new hash, or the hash's own slot,
   * overwritten, for a hash already held.
   */
  store(hash: bigint, model: string | undefined, keys: Uint32Array, stamp: number): void {
    let slot = this.#slots.get(hash);
    if (slot === undefined) {
      slot = this.#take();
      this.#slots.set(hash, slot);
      this.#hash[slot] = hash;
    } else {
      this.#unlink(slot);
    }
    this.#model[slot] = model;
    this.#keys[slot] = keys;
    this.#stamp[slot] = stamp;
    this.#append(slot);
  }

  /** Forgets the block in `slot` (from {@link slotOf} or {@link oldest}). */
  delete(slot: number): void {
    this.#slots.delete(this.#hash[slot]!);
    this.#unlink(slot);
    this.#hash[slot] = 0n;
    this.#model[slot] = undefined;
    this.#keys[slot] = undefined;
    this.#next[slot] = this.#free;
    this.#free = slot;
  }

  /** Forgets every block and releases the slots. */
  clear(): void {
    this.#slots.clear();
    this.#hash.length = 0;
    this.#model.length = 0;
    this.#keys.length = 0;
    this.#stamp = new Float64Array(MIN_SLOTS);
    this.#prev = new Int32Array(MIN_SLOTS);
    this.#next = new Int32Array(MIN_SLOTS);
    this.#free = NONE;
    this.#head = NONE;
    this.#tail = NONE;
  }

  /** A free slot: a freed one, or the next never used (growing the arrays when full). */
  #take(): number {
    const free = this.#free;
    if (free !== NONE) {
      this.#free = this.#next[free]!;
      return free;
    }
    const slot = this.#hash.length;
    if (slot === this.#next.length) this.#grow();
    return slot;
  }

  #grow(): void {
    const size = this.#next.length * 2;
    const stamp = new Float64Array(size);
    const prev = new Int32Array(size);
    const next = new Int32Array(size);
    stamp.set(this.#stamp);
    prev.set(this.#prev);
    next.set(this.#next);
    this.#stamp = stamp;
    this.#prev = prev;
    this.#next = next;
  }

  /** Appends `slot` to the list (most recent). */
  #append(slot: number): void {
    const tail = this.#tail;
    this.#prev[slot] = tail;
    this.#next[slot] = NONE;
    if (tail === NONE) this.#head = slot;
    else this.#next[tail] = slot;
    this.#tail = slot;
  }

  /** Takes `slot` out of the list. */
  #unlink(slot: number): void {
    const prev = this.#prev[slot]!;
    const next = this.#next[slot]!;
    if (prev === NONE) this.#head = next;
    else this.#next[prev] = next;
    if (next === NONE) this.#tail = prev;
    else this.#prev[next] = prev;
  }
}
