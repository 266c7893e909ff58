/**
 * `power_of_two`: the less loaded of two random available workers.
 *
 * @module
 */

import { duration } from '../core/option-table.js';
import type { LoadReport } from '../workers/load-report.js';
import type { Worker } from '../workers/worker.js';
import type { Policy } from './policy.js';
import { type CommonPolicyConfig, policyOptions, readPolicyConfig } from './support/config.js';
import { LoadTable, type StoredLoad } from './support/load-table.js';
import type { RandomSource } from './support/random.js';
import { isWorkerList, pick, Sampler } from './support/sampling.js';

/** Options of the `power_of_two` policy. @public */
export interface PowerOfTwoConfig extends CommonPolicyConfig {
  /**
   * A load report older than this is ignored (ms, integer ≥ 1 and ≤ 2,147,483,647), and its
   * worker is compared by its in-flight count. Cost: none; stale reports are pruned on the next
   * `updateLoads`.
   *
   * @defaultValue 30000 (3 polling intervals)
   */
  readonly staleAfterMs?: number;
}

/** @internal The options of `power_of_two`. */
export const POWER_OF_TWO_OPTIONS = policyOptions('power_of_two', 'PowerOfTwoConfig', {
  staleAfterMs: duration(30_000),
});

/**
 * Samples two distinct random available workers and keeps the less loaded one ("the power of two
 * choices": the busiest worker's excess load falls from O(log n / log log n) with one random
 * choice to O(log log n)). Load is counted in requests, on one scale for both samples:
 *
 * - when **both** have a fresh load report with a request count, each scores
 *   `runningRequests + waitingRequests` (a missing one of the two reads as 0) plus the requests
 *   this policy sent it since that report, so a report that says "idle" stops attracting traffic
 *   as soon as this router has filled the gap;
 * - otherwise both score their in-flight request count (leases).
 *
 * It never compares one worker's report with the other's lease count, and never KV-cache usage
 * (a share of memory, not a number of requests). Ties go to the first sample. Every pick of a
 * worker whose fresh report holds a request count adds one to that report's sent count, even
 * when the comparison used lease counts; `updateLoads` starts each reported worker again from 0.
 *
 * Choose it when requests are alike in cost, or when several routers share a fleet (a report
 * holds the other routers' requests); `least_load` when requests vary in size or workers in speed.
 *
 * Cost: O(1) expected (two steps of a random walk without repeats), two array reads and one clock
 * read when reports exist; no allocation per call. The first call on a list after each
 * `updateLoads` lays the reports out in list order, O(n) (keep passing the registry's arrays).
 * Failure behaviour: unavailable workers are never sampled; with one available worker it is
 * chosen; with none, `undefined`. Negative or non-finite report fields read as absent; a report
 * with neither request count is treated as no report.
 *
 * @public
 */
export class PowerOfTwoPolicy implements Policy {
  readonly name = 'power_of_two' as const;
  readonly #random: RandomSource;
  readonly #sampler = new Sampler();
  /** Reports per URL; `StoredLoad.credit` counts the requests sent since each one (not tokens). */
  readonly #loads: LoadTable;
  readonly #pair = new Int32Array(2);
  readonly #inFlight = new Float64Array(2);

  /** @throws {@link FleetRouteError} `INVALID_ARGUMENT` naming a bad or unknown option. */
  constructor(config: PowerOfTwoConfig = {}) {
    const { options, random, clock } = readPolicyConfig(POWER_OF_TWO_OPTIONS, config);
    this.#random = random;
    this.#loads = new LoadTable(clock, options.staleAfterMs);
  }

  /**
   * Picks the less loaded of two random available workers (see the class doc) and counts the
   * request against the pick's report.
   *
   * @returns an available member of `workers`, or `undefined` when none is available.
   */
  select(workers: readonly Worker[]): Worker | undefined {
    if (!isWorkerList(workers)) return undefined;
    const pair = this.#pair;
    const inFlight = this.#inFlight;
    const found = this.#sampler.twoRandomAvailable(workers, this.#random, pair, inFlight);
    if (found === 0) return undefined;
    let a: StoredLoad | undefined;
    let b: StoredLoad | undefined;
    if (this.#loads.size > 0) {
      const reports = this.#loads.alignedTo(workers);
      const now = this.#loads.now();
      a = this.#counted(reports[pair[0]!], now);
      if (found === 2) b = this.#counted(reports[pair[1]!], now);
    }
    let second = false;
    if (found === 2) {
      second =
        a !== undefined && b !== undefined
          ? reportedLoad(b) < reportedLoad(a)
          : inFlight[1]! < inFlight[0]!;
    }
    const report = second ? b : a;
    if (report !== undefined) report.credit += 1;
    return pick(workers, pair[second ? 1 : 0]!);
  }

  /**
   * Stores the reports (negative or non-finite fields read as absent; entries that are not
   * objects are skipped; a non-`Map` argument is ignored) and sets each reported worker's sent
   * count back to 0: its new counts include what was sent. Unknown URLs are kept until they go
   * stale. O(reports).
   */
  updateLoads(reports: ReadonlyMap<string, LoadReport>): void {
    this.#loads.update(reports);
  }

  /** Forgets the worker's report and sent count. */
  removeWorker(url: string): void {
    this.#loads.remove(url);
  }

  /** Forgets every report and sent count. */
  reset(): void {
    this.#loads.clear();
  }

  close(): void {
    this.#loads.clear();
  }

  /** The report if it is fresh at `now` and holds a request count, else `undefined`. */
  #counted(report: StoredLoad | undefined, now: number): StoredLoad | undefined {
    if (!this.#loads.isFresh(report, now)) return undefined;
    return Number.isNaN(report.runningRequests) && Number.isNaN(report.waitingRequests)
      ? undefined
      : report;
  }
}

/** Requests the report counted, plus those sent since (absent counts read as 0). */
function reportedLoad(report: StoredLoad): number {
  const running = report.runningRequests;
  const waiting = report.waitingRequests;
  return (
    (Number.isNaN(running) ? 0 : running) + (Number.isNaN(waiting) ? 0 : waiting) + report.credit
  );
}
