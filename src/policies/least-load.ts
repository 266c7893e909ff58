/**
 * `least_load`: the worker with the shortest expected wait, from polled load reports.
 *
 * @module
 */

import { IdentityMemo } from '../core/identity-memo.js';
import { custom, duration, integer, number } from '../core/option-table.js';
import { fail } from '../core/options.js';
import type { Clock } from '../resilience/clock.js';
import { type CandidateView, viewOf } from '../workers/candidate-view.js';
import type { LoadReport } from '../workers/load-report.js';
import type { Worker } from '../workers/worker.js';
import { kvPenalty, queuedWork, requestTokens, ScanScratch } from './least-load/score.js';
import type { Policy, SelectRequest } from './policy.js';
import { type CommonPolicyConfig, policyOptions, readPolicyConfig } from './support/config.js';
import { LoadTable, type StoredLoad } from './support/load-table.js';
import { prefillOrder } from './support/prefill-order.js';
import type { RandomSource } from './support/random.js';
import { isWorkerList, pick, Sampler } from './support/sampling.js';

/** Options of the `least_load` policy. @public */
export interface LeastLoadConfig extends CommonPolicyConfig {
  /**
   * Weight of KV-cache pressure, in seconds: a worker reporting KV usage `k` pays
   * `lambda · k / (1 − k)` of extra expected wait (`k` capped at 0.99, so at most `99 · lambda`).
   * 0 ignores KV usage. At most 3600. Cost: none.
   *
   * @defaultValue 0.15
   */
  readonly lambda?: number;
  /**
   * Fleet throughput assumed (generated tokens/s) while no ready candidate reports a positive
   * one. Must be greater than 0. Cost: none.
   *
   * @defaultValue 2000
   */
  readonly defaultThroughput?: number;
  /**
   * Prompt tokens assumed per request (an integer ≥ 1): the size of a request that has neither
   * tokens nor text, the cost of one in-flight request on a worker without a fresh report, and of
   * one waiting request when a report has no `queuedTokens`. Cost: none.
   *
   * @defaultValue 1024
   */
  readonly meanPrefillTokens?: number;
  /**
   * A load report older than this is ignored (ms, integer ≥ 1) and its worker is scored from its
   * in-flight count. Cost: none; stale reports are pruned on the next `updateLoads`.
   *
   * @defaultValue 30000 (3 polling intervals)
   */
  readonly staleAfterMs?: number;
}

/**
 * The fleet nominal throughput of one candidate list, and what it was computed against: the
 * reports' version and the list's availability version (a worker of the list that turns ready
 * or not ready makes it stale; other lists and other registries do not).
 */
interface Nominal {
  readonly view: CandidateView;
  /** NaN until computed. */
  throughput: number;
  version: number;
  availability: number;
  /** When the oldest report it averages goes stale (ms, policy clock). */
  expiresAt: number;
}

/** @internal The options of `least_load`. */
export const LEAST_LOAD_OPTIONS = policyOptions('least_load', 'LeastLoadConfig', {
  lambda: number(0.15, 0, 3_600),
  defaultThroughput: custom(2_000, readPositive),
  meanPrefillTokens: integer(1_024, 1, 16_777_216),
  staleAfterMs: duration(30_000),
});

/**
 * Sends each request to the worker with the shortest expected wait (seconds):
 * `(queued + credit) / throughput + lambda · k / (1 − k)`, where `queued` is the report's
 * `queuedTokens` (else `waitingRequests × meanPrefillTokens`), `k` its KV-cache usage, and
 * `credit` the prompt tokens this policy sent the worker since its last report (so a burst between two polls spreads out instead of piling onto the last idle
 * worker). `throughput` is the worker's own reported rate when positive, else the fleet
 * nominal: the mean positive throughput over the **ready** candidates with fresh reports (else
 * `defaultThroughput`). A worker without a fresh report scores
 * `inFlight × meanPrefillTokens / nominal`, with `inFlight` from its leases.
 *
 * When the caller marks first tokens (`WorkerLease.firstToken`, the `firstToken` of
 * `Router.execute`'s attempt context), fewer requests awaiting their first token
 * ({@link Worker.prefilling}) comes first and the score breaks ties: a new request queues
 * behind those prefills, which a report polled seconds ago does not show.
 *
 * Choose it when workers poll their load (queued tokens, KV usage, throughput) and requests vary
 * in size or workers in speed; `power_of_two` is enough when in-flight counts tell the story, and
 * `prefix_hash` or `cache_aware` when prefix reuse matters more than queueing.
 *
 * Cost: with 1–2 candidates, an exact argmin. With more, the better-scored of two random
 * available candidates ("power of two choices"): O(1) expected, a few map reads and one clock
 * read. The nominal is cached per candidate list (keep passing the same array, as the
 * registry's are) and recomputed in one O(n) pass — which then takes the exact argmin — after
 * each `updateLoads` or `removeWorker`, any worker status change, or when a report it averages
 * goes stale. Allocates nothing per call, except a cache entry for a list seen for the first
 * time.
 *
 * Failure behaviour: only available workers are picked; none → `undefined`. A worker that
 * leaves `ready` stops counting in the nominal at the next call (a ready worker whose breaker is
 * open is skipped but still counts: its rate is still real). A worker whose reports stop is
 * scored from its leases after `staleAfterMs`. Negative or non-finite report fields read as
 * absent; a report with none left still counts, as an empty queue.
 *
 * @public
 */
