/**
 * `Saturation`: how much room each worker has, from what the router knows — its in-flight and
 * prefilling counts (other routers' included, with shared state) and the engine's last load
 * report — and so whether a pool has room.
 *
 * @module
 * @internal
 */

import { viewOf } from '../workers/candidate-view.js';
import type { LoadReport } from '../workers/load-report.js';
import type { Worker } from '../workers/worker.js';
import type { ResolvedAdmissionConfig } from './admission-options.js';

/** What admission keeps of one worker's last report. */
interface Reported {
  /** When it arrived (the admission's clock). */
  readonly at: number;
  /** `waitingRequests` (0 when absent). */
  readonly waiting: number;
  /** `tokenUsage`, 0 … 1 (0 when absent). */
  readonly usage: number;
  /**
   * The worker's `prefilling` when the report arrived: requests sent since then that still await
   * their first token are likely in the engine's queue too.
   */
  readonly prefilling: number;
}

/** @internal The limits a worker's room is measured against. */
export type SaturationLimits = Pick<
  ResolvedAdmissionConfig,
  'maxInFlight' | 'maxPrefilling' | 'maxWaitingRequests' | 'maxTokenUsage'
>;

/**
 * @internal Per-worker room. A worker's room is how many more requests it can take before it is
 * full: the least of `maxInFlight − load`, `maxPrefilling − prefilling`, and, with a report,
 * `maxWaitingRequests − (waiting reported + prefilling now − prefilling then)` — 0 when the
 * report shows the KV cache at `maxTokenUsage` or more, or when the report is older than
 * `staleAfterMs` (a view that old is not trusted: fail closed). A worker never reported is judged
 * by its counts alone. Cost: O(1) per worker; reports O(reports) per round.
 */
export class Saturation {
  readonly #limits: SaturationLimits;
  readonly #staleAfterMs: number;
  readonly #reports = new Map<string, Reported>();
  /**
   * Over every report kept (recomputed each round): the most waiting requests reported, whether
   * any shows the KV cache full, and when the oldest arrived — so "no report can make a worker
   * full" is answered in O(1).
   */
  #mostWaiting = 0;
  #anyCacheFull = false;
  #oldestAt = Number.POSITIVE_INFINITY;
  readonly #bounds = new Float64Array(5);

  /** @param staleAfterMs - a report older than this (ms) counts as saturated; `Infinity`: never. */
  constructor(limits: SaturationLimits, staleAfterMs: number) {
    this.#limits = limits;
    this.#staleAfterMs = staleAfterMs;
  }

  /**
   * Records a round of reports, keyed by worker URL. `prefillingOf` gives a worker's prefilling
   * count now (`undefined` for a URL no longer registered, whose report is dropped).
   */
  record(
    reports: ReadonlyMap<string, LoadReport>,
    now: number,
    prefillingOf: (url: string) => number | undefined,
  ): void {
    for (const [url, report] of reports) {
      const prefilling = prefillingOf(url);
      if (prefilling === undefined) {
        this.#reports.delete(url);
        continue;
      }
      this.#reports.set(url, {
        at: now,
        waiting: finite(report.waitingRequests),
        usage: Math.min(finite(report.tokenUsage), 1),
        prefilling,
      });
    }
    this.#summarise();
  }

  /**
   * Whether no available worker of the registry array `workers` can be full, read in O(groups)
   * from its load bounds and the reports' summary (conservatively: `false` also when one might
   * be, when some worker is unavailable-only, or for a list that is not a registry array).
   */
  noneFull(workers: readonly Worker[], now: number): boolean {
    const b = this.#bounds;
    if (!viewOf(workers).loadBounds(b) || b[2] === 0) return false;
    const l = this.#limits;
    const mostPrefilling = b[4]!;
    if (b[1]! >= l.maxInFlight || mostPrefilling >= l.maxPrefilling) return false;
    if (this.#reports.size === 0) return true;
    // A report's waiting estimate is at most what it reported plus the prefilling count now.
    return (
      !this.#anyCacheFull &&
      now - this.#oldestAt <= this.#staleAfterMs &&
      this.#mostWaiting + mostPrefilling < l.maxWaitingRequests
    );
  }

  #summarise(): void {
    let most = 0;
    let full = false;
    let oldest = Number.POSITIVE_INFINITY;
    const max = this.#limits.maxTokenUsage;
    for (const r of this.#reports.values()) {
      if (r.waiting > most) most = r.waiting;
      if (r.usage >= max) full = true;
      if (r.at < oldest) oldest = r.at;
    }
    this.#mostWaiting = most;
    this.#anyCacheFull = full;
    this.#oldestAt = oldest;
  }

  /** Forgets a worker's report (it left the registry). */
  forget(url: string): void {
    if (this.#reports.delete(url)) this.#summarise();
  }

  /** How many more requests `worker` can take now (0 when full or unavailable). */
  roomOf(worker: Worker, now: number): number {
    return worker.isAvailable() ? this.#roomOfAvailable(worker, now) : 0;
  }

  #roomOfAvailable(worker: Worker, now: number): number {
    const l = this.#limits;
    const prefilling = worker.prefilling;
    let room = Math.min(l.maxInFlight - worker.load, l.maxPrefilling - prefilling);
    const report = this.#reports.get(worker.url);
    if (report !== undefined) {
      if (now - report.at > this.#staleAfterMs || report.usage >= l.maxTokenUsage) return 0;
      const waiting = Math.max(report.waiting + prefilling - report.prefilling, 0);
      room = Math.min(room, l.maxWaitingRequests - waiting);
    }
    return Math.max(room, 0);
  }

  /**
   * The room of a pool: the sum of its workers' rooms, counted until it reaches `enough` (a
   * caller that needs only "more than k" stops there); -1 when none of them is available at all
   * (a pool with no worker is not saturated: that is another answer, `NO_WORKER`).
   */
  poolRoom(workers: readonly Worker[], now: number, enough = Number.POSITIVE_INFINITY): number {
    let room = 0;
    let available = false;
    for (let i = 0; i < workers.length && room < enough; i++) {
      const worker = workers[i]!;
      if (!worker.isAvailable()) continue;
      available = true;
      room += this.#roomOfAvailable(worker, now);
    }
    return available ? room : -1;
  }
}

function finite(value: number | undefined): number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : 0;
}
