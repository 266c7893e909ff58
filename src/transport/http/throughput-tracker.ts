/**
 * `ThroughputTracker`: generated tokens per second from two readings of a monotonic counter.
 *
 * @module
 * @internal
 */

/**
 * @internal Readings closer together than this keep the older baseline, so a burst of scrapes
 * does not turn counter jitter into a rate (ms).
 */
export const MIN_RATE_INTERVAL_MS = 1_000;

interface Reading {
  tokens: number;
  at: number;
  /** The last rate computed for this key, or NaN. */
  rate: number;
}

/**
 * @internal Remembers the last counter reading per key (a worker URL) in a map bounded to
 * `maxEntries`, least recently observed evicted first, and derives a rate from the next one.
 * Cost: O(1) per observation; about 100 bytes per key.
 */
export class ThroughputTracker {
  readonly #maxEntries: number;
  readonly #readings = new Map<string, Reading>();

  constructor(maxEntries: number) {
    this.#maxEntries = maxEntries;
  }

  /** Keys remembered now. */
  get size(): number {
    return this.#readings.size;
  }

  /**
   * Records `tokens` (a counter's value) read at `at` (ms) for `key`.
   *
   * @returns tokens per second since the baseline reading; the previous rate when the baseline is
   *   less than {@link MIN_RATE_INTERVAL_MS} old; `NaN` on the first reading, after the counter
   *   went down (an engine restart) or the clock went back, and when tracking is off.
   */
  observe(key: string, tokens: number, at: number): number {
    if (this.#maxEntries === 0) return Number.NaN;
    const readings = this.#readings;
    const last = readings.get(key);
    if (last !== undefined) readings.delete(key); // re-inserted below: most recent last
    let next: Reading;
    if (last === undefined || tokens < last.tokens || at < last.at) {
      next = { tokens, at, rate: Number.NaN };
    } else if (at - last.at < MIN_RATE_INTERVAL_MS) {
      next = last;
    } else {
      next = { tokens, at, rate: ((tokens - last.tokens) * 1000) / (at - last.at) };
    }
    readings.set(key, next);
    if (readings.size > this.#maxEntries) {
      const oldest = readings.keys().next();
      if (oldest.done !== true) readings.delete(oldest.value);
    }
    return next.rate;
  }

  /** Forgets every reading. */
  clear(): void {
    this.#readings.clear();
  }
}
