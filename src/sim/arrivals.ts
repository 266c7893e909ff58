/**
 * How requests reach the fleet: all at once, as a Poisson process, from a closed loop of clients,
 * or at the timestamps of a trace.
 *
 * @module
 */

/**
 * An arrival process.
 *
 * - `all_at_once`: every request at time 0, in workload order.
 * - `poisson`: exponential gaps with mean `1000 / ratePerSecond` ms, in workload order.
 * - `closed_loop`: `concurrency` requests in flight; each completion sends the next one.
 *   `concurrency: 1` with an unbounded cache removes every timing effect.
 * - `trace`: each request at its `timestamp`, divided by `speedup` (default 1).
 *
 * A request with `after` is sent no earlier than that request's completion plus its `delayMs`.
 *
 * @public
 */
export type ArrivalProcess =
  | { readonly kind: 'all_at_once' }
  | { readonly kind: 'poisson'; readonly ratePerSecond: number }
  | { readonly kind: 'closed_loop'; readonly concurrency: number }
  | { readonly kind: 'trace'; readonly speedup?: number };

/** One line describing `arrivals`, for reports. @public */
export function describeArrivals(arrivals: ArrivalProcess): string {
  switch (arrivals.kind) {
    case 'all_at_once':
      return 'all at once';
    case 'poisson':
      return `Poisson, ${format(arrivals.ratePerSecond)} req/s`;
    case 'closed_loop':
      return `closed loop, ${arrivals.concurrency} in flight`;
    case 'trace':
      return arrivals.speedup === undefined || arrivals.speedup === 1
        ? 'trace timestamps'
        : `trace timestamps, ${format(arrivals.speedup)}× faster`;
  }
}

function format(value: number): string {
  return value >= 100 ? value.toFixed(0) : value >= 10 ? value.toFixed(1) : value.toFixed(2);
}
