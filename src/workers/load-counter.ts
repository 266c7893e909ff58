/**
 * Per-group load figures (all workers, one model's workers, the wildcard workers) kept current by
 * leases and status changes, so policies read a group's total in-flight count, and the lowest and
 * highest in-flight count of its available workers, in O(1) instead of walking every candidate
 * on every request.
 *
 * @module
 * @internal
 */
// A cycle (worker.ts imports this module): safe, `Worker` is only read when a function runs.
import { Worker } from './worker.js';

/**
 * @internal How many available workers of a group have each in-flight count: the group's lowest
 * and highest load in O(1) (amortised: the bounds move one level per step when a level empties).
 */
export class LoadHistogram {
  #counts = new Int32Array(16);
  #min = 0;
  #max = -1;
  #size = 0;

  /** Available workers counted. */
  get size(): number {
    return this.#size;
  }

  /** Lowest in-flight count among them (undefined when empty: check `size`). */
  get min(): number {
    return this.#min;
  }

  /** Highest in-flight count among them. */
  get max(): number {
    return this.#max;
  }

  add(level: number): void {
    if (level >= this.#counts.length) {
      const grown = new Int32Array(Math.max(level + 1, this.#counts.length * 2));
      grown.set(this.#counts);
      this.#counts = grown;
    }
    this.#counts[level]!++;
    if (this.#size++ === 0) {
      this.#min = level;
      this.#max = level;
    } else {
      if (level < this.#min) this.#min = level;
      if (level > this.#max) this.#max = level;
    }
  }

  remove(level: number): void {
    const counts = this.#counts;
    if (level >= counts.length || counts[level] === 0) return;
    counts[level]!--;
    if (--this.#size === 0) {
      this.#min = 0;
      this.#max = -1;
      return;
    }
    if (counts[level] !== 0) return;
    if (level === this.#min) while (counts[this.#min] === 0) this.#min++;
    if (level === this.#max) while (counts[this.#max] === 0) this.#max--;
  }
}

/** @internal Load figures of one group of workers. */
export class LoadCounter {
  /** Requests in flight across the group, kept by leases (each lease undoes exactly what it did). */
  inFlight = 0;
  /** In-flight counts of the group's available workers, kept by each worker's runtime. */
  readonly histogram = new LoadHistogram();
}

/** @internal A worker that belongs to no group yet. */
export const NO_COUNTERS: readonly LoadCounter[] = Object.freeze([]);

const totals = new WeakMap<readonly Worker[], readonly LoadCounter[]>();

/**
 * @internal Declares that the in-flight total of `workers` is the sum of `counters`. The registry
 * calls it for each cached array it hands out.
 */
export function trackTotal(workers: readonly Worker[], counters: readonly LoadCounter[]): void {
  totals.set(workers, counters);
}

/**
 * @internal The groups whose union is `workers`, when `workers` is an array a registry handed out;
 * `undefined` for any other list.
 */
export function groupsOf(workers: readonly Worker[]): readonly LoadCounter[] | undefined {
  return totals.get(workers);
}

/**
 * The lowest and highest in-flight count among the available workers of a registry array, in
 * O(1), written to `out` as `[min, max, available]`; `false` for any other list (walk it instead).
 *
 * @internal
 */
export function loadBoundsOf(workers: readonly Worker[], out: Float64Array): boolean {
  const groups = totals.get(workers);
  if (groups === undefined) return false;
  let min = Number.POSITIVE_INFINITY;
  let max = Number.NEGATIVE_INFINITY;
  let size = 0;
  for (let i = 0; i < groups.length; i++) {
    const h = groups[i]!.histogram;
    if (h.size === 0) continue;
    size += h.size;
    if (h.min < min) min = h.min;
    if (h.max > max) max = h.max;
  }
  out[0] = min;
  out[1] = max;
  out[2] = size;
  return true;
}

/**
 * The sum of `worker.load` over `workers`: O(1) for an array handed out by a registry, O(n) for
 * any other array, where entries that are not workers (holes, `undefined`, foreign objects)
 * count 0 rather than throw.
 *
 * @internal
 */
export function totalLoadOf(workers: readonly Worker[]): number {
  const counters = totals.get(workers);
  if (counters !== undefined) {
    let sum = 0;
    for (let i = 0; i < counters.length; i++) sum += counters[i]!.inFlight;
    return sum;
  }
  let sum = 0;
  for (let i = 0; i < workers.length; i++) {
    const worker = workers[i];
    if (worker instanceof Worker) sum += worker.load;
  }
  return sum;
}
