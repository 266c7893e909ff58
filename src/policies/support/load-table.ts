/**
 * Polled load reports per worker URL, sanitised once on arrival so hot paths read plain numbers.
 *
 * @module
 * @internal
 */
import { IdentityMemo } from '../../core/identity-memo.js';
import type { Clock } from '../../resilience/clock.js';
import type { LoadReport } from '../../workers/load-report.js';
import { Worker } from '../../workers/worker.js';

/** @internal A sanitised report: absent or invalid fields are `NaN`. */
export interface StoredLoad {
  tokenUsage: number;
  queuedTokens: number;
  runningRequests: number;
  waitingRequests: number;
  throughput: number;
  /** When the report arrived, on the policy's clock. */
  receivedAt: number;
  /**
   * Prompt tokens the policy sent this worker since the report arrived (`least_load`'s
   * router-side credit); a new report starts again from 0.
   */
  credit: number;
  /**
   * This router's requests in flight on the worker when the report arrived (`power_of_two`'s
   * baseline: what it sent since, net of what finished, is the in-flight count minus this), or
   * `NaN` until the policy has read it.
   */
  leasesAtReport: number;
}

function nonNegative(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : Number.NaN;
}

/** Reports laid out in candidate order for one list, valid for one table version. */
interface Aligned {
  version: number;
  reports: (StoredLoad | undefined)[];
}

/** An alignment not built yet (version -1 never matches). */
const NEW_ALIGNED = (): Aligned => ({ version: -1, reports: [] });

/** @internal */
export class LoadTable {
  readonly #reports = new Map<string, StoredLoad>();
  readonly #aligned = new IdentityMemo<readonly Worker[], Aligned>();
  readonly #clock: Clock;
  readonly #staleAfterMs: number;
  #version = 0;

  constructor(clock: Clock, staleAfterMs: number) {
    this.#clock = clock;
    this.#staleAfterMs = staleAfterMs;
  }

  /** The policy's clock, which the reports' times are on. */
  get clock(): Clock {
    return this.#clock;
  }

  /** +1 on every update or removal, so derived values can be cached against it. */
  get version(): number {
    return this.#version;
  }

  get size(): number {
    return this.#reports.size;
  }

  /**
   * Stores each report (replacing the URL's previous one). Entries that are not objects are
   * skipped; a non-map argument is ignored.
   */
  update(reports: ReadonlyMap<string, LoadReport>): void {
    if (!(reports instanceof Map)) return;
    const now = this.#clock();
    // Forget workers that stopped reporting: the table holds at most the URLs reported within
    // the staleness window (plus the ones in this update).
    for (const [url, old] of this.#reports) {
      if (now - old.receivedAt > this.#staleAfterMs) this.#reports.delete(url);
    }
    for (const [url, report] of reports) {
      if (typeof url !== 'string' || typeof report !== 'object' || report === null) continue;
      const usage = nonNegative(report.tokenUsage);
      this.#reports.set(url, {
        tokenUsage: Math.min(1, usage),
        queuedTokens: nonNegative(report.queuedTokens),
        runningRequests: nonNegative(report.runningRequests),
        waitingRequests: nonNegative(report.waitingRequests),
        throughput: nonNegative(report.throughput),
        receivedAt: now,
        credit: 0,
        leasesAtReport: Number.NaN,
      });
    }
    this.#version++;
  }

  /**
   * The clock's time now (0, without a read, while the table is empty): read it once per `select`
   * and pass it to {@link LoadTable.isFresh}.
   */
  now(): number {
    return this.#reports.size === 0 ? 0 : this.#clock();
  }

  /** Whether `report` (from {@link LoadTable.alignedTo}) arrived within the window before `now`. */
  isFresh(report: StoredLoad | undefined, now: number): report is StoredLoad {
    return report !== undefined && now - report.receivedAt <= this.#staleAfterMs;
  }

  /**
   * The reports of `workers` in list order (`undefined` where a worker has none or an entry is
   * not a worker; freshness is still the caller's check), so a hot path reads a candidate's
   * report by its index instead of hashing its URL. Rebuilt once per list and table version: O(n)
   * after each update, O(1) otherwise. Keep passing the same list object (the registry's arrays
   * are).
   */
  alignedTo(workers: readonly Worker[]): readonly (StoredLoad | undefined)[] {
    const entry = this.#aligned.get(workers, NEW_ALIGNED);
    if (entry.version !== this.#version) {
      const reports = entry.reports;
      reports.length = workers.length;
      for (let i = 0; i < workers.length; i++) {
        const worker = workers[i];
        reports[i] = worker instanceof Worker ? this.#reports.get(worker.url) : undefined;
      }
      entry.version = this.#version;
    }
    return entry.reports;
  }

  remove(url: string): void {
    if (this.#reports.delete(url)) this.#version++;
  }

  clear(): void {
    this.#reports.clear();
    this.#aligned.clear();
    this.#version++;
  }
}
