/**
 * `AdapterResidency`: what `adapterAware` believes each worker holds — the adapters its last load
 * report listed, and those this router (or, through shared state, another) sent it lately — and
 * the adapter names it has learnt.
 *
 * @module
 * @internal
 */
import {
  type AdapterReport,
  type LoadReport,
  MAX_ADAPTERS_PER_REPORT,
} from '../../workers/load-report.js';
import { isModelId } from '../../workers/worker-spec.js';

/** Adapters remembered as recently sent, per worker; the least recently sent go first. */
export const MAX_RECENT_PER_WORKER = 256;

const EMPTY: ReadonlySet<string> = new Set();

/** @internal One worker's adapters. */
class WorkerAdapters {
  /** From the last report: `resident ∪ running` when it lists residency, else `running ∪ waiting`. */
  reported: ReadonlySet<string> = EMPTY;
  /** Slots from the last report (`NaN`: unknown). */
  maxAdapters = Number.NaN;
  /** Adapter → when this worker was last sent a request for it (ms); oldest first. */
  readonly recent = new Map<string, number>();
}

/**
 * @internal The residency beliefs of one wrapper. `epoch` moves whenever the answer of
 * {@link AdapterResidency.holds} or {@link AdapterResidency.used} may have changed for some worker
 * (a report that changes a worker's adapters or slots, a send of an adapter a worker was not
 * believed to hold, a removal or restart), so tiers cached against it stay right. An expiring
 * recent send does not move it: a cache of tiers records when its earliest recent send expires
 * ({@link AdapterResidency.expiresAt}).
 */
export class AdapterResidency {
  readonly #workers = new Map<string, WorkerAdapters>();
  /** Every adapter name learnt (reports, sends), bounded by `maxAdapters`. */
  readonly #known = new Set<string>();
  readonly #maxAdapters: number;
  readonly #recentMs: number;
  epoch = 0;

  constructor(maxAdapters: number, recentMs: number) {
    this.#maxAdapters = maxAdapters;
    this.#recentMs = recentMs;
  }

  /** Whether `model` was learnt as an adapter. O(1). */
  isKnown(model: string): boolean {
    return this.#known.has(model);
  }

  /** Learns `model` as an adapter (ignored past the bound or for a non-id). O(1). */
  learn(model: string): void {
    if (this.#known.size < this.#maxAdapters && isModelId(model)) this.#known.add(model);
  }

  /**
   * Whether `url` holds `adapter` at `now`: its report lists it, or it was sent it within
   * `recentMs`. O(1).
   */
  holds(url: string, adapter: string, now: number): boolean {
    const w = this.#workers.get(url);
    if (w === undefined) return false;
    if (w.reported.has(adapter)) return true;
    const sent = w.recent.get(adapter);
    return sent !== undefined && now - sent < this.#recentMs;
  }

  /**
   * When `url`'s recent send of `adapter` stops counting (`Infinity` when its report lists it
   * or it has none). O(1).
   */
  expiresAt(url: string, adapter: string): number {
    const w = this.#workers.get(url);
    if (w === undefined || w.reported.has(adapter)) return Number.POSITIVE_INFINITY;
    const sent = w.recent.get(adapter);
    return sent === undefined ? Number.POSITIVE_INFINITY : sent + this.#recentMs;
  }

  /**
   * Whether `url` is known to have a free adapter slot at `now`: its report gave a slot count
   * greater than the adapters it is believed to hold. O(recent of that worker).
   */
  hasFreeSlot(url: string, now: number): boolean {
    const w = this.#workers.get(url);
    if (w === undefined || Number.isNaN(w.maxAdapters)) return false;
    let used = w.reported.size;
    if (used >= w.maxAdapters) return false;
    for (const [adapter, sent] of w.recent) {
      if (now - sent < this.#recentMs && !w.reported.has(adapter) && ++used >= w.maxAdapters)
        return false;
    }
    return true;
  }

  /** `url` was sent a request for `adapter` at `now`. O(1) amortised. */
  sent(url: string, adapter: string, now: number): void {
    let w = this.#workers.get(url);
    if (w === undefined) {
      w = new WorkerAdapters();
      this.#workers.set(url, w);
    }
    const recent = w.recent;
    const before = recent.get(adapter);
    if (before !== undefined && now - before < this.#recentMs / 2) {
      // Fresh: a new time, same place in the order (moved only once it is half as old as the
      // memory is long, so a hot adapter costs one map write per request).
      recent.set(adapter, now);
      return;
    }
    if (before === undefined || now - before >= this.#recentMs) {
      if (!w.reported.has(adapter)) this.epoch++;
    }
    recent.delete(adapter);
    recent.set(adapter, now);
    if (recent.size > MAX_RECENT_PER_WORKER) recent.delete(recent.keys().next().value!);
  }

  /** Reads the adapters of every report; learns their names. O(reports × adapters listed). */
  update(reports: ReadonlyMap<string, LoadReport>): void {
    for (const [url, report] of reports) {
      const adapters = (report as LoadReport | undefined)?.adapters;
      let w = this.#workers.get(url);
      if (adapters === undefined && w === undefined) continue;
      if (w === undefined) {
        w = new WorkerAdapters();
        this.#workers.set(url, w);
      }
      const reported = adapters === undefined ? EMPTY : this.#namesOf(adapters);
      const slots = slotsOf(adapters);
      if (!sameSet(reported, w.reported) || !sameNumber(slots, w.maxAdapters)) this.epoch++;
      w.reported = reported;
      w.maxAdapters = slots;
    }
  }

  /** Forgets `url`. O(1). */
  remove(url: string): void {
    if (this.#workers.delete(url)) this.epoch++;
  }

  /** Forgets every worker and adapter. */
  clear(): void {
    this.#workers.clear();
    this.#known.clear();
    this.epoch++;
  }

  #namesOf(adapters: AdapterReport): ReadonlySet<string> {
    const names = new Set<string>();
    const add = (list: unknown): void => {
      if (!Array.isArray(list)) return;
      const n = Math.min(list.length, MAX_ADAPTERS_PER_REPORT);
      for (let i = 0; i < n; i++) {
        const name: unknown = list[i];
        if (!isModelId(name)) continue;
        names.add(name);
        this.learn(name);
      }
    };
    if (Array.isArray(adapters.resident)) add(adapters.resident);
    else add(adapters.waiting);
    add(adapters.running);
    return names.size === 0 ? EMPTY : names;
  }
}

function slotsOf(adapters: AdapterReport | undefined): number {
  const n = adapters?.maxAdapters;
  return typeof n === 'number' && Number.isInteger(n) && n >= 0 ? n : Number.NaN;
}

function sameNumber(a: number, b: number): boolean {
  return a === b || (Number.isNaN(a) && Number.isNaN(b));
}

function sameSet(a: ReadonlySet<string>, b: ReadonlySet<string>): boolean {
  if (a === b) return true;
  if (a.size !== b.size) return false;
  for (const name of a) if (!b.has(name)) return false;
  return true;
}