export class LeastLoadPolicy implements Policy {
  readonly name = 'least_load' as const;
  readonly #random: RandomSource;
  readonly #clock: Clock;
  readonly #loads: LoadTable;
  readonly #lambda: number;
  readonly #defaultThroughput: number;
  readonly #meanPrefillTokens: number;
  readonly #staleAfterMs: number;
  readonly #nominals = new IdentityMemo<readonly Worker[], Nominal>();
  readonly #sampler = new Sampler();
  readonly #scan = new ScanScratch();
  readonly #pair = new Int32Array(2);
  readonly #pairLoads = new Float64Array(2);
  readonly #pairPrefill = new Float64Array(2);

  /** @throws {@link FleetRouteError} `INVALID_ARGUMENT` naming a bad or unknown option. */
  constructor(config: LeastLoadConfig = {}) {
    const { options, random, clock } = readPolicyConfig(LEAST_LOAD_OPTIONS, config);
    this.#random = random;
    this.#clock = clock;
    this.#lambda = options.lambda;
    this.#defaultThroughput = options.defaultThroughput;
    this.#meanPrefillTokens = options.meanPrefillTokens;
    this.#staleAfterMs = options.staleAfterMs;
    this.#loads = new LoadTable(this.#clock, this.#staleAfterMs);
  }

  /**
   * Picks the available worker with the shortest expected wait (exactly, or of two samples; see
   * the class doc) and credits it with the request's size: `tokens.length`, else
   * `ceil(text.length / 4)`, else `meanPrefillTokens`.
   *
   * @returns an available member of `workers`, or `undefined` when none is available.
   */
  select(workers: readonly Worker[], request?: SelectRequest): Worker | undefined {
    if (!isWorkerList(workers) || workers.length === 0) return undefined;
    const nominal = this.#nominals.get(workers, newNominal);
    // One clock read per call: the nominal's expiry and every report's freshness use it.
    const now = this.#clock();
    const current = this.#isCurrent(nominal, now);
    const aligned = this.#loads.alignedTo(workers);
    const index =
      current && workers.length > 2
        ? this.#sampleTwo(workers, aligned, now, nominal.throughput)
        : this.#scanAll(workers, aligned, now, nominal, current);
    if (index < 0) return undefined;
    // Credit only matters while the worker has a fresh report; its next report starts from 0.
    const report = aligned[index];
    if (this.#loads.isFresh(report, now)) {
      report.credit += requestTokens(request, this.#meanPrefillTokens);
    }
    return pick(workers, index);
  }

  /**
   * Stores the reports (see `LoadReport`: negative or non-finite fields read as absent; entries
   * that are not objects are skipped; a non-`Map` argument is ignored) and resets the credit of
   * each worker reported, whose queue now includes what was sent. Unknown URLs are kept until
   * they go stale. O(reports).
   */
  updateLoads(reports: ReadonlyMap<string, LoadReport>): void {
    this.#loads.update(reports);
  }

  /** Forgets the worker's report and credit (the nominal is recomputed on the next call). */
  removeWorker(url: string): void {
    this.#loads.remove(url);
  }

  /** Forgets every report, credit and cached nominal. */
  reset(): void {
    this.#loads.clear();
    this.#nominals.clear();
  }

  close(): void {
    this.reset();
  }

  /** Whether the cached nominal still holds at `now` (the policy clock, read by `select`). */
  #isCurrent(nominal: Nominal, now: number): boolean {
    return (
      nominal.version === this.#loads.version &&
      nominal.availability === nominal.view.version &&
      now <= nominal.expiresAt
    );
  }

