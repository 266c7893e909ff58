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
import { prefillOrder } from './support/prefill-order.js';
import type { RandomSource } from './support/random.js';
import { isWorkerList, pick, readState, Sampler } from './support/sampling.js';

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
 * choice to O(log log n)). When the caller marks first tokens (`WorkerLease.firstToken`, the
 * `firstToken` of `Router.execute`'s attempt context) and the two differ in
 * {@link Worker.prefilling}, the one with fewer requests awaiting their first token wins: a new
 * request queues behind those prefills, whatever is decoding. Otherwise load is counted in
 * requests, on one scale for both samples:
 *
 * - when **both** have a fresh load report with a request count, each scores
 *   `runningRequests + waitingRequests` (a missing one of the two reads as 0) plus the change in
 *   this router's in-flight count on that worker since the report arrived: the requests it sent
 *   since, net of those that finished. With one router the score is the worker's load now, however
 *   old the report; with several, the other routers' part is as old as the report, this router's
 *   part is current. So a report that says "idle" stops attracting traffic as soon as this router
 *   has filled the gap, and a report that says "busy" stops repelling it as soon as this router's
 *   requests there finish;
 * - otherwise both score their in-flight request count (leases).
 *
 * It never compares one worker's report with the other's lease count, and never KV-cache usage
 * (a share of memory, not a number of requests). Ties go to the first sample. The in-flight count
 * at a report's arrival is read when `updateLoads` stores it, for the workers of the last list
 * this policy routed over (the registry's array, normally); a worker of another list is read the
 * first time it is sampled after the report.
 *
 * Choose it when requests are alike in cost, or when several routers share a fleet (a report
 * holds the other routers' requests); `least_load` when requests vary in size or workers in speed.
 *
 * Cost: O(1) expected (two steps of a random walk without repeats), two array reads and one clock
 * read when reports exist; no allocation per call. `updateLoads` and the first call on a list
 * after it lay the reports out in list order, O(n) (keep passing the registry's arrays).
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
  /** Reports per URL, each with this router's in-flight count when it arrived. */
  readonly #loads: LoadTable;
  /** The last list routed over, whose in-flight counts `updateLoads` records. */
  #lastList: readonly Worker[] | undefined;
  readonly #pair = new Int32Array(2);
  readonly #inFlight = new Float64Array(2);
  readonly #prefill = new Float64Array(2);

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
    const prefill = this.#prefill;
    const found = this.#sampler.twoRandomAvailable(workers, this.#random, pair, inFlight, prefill);
    if (found === 0) return undefined;
    let a: StoredLoad | undefined;
    let b: StoredLoad | undefined;
    this.#lastList = workers;
    if (this.#loads.size > 0) {
      const reports = this.#loads.alignedTo(workers);
      const now = this.#loads.now();
      a = this.#counted(reports[pair[0]!], now, inFlight[0]!);
      if (found === 2) b = this.#counted(reports[pair[1]!], now, inFlight[1]!);
    }
    let second = false;
    if (found === 2) {
      const order = prefillOrder(prefill[0]!, inFlight[0]!, prefill[1]!, inFlight[1]!);
      if (order !== 0) second = order > 0;
      else {
        second =
          a !== undefined && b !== undefined
            ? currentLoad(b, inFlight[1]!) < currentLoad(a, inFlight[0]!)
            : inFlight[1]! < inFlight[0]!;
      }
    }
    return pick(workers, pair[second ? 1 : 0]!);
  }

  /**
   * Stores the reports (negative or non-finite fields read as absent; entries that are not
   * objects are skipped; a non-`Map` argument is ignored) with this router's in-flight count on
   * each reported worker of the last list routed over: what changes after it is added to the
   * report's count. Unknown URLs are kept until they go stale. O(reports + that list).
   */
  updateLoads(reports: ReadonlyMap<string, LoadReport>): void {
    this.#loads.update(reports);
    const list = this.#lastList;
    if (list === undefined || this.#loads.size === 0) return;
    const aligned = this.#loads.alignedTo(list);
    const state = this.#sampler.state;
    for (let i = 0; i < aligned.length; i++) {
      const report = aligned[i];
      if (report === undefined || !Number.isNaN(report.leasesAtReport)) continue;
      readState(list[i], state);
      report.leasesAtReport = state.load;
    }
  }

  /** Forgets the worker's report. */
  removeWorker(url: string): void {
    this.#loads.remove(url);
  }

  /** Forgets every report. */
  reset(): void {
    this.#loads.clear();
    this.#lastList = undefined;
  }

  close(): void {
    this.reset();
  }

  /**
   * The report if it is fresh at `now` and holds a request count, else `undefined`. A report
   * read for the first time takes `inFlight` (the worker's count now) as its baseline.
   */
  #counted(report: StoredLoad | undefined, now: number, inFlight: number): StoredLoad | undefined {
    if (!this.#loads.isFresh(report, now)) return undefined;
    if (Number.isNaN(report.runningRequests) && Number.isNaN(report.waitingRequests)) {
      return undefined;
    }
    if (Number.isNaN(report.leasesAtReport)) report.leasesAtReport = inFlight;
    return report;
  }
}

/**
 * Requests the report counted (absent counts read as 0), plus the change in this router's
 * in-flight count since: `inFlight` is the count now.
 */
function currentLoad(report: StoredLoad, inFlight: number): number {
  const running = report.runningRequests;
  const waiting = report.waitingRequests;
  return (
    (Number.isNaN(running) ? 0 : running) +
    (Number.isNaN(waiting) ? 0 : waiting) +
    inFlight -
    report.leasesAtReport
  );
}
