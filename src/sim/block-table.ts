/**
 * Hash tables of block keys for the simulator's hot paths: open addressing with linear probing
 * over a `Float64Array` of keys, so a block costs 8 bytes of keys (plus 4 for a value) instead of
 * a heap number and a hash-table entry, and no collection limit caps the number of blocks.
 *
 * @module
 * @internal
 */
import { invalidArgument } from '../core/errors.js';

/** An empty slot. Keys are finite numbers, so NaN never equals a key. */
const EMPTY = Number.NaN;
/** Smallest table, in slots. */
const MIN_SLOTS = 16;
/** Largest table, in slots: 2^31 (16 GiB of keys); a table past 3/4 of it cannot grow. */
const MAX_SLOT_BITS = 31;
/** 2^32, to split a key into its 32-bit halves. */
const TWO_32 = 4_294_967_296;

/**
 * @internal The home slot of `key` in a table of `2^(32 − shift)` slots: both 32-bit halves of
 * the integer part folded and spread by a Fibonacci multiply, so keys that differ only in their
 * high bits or in a few low bits still land apart. O(1).
 */
export function homeSlot(key: number, shift: number): number {
  const folded = (key >>> 0) ^ ((key / TWO_32) >>> 0);
  return Math.imul(folded ^ (folded >>> 16), 0x9e3779b1) >>> shift;
}

/** The slots for at least `entries` entries at a load of at most 3/4, as a power of two. */
function slotsFor(entries: number): number {
  let slots = MIN_SLOTS;
  while (slots * 0.75 < entries) slots *= 2;
  return slots;
}

/** `Math.log2(slots)` for a power of two. */
function bitsOf(slots: number): number {
  return 31 - Math.clz32(slots);
}

/**
 * A table of `slots` empty key slots.
 * @throws {@link FleetRouteError} `INVALID_ARGUMENT` past 2^31 slots (about 1.6 billion keys).
 */
function emptyKeys(slots: number): Float64Array {
  if (bitsOf(slots) > MAX_SLOT_BITS) {
    throw invalidArgument('workload: more than 1.6 billion distinct cache blocks');
  }
  return new Float64Array(slots).fill(EMPTY);
}

/**
 * The slot of `keys` (a table whose home slots use `shift`) that holds `key`, or else the empty
 * slot that ends its probe run, where `key` would go. Linear probing; O(1) expected.
 */
function slotOf(keys: Float64Array, key: number, shift: number): number {
  const mask = keys.length - 1;
  let slot = homeSlot(key, shift);
  for (;;) {
    const k = keys[slot]!;
    if (k === key || Number.isNaN(k)) return slot;
    slot = (slot + 1) & mask;
  }
}

/**
 * A table of twice the slots of `old` holding its keys; `moved(from, to)` is told where each key
 * went (a map moves its value along). O(slots).
 */
function doubled(old: Float64Array, moved?: (from: number, to: number) => void): Float64Array {
  const keys = emptyKeys(old.length * 2);
  const shift = 32 - bitsOf(keys.length);
  for (let i = 0; i < old.length; i++) {
    const key = old[i]!;
    if (Number.isNaN(key)) continue;
    const slot = slotOf(keys, key, shift);
    keys[slot] = key;
    moved?.(i, slot);
  }
  return keys;
}

/**
 * @internal A set of block keys (finite numbers) that only grows, as the ceiling needs: 8 bytes
 * per slot at a load between 3/8 and 3/4, so 11 to 22 bytes per key. `add` and `has` are O(1)
 * expected; a growth rehashes every key once (amortised O(1) per key).
 */
export class BlockSet {
  #keys: Float64Array;
  #shift: number;
  #size = 0;
  #limit: number;

  /** @param expected - entries to size the table for at first; it grows past them. */
  constructor(expected = 0) {
    const slots = slotsFor(expected);
    this.#keys = emptyKeys(slots);
    this.#shift = 32 - bitsOf(slots);
    this.#limit = slots * 0.75;
  }

  /** Keys held. */
  get size(): number {
    return this.#size;
  }

  /** Bytes of the key table (what the set costs, apart from a constant). */
  get bytes(): number {
    return this.#keys.byteLength;
  }