  /**
   * Power of two choices: the lower score of two random available candidates (ties: first).
   * `aligned` holds the candidates' reports in list order ({@link LoadTable.alignedTo}).
   */
  #sampleTwo(
    workers: readonly Worker[],
    aligned: readonly (StoredLoad | undefined)[],
    now: number,
    nominal: number,
  ): number {
    const pair = this.#pair;
    const loads = this.#pairLoads;
    const prefill = this.#pairPrefill;
    const found = this.#sampler.twoRandomAvailable(workers, this.#random, pair, loads, prefill);
    if (found < 2) return pair[0]!;
    const a = aligned[pair[0]!];
    const b = aligned[pair[1]!];
    const order = prefillOrder(prefill[0]!, loads[0]!, prefill[1]!, loads[1]!);
    if (order !== 0) return order > 0 ? pair[1]! : pair[0]!;
    const first = this.#score(this.#loads.isFresh(a, now) ? a : undefined, loads[0]!, nominal);
    const second = this.#score(this.#loads.isFresh(b, now) ? b : undefined, loads[1]!, nominal);
    return second < first ? pair[1]! : pair[0]!;
  }

  #score(report: StoredLoad | undefined, inFlight: number, nominal: number): number {
    if (report === undefined) return (inFlight * this.#meanPrefillTokens) / nominal;
    const work = queuedWork(report, this.#meanPrefillTokens) + report.credit;
    const throughput = report.throughput > 0 ? report.throughput : nominal;
    return work / throughput + kvPenalty(this.#lambda, report.tokenUsage);
  }

  /**
   * One pass over the candidates, reading each one's state once into scratch arrays (and, unless
   * the nominal is `current`, recomputing it from the ready ones), then the exact argmin over the
   * stored values. Ties: fewer `processed`, then lower index.
   */
  #scanAll(
    workers: readonly Worker[],
    aligned: readonly (StoredLoad | undefined)[],
    now: number,
    nominalEntry: Nominal,
    current: boolean,
  ): number {
    const n = workers.length;
    const s = this.#scan;
    s.ensure(n);
    const { available, reported, inFlight, processed, prefilling, work, throughput, penalty } = s;
    const staleAfterMs = this.#staleAfterMs;
    const loads = this.#loads;
    const sampler = this.#sampler;
    const state = sampler.state;
    let count = 0;
    let mean = 0;
    let expiresAt = Number.POSITIVE_INFINITY;
    let marked = false;
    for (let i = 0; i < n; i++) {
      const ok = sampler.read(workers[i]);
      available[i] = ok ? 1 : 0;
      reported[i] = 0;
      // Not ready (or not a worker): neither a pick nor part of the nominal.
      if (!state.healthy || (current && !ok)) continue;
      inFlight[i] = state.load;
      processed[i] = state.processed;
      const waiting = state.prefilling!;
      prefilling[i] = waiting;
      if (ok && waiting < state.load) marked = true;
      const report = aligned[i];
      if (!loads.isFresh(report, now)) continue;
      // Sanitised reports hold a non-negative number or NaN: NaN and 0 mean "use the nominal".
      const rate = Number.isNaN(report.throughput) ? 0 : report.throughput;
      if (!current && rate > 0) {
        count++;
        mean += (rate - mean) / count;
        if (report.receivedAt + staleAfterMs < expiresAt)
          expiresAt = report.receivedAt + staleAfterMs;
      }
      if (!ok) continue;
      reported[i] = 1;
      work[i] = queuedWork(report, this.#meanPrefillTokens) + report.credit;
      throughput[i] = rate;
      penalty[i] = kvPenalty(this.#lambda, report.tokenUsage);
    }
    const nominal = current
      ? nominalEntry.throughput
      : this.#storeNominal(nominalEntry, count > 0 ? mean : this.#defaultThroughput, expiresAt);
    const meanPrefillTokens = this.#meanPrefillTokens;
    let best = -1;
    let bestScore = 0;
    for (let i = 0; i < n; i++) {
      if (available[i] === 0) continue;
      const score =
        reported[i] === 1
          ? work[i]! / (throughput[i]! > 0 ? throughput[i]! : nominal) + penalty[i]!
          : (inFlight[i]! * meanPrefillTokens) / nominal;
      if (
        best < 0 ||
        (marked && prefilling[i]! < prefilling[best]!) ||
        ((!marked || prefilling[i] === prefilling[best]) &&
          (score < bestScore || (score === bestScore && processed[i]! < processed[best]!)))
      ) {
        best = i;
        bestScore = score;
      }
    }
    return best;
  }

  #storeNominal(entry: Nominal, throughput: number, expiresAt: number): number {
    entry.throughput = throughput;
    entry.version = this.#loads.version;
    entry.availability = entry.view.version;
    entry.expiresAt = expiresAt;
    return throughput;
  }
}

/** A list's nominal entry before its first computation (never current). */
function newNominal(workers: readonly Worker[]): Nominal {
  return {
    view: viewOf(workers),
    throughput: Number.NaN,
    version: -1,
    availability: -1,
    expiresAt: Number.NEGATIVE_INFINITY,
  };
}

/** A finite number greater than 0. */
function readPositive(field: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    fail(field, 'a finite number greater than 0', value);
  }
  return value;
}
