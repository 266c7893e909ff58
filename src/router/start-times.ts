/**
 * `StartTimes`: each worker's engine start time as its load reports tell it (`startedAt`), and
 * which reports show a restart.
 *
 * @module
 * @internal
 */
import type { LoadReport } from '../workers/load-report.js';

/**
 * @internal The last `startedAt` seen per worker URL. A report whose `startedAt` differs from
 * the one seen before for its URL shows a restart; the first value seen for a URL does not, and
 * a report without a usable `startedAt` (absent, negative, non-finite) changes nothing. Entries
 * live until {@link StartTimes.forget}: the router forgets a worker when it is removed, and
 * after a restart the health loop detected, so that the new start time seen next is taken as a
 * first value rather than as a second restart.
 */
export class StartTimes {
  readonly #known = new Map<string, number>();

  /** URLs with a known start time. O(1). */
  get size(): number {
    return this.#known.size;
  }

  /**
   * Records the `startedAt` of each report and calls `restarted(url)` for each URL whose value
   * changed from a known earlier one, in the reports' order. Cost: O(reports), one map lookup
   * each; no allocation for a report without `startedAt`.
   */
  observe(reports: ReadonlyMap<string, LoadReport>, restarted: (url: string) => void): void {
    for (const [url, report] of reports) {
      const startedAt = (report as LoadReport | undefined)?.startedAt;
      if (typeof startedAt !== 'number' || !Number.isFinite(startedAt) || startedAt < 0) continue;
      const known = this.#known.get(url);
      if (known === startedAt) continue;
      this.#known.set(url, startedAt);
      if (known !== undefined) restarted(url);
    }
  }

  /** Forgets the start time of `url`: the next one seen is a first value. O(1). */
  forget(url: string): void {
    this.#known.delete(url);
  }
}
