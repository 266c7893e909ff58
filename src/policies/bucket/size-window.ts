/**
 * The prompt-size window of the `bucket` policy: a preallocated ring buffer of recent request
 * sizes, a sorted snapshot of it taken at each refit, and the bucket boundaries derived from that
 * snapshot for any number of buckets.
 *
 * @module
 * @internal
 */

/**
 * @internal Recent request sizes and the boundaries fitted to them.
 *
 * Boundaries: for `k` buckets, boundary `j` (1 ≤ j < k) is the `j/k` quantile of the last fit,
 * `sorted[floor(j · m / k)]` over the `m` sizes it sorted, so each bucket covers about `1/k` of the
 * recent requests. Until a fit has seen `minSamples` sizes, boundary `j` is `j · initialMax / k`
 * (evenly spaced over `[0, initialMax]`). Boundaries never decrease with `j`, so the bucket of a
 * size never decreases with the size.
 */
export class SizeWindow {
  /** Ring buffer of the most recent sizes (`#count` valid, oldest at `#head` once full). */
  readonly #recent: Float64Array;
  /** Sorted copy of the window at the last successful fit (`#fitted` valid entries). */
  readonly #sorted: Float64Array;
  readonly #minSamples: number;
  readonly #initialMax: number;
  #head = 0;
  #count = 0;
  #fitted = 0;

  constructor(windowSize: number, minSamples: number, initialMax: number) {
    this.#recent = new Float64Array(windowSize);
    this.#sorted = new Float64Array(windowSize);
    this.#minSamples = minSamples;
    this.#initialMax = initialMax;
  }

  /** Adds one size, overwriting the oldest when the window is full. O(1). */
  record(size: number): void {
    const recent = this.#recent;
    recent[this.#head] = size;
    this.#head = this.#head + 1 === recent.length ? 0 : this.#head + 1;
    if (this.#count < recent.length) this.#count++;
  }

  /**
   * Refits the boundaries to the window when it holds at least `minSamples` sizes; otherwise
   * keeps the current ones (the initial boundaries, or the last fit). O(W log W).
   *
   * @returns whether the boundaries were refitted.
   */
  fit(): boolean {
    const count = this.#count;
    if (count < this.#minSamples) return false;
    const sorted = this.#sorted;
    sorted.set(this.#recent);
    if (count === sorted.length) sorted.sort();
    else sorted.subarray(0, count).sort();
    this.#fitted = count;
    return true;
  }

  /** Whether a fit has replaced the initial boundaries (since construction or `clear()`). O(1). */
  get fitted(): boolean {
    return this.#fitted > 0;
  }

  /** Boundary `j` of `k` buckets, 1 ≤ j < k: sizes at or above it belong to bucket j or later. */
  boundary(j: number, k: number): number {
    const m = this.#fitted;
    if (m === 0) return (j * this.#initialMax) / k;
    return this.#sorted[Math.floor((j * m) / k)]!;
  }

  /**
   * The first bucket that may take `size` among `k`: the number of boundaries below it. O(log k).
   */
  firstBucket(size: number, k: number): number {
    return this.#countBelow(size, k, false);
  }

  /**
   * The last bucket that may take `size` among `k`: the number of boundaries at or below it.
   * It differs from {@link SizeWindow.firstBucket} only when `size` equals boundaries (many
   * equal recent sizes); the caller spreads such requests over that range. O(log k).
   */
  lastBucket(size: number, k: number): number {
    return this.#countBelow(size, k, true);
  }

  /** Number of boundaries `< size` (or `<= size` when `inclusive`), by binary search. */
  #countBelow(size: number, k: number, inclusive: boolean): number {
    let lo = 1;
    let hi = k;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const b = this.boundary(mid, k);
      if (inclusive ? b <= size : b < size) lo = mid + 1;
      else hi = mid;
    }
    return lo - 1;
  }

  /** Empties the window and returns to the initial boundaries. */
  clear(): void {
    this.#head = 0;
    this.#count = 0;
    this.#fitted = 0;
  }
}
