/**
 * The arrivals known before a run starts — every request for `all_at_once`, `poisson` and
 * `trace`, the first `concurrency` for `closed_loop` — in the order they happen. Trace
 * timestamps are rebased here: the earliest one becomes simulated time 0.
 *
 * @module
 * @internal
 */
import type { ArrivalProcess } from './arrivals.js';
import { SeededRandom } from './random.js';
import type { SimRequest } from './workload.js';

/**
 * @internal Scheduled arrivals as two parallel typed arrays sorted by time (ties: request id),
 * read from the front. Later arrivals (a closed loop's next request, a turn released by the one
 * it waits for) are not here: the simulation queues them as they happen.
 */
export class ArrivalSchedule {
  /**
   * The earliest trace timestamp, subtracted from every timestamp before the speedup so the
   * first arrival is at 0 (ms of the trace's clock). 0 for the other arrival processes.
   */
  readonly offsetMs: number;
  readonly #ids: Int32Array;
  readonly #times: Float64Array;
  #head = 0;

  constructor(ids: Int32Array, times: Float64Array, offsetMs: number) {
    this.#ids = ids;
    this.#times = times;
    this.offsetMs = offsetMs;
  }

  /**
   * The schedule of `arrivals` over `requests`. Poisson gaps come from a generator seeded with
   * `seed`; a trace request without a `timestamp` arrives at time 0 (then nothing is rebased),
   * except one with `after`, which arrives with the first request (it then waits for `after`)
   * and leaves the rebasing alone.
   *
   * @returns the schedule. Cost: O(n log n) for a trace whose timestamps are out of order, O(n)
   *   otherwise; 12 bytes per scheduled request.
   */
  static of(
    arrivals: ArrivalProcess,
    requests: readonly SimRequest[],
    seed: number,
  ): ArrivalSchedule {
    const total = requests.length;
    switch (arrivals.kind) {
      case 'all_at_once':
        return ArrivalSchedule.#inOrder(new Float64Array(total), 0);
      case 'closed_loop':
        return ArrivalSchedule.#inOrder(new Float64Array(Math.min(arrivals.concurrency, total)), 0);
      case 'poisson': {
        const random = new SeededRandom(seed ^ 0x5eed_a11);
        const mean = 1000 / arrivals.ratePerSecond;
        const times = new Float64Array(total);
        let t = 0;
        for (let i = 0; i < total; i++) {
          times[i] = t;
          t += random.exponential(mean);
        }
        return ArrivalSchedule.#inOrder(times, 0);
      }
      case 'trace': {
        const speedup = arrivals.speedup ?? 1;
        let offset = total === 0 ? 0 : Number.POSITIVE_INFINITY;
        for (const request of requests) {
          if (request.timestamp !== undefined || request.after === undefined) {
            offset = Math.min(offset, request.timestamp ?? 0);
          }
        }
        const times = new Float64Array(total);
        for (let i = 0; i < total; i++) {
          const request = requests[i]!;
          const own = request.timestamp ?? (request.after === undefined ? 0 : offset);
          times[i] = (own - offset) / speedup;
        }
        return ArrivalSchedule.#sorted(times, offset);
      }
    }
  }

  /** Arrivals scheduled in all (taken or not). */
  get size(): number {
    return this.#times.length;
  }

  /** The time of the next scheduled arrival, or `Infinity` when none is left. O(1). */
  get nextTime(): number {
    return this.#head < this.#times.length ? this.#times[this.#head]! : Number.POSITIVE_INFINITY;
  }

  /** Removes the next scheduled arrival. @returns its request id. O(1). */
  take(): number {
    return this.#ids[this.#head++]!;
  }

  /** Times already in request order (nondecreasing). */
  static #inOrder(times: Float64Array, offsetMs: number): ArrivalSchedule {
    const ids = new Int32Array(times.length);
    for (let i = 0; i < ids.length; i++) ids[i] = i;
    return new ArrivalSchedule(ids, times, offsetMs);
  }

  /** Times by request id, in any order. */
  static #sorted(byId: Float64Array, offsetMs: number): ArrivalSchedule {
    let ordered = true;
    for (let i = 1; i < byId.length && ordered; i++) ordered = byId[i - 1]! <= byId[i]!;
    if (ordered) return ArrivalSchedule.#inOrder(byId, offsetMs);
    const ids = new Int32Array(byId.length);
    for (let i = 0; i < ids.length; i++) ids[i] = i;
    ids.sort((a, b) => byId[a]! - byId[b]! || a - b);
    const times = new Float64Array(byId.length);
    for (let i = 0; i < ids.length; i++) times[i] = byId[ids[i]!]!;
    return new ArrivalSchedule(ids, times, offsetMs);
  }
}
