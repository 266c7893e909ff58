/**
 * `IdentityMemo`: a value derived from an object, computed once per object identity.
 *
 * @module
 * @internal
 */

/**
 * @internal Remembers `build(key)` per key object: the last key seen is answered by one identity
 * comparison, any other from a `WeakMap`, so a derived value lives as long as its key and no
 * longer. Policies derive per-candidate-list state this way (ring alignment, report alignment,
 * bucket orders, cached nominals): the registry never changes an array it handed out, so the
 * array's identity is a complete key.
 *
 * Cost: O(1) — one comparison when the same key comes back, one `WeakMap` read otherwise —
 * plus `build` once per key.
 */
export class IdentityMemo<K extends object, V> {
  #map = new WeakMap<K, V>();
  #lastKey: K | undefined;
  #lastValue: V | undefined;

  /** The value for `key`, built (once) by `build` when there is none. */
  get(key: K, build: (key: K) => V): V {
    if (key === this.#lastKey) return this.#lastValue as V;
    let value = this.#map.get(key);
    if (value === undefined) {
      value = build(key);
      this.#map.set(key, value);
    }
    this.#lastKey = key;
    this.#lastValue = value;
    return value;
  }

  /** The value for `key` if one was built, else `undefined` (a hit becomes the fast path). */
  peek(key: K): V | undefined {
    if (key === this.#lastKey) return this.#lastValue;
    const value = this.#map.get(key);
    if (value !== undefined) {
      this.#lastKey = key;
      this.#lastValue = value;
    }
    return value;
  }

  /** Replaces the value for `key`. */
  set(key: K, value: V): void {
    this.#map.set(key, value);
    this.#lastKey = key;
    this.#lastValue = value;
  }

  /** Forgets every value. */
  clear(): void {
    this.#map = new WeakMap();
    this.#lastKey = undefined;
    this.#lastValue = undefined;
  }
}
