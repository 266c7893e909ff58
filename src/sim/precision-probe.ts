/**
 * `PrecisionProbe`: how often routing sends a request to a worker that holds the longest cached
 * prefix of its prompt — the precision the simulator reports.
 *
 * @module
 * @internal
 */
import type { PrefixCache } from './prefix-cache.js';

/**
 * @internal Before routing, {@link PrecisionProbe.measure} walks every engine's cache for the
 * request's block keys (one cache walk per worker: what the `precision` option costs); after,
 * {@link PrecisionProbe.record} counts whether the chosen worker held the longest match. Requests
 * that no worker holds any block of are left out.
 */
export class PrecisionProbe {
  readonly #enabled: boolean;
  readonly #blockSize: number;
  readonly #matches: Int32Array;
  #considered = 0;
  #precise = 0;

  constructor(workers: number, blockSize: number, enabled: boolean) {
    this.#enabled = enabled;
    this.#blockSize = blockSize;
    this.#matches = new Int32Array(workers);
  }

  /**
   * Blocks of the longest cached prefix of `keys` on any engine (the last prompt token is never
   * served from cache); 0 when the probe is off.
   */
  measure(
    keys: Float64Array,
    promptLength: number,
    engines: readonly { readonly cache: PrefixCache }[],
  ): number {
    if (!this.#enabled) return 0;
    const limit = Math.min(keys.length, Math.floor((promptLength - 1) / this.#blockSize));
    let best = 0;
    for (let w = 0; w < engines.length; w++) {
      const m = engines[w]!.cache.match(keys, limit);
      this.#matches[w] = m;
      if (m > best) best = m;
    }
    return best;
  }

  /** The request measured with `best` went to `worker`. */
  record(best: number, worker: number): void {
    if (best <= 0) return;
    this.#considered++;
    if (this.#matches[worker] === best) this.#precise++;
  }

  /** Share of the considered requests sent to a worker with the longest match, or `undefined`. */
  get value(): number | undefined {
    return this.#considered === 0 ? undefined : this.#precise / this.#considered;
  }
}
