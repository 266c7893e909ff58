/**
 * A sliding time window of request outcomes in ten buckets: the failure rate over roughly the
 * last `ms` milliseconds, in O(1) per outcome and per read.
 *
 * @module
 * @internal
 */

const BUCKETS = 10;

/** @internal */
export class FailureWindow {
  readonly #bucketMs: number;
  readonly #totals = new Float64Array(BUCKETS);
  readonly #failures = new Float64Array(BUCKETS);
  /** Index (time / bucketMs) of the newest bucket written. */
  #head = Number.NEGATIVE_INFINITY;
  #total = 0;
  #failed = 0;

  constructor(ms: number) {
    this.#bucketMs = Math.max(1, ms / BUCKETS);
  }

  /** Requests counted in the window. */
  get total(): number {
    return this.#total;
  }

  /** Failures counted in the window. */
  get failures(): number {
    return this.#failed;
  }

  /** Records one outcome at time `now` (ms). */
  record(failed: boolean, now: number): void {
    this.#advance(now);
    const b = ((Math.floor(now / this.#bucketMs) % BUCKETS) + BUCKETS) % BUCKETS;
    this.#totals[b]!++;
    this.#total++;
    if (failed) {
      this.#failures[b]!++;
      this.#failed++;
    }
  }

  /** Drops buckets that fell out of the window by `now`. */
  #advance(now: number): void {
    const index = Math.floor(now / this.#bucketMs);
    if (index <= this.#head) return;
    const expired = Math.min(BUCKETS, index - this.#head);
    for (let k = 1; k <= expired; k++) {
      const b = ((((this.#head + k) % BUCKETS) + BUCKETS) % BUCKETS) | 0;
      this.#total -= this.#totals[b]!;
      this.#failed -= this.#failures[b]!;
      this.#totals[b] = 0;
      this.#failures[b] = 0;
    }
    this.#head = index;
  }

  /** Forgets every outcome. */
  clear(): void {
    this.#totals.fill(0);
    this.#failures.fill(0);
    this.#total = 0;
    this.#failed = 0;
    this.#head = Number.NEGATIVE_INFINITY;
  }
}