  /** Whether `key` is held. */
  has(key: number): boolean {
    return this.#keys[slotOf(this.#keys, key, this.#shift)] === key;
  }

  /** Adds `key` (a finite number); returns whether it was new. */
  add(key: number): boolean {
    const keys = this.#keys;
    const slot = slotOf(keys, key, this.#shift);
    if (keys[slot] === key) return false;
    keys[slot] = key;
    if (++this.#size > this.#limit) this.#grow();
    return true;
  }

  #grow(): void {
    this.#keys = doubled(this.#keys);
    this.#shift = 32 - bitsOf(this.#keys.length);
    this.#limit = this.#keys.length * 0.75;
  }
}

/**
 * @internal A map from block keys (finite numbers) to non-negative 32-bit integers, with
 * deletion by backward shift (no tombstones, so probes stay short however many keys come and
 * go). 12 bytes per slot at a load of at most 3/4. `get`, `set` and `delete` are O(1) expected;
 * the table grows by doubling and never shrinks.
 */
export class BlockMap {
  #keys: Float64Array;
  #values: Int32Array;
  #shift: number;
  #size = 0;
  #limit: number;

  /** @param expected - entries to size the table for at first; it grows past them. */
  constructor(expected = 0) {
    const slots = slotsFor(expected);
    this.#keys = emptyKeys(slots);
    this.#values = new Int32Array(slots);
    this.#shift = 32 - bitsOf(slots);
    this.#limit = slots * 0.75;
  }

  /** Keys held. */
  get size(): number {
    return this.#size;
  }

  /** The value of `key`, or -1 when it is not held. */
  get(key: number): number {
    const slot = slotOf(this.#keys, key, this.#shift);
    return this.#keys[slot] === key ? this.#values[slot]! : -1;
  }

  /** Sets `key` (a finite number) to `value` (a non-negative int32), adding it if need be. */
  set(key: number, value: number): void {
    const keys = this.#keys;
    const slot = slotOf(keys, key, this.#shift);
    this.#values[slot] = value;
    if (keys[slot] === key) return;
    keys[slot] = key;
    if (++this.#size > this.#limit) this.#grow();
  }

  /**
   * Adds `key` (a finite number) with `value` (a non-negative int32) unless it is held: one probe
   * where `get` then `set` take two. Returns the value already held, or -1 when it was added.
   */
  add(key: number, value: number): number {
    const keys = this.#keys;
    const slot = slotOf(keys, key, this.#shift);
    if (keys[slot] === key) return this.#values[slot]!;
    keys[slot] = key;
    this.#values[slot] = value;
    if (++this.#size > this.#limit) this.#grow();
    return -1;
  }

  /** Removes every key (the table keeps its size). O(slots). */
  clear(): void {
    this.#keys.fill(EMPTY);
    this.#size = 0;
  }

  /** Removes `key`; returns whether it was held. */
  delete(key: number): boolean {
    const keys = this.#keys;
    const values = this.#values;
    const mask = keys.length - 1;
    const shift = this.#shift;
    let hole = slotOf(keys, key, shift);
    if (keys[hole] !== key) return false;
    // Backward shift: pull later entries of the run into the hole when their home slot allows.
    for (let slot = (hole + 1) & mask; ; slot = (slot + 1) & mask) {
      const k = keys[slot]!;
      if (Number.isNaN(k)) break;
      const home = homeSlot(k, shift);
      // The entry may move to `hole` unless its home lies cyclically in (hole, slot].
      if (((slot - home) & mask) >= ((slot - hole) & mask)) {
        keys[hole] = k;
        values[hole] = values[slot]!;
        hole = slot;
      }
    }
    keys[hole] = EMPTY;
    this.#size--;
    return true;
  }

  #grow(): void {
    const oldValues = this.#values;
    const values = new Int32Array(this.#keys.length * 2);
    this.#keys = doubled(this.#keys, (from, to) => {
      values[to] = oldValues[from]!;
    });
    this.#values = values;
    this.#shift = 32 - bitsOf(this.#keys.length);
    this.#limit = this.#keys.length * 0.75;
  }
}
