/**
 * In-flight totals per group of workers (all workers, one model's workers, the wildcard workers),
 * kept current by leases, so a bounded-load policy can read a group's mean load in O(1) instead
 * of summing every candidate on every request.
 *
 * @module
 * @internal
 */
import type { Worker } from './worker.js';

/** @internal Requests in flight across one group of workers. */
export class LoadCounter {
  inFlight = 0;
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
 * The sum of `worker.load` over `workers`: O(1) for an array handed out by a registry, O(n) for
 * any other array.
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
  for (let i = 0; i < workers.length; i++) sum += workers[i]!.load;
  return sum;
}
