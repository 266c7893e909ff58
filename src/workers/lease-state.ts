/**
 * What a lease must undo when it ends, and how a request ended.
 *
 * @module
 */
import type { CircuitBreaker } from '../resilience/circuit-breaker.js';
import type { LoadCounter } from './load-counter.js';
import type { WorkerRuntime } from './worker-runtime.js';

/**
 * How a request ended, fed to the worker's circuit breaker. When `status` is given it decides:
 * a status in the breaker's `failureStatuses` is a failure, any other a success. Without
 * `status`, `ok: false` (a network error, a timeout) is a failure.
 *
 * @public
 */
export interface LeaseOutcome {
  readonly ok: boolean;
  readonly status?: number;
  /**
   * The response's `Retry-After`, in ms (`Router.execute` passes what it read). With a failure,
   * the worker cools down for that long (capped by its breaker's `maxCooldownMs`): no request is
   * routed to it until then (`CircuitBreaker.coolDown`). Ignored with a success, and when it is
   * not a number > 0.
   */
  readonly retryAfterMs?: number;
}

/**
 * @internal What a lease must undo when it ends, apart from the lease object, so a finaliser can
 * end a lease that was garbage-collected without `release()`.
 */
export class LeaseState {
  #runtime: WorkerRuntime | undefined;
  readonly #counters: readonly LoadCounter[];
  readonly #breaker: CircuitBreaker;
  readonly #trial: number;
  /** The worker's URL, for leak reports. */
  readonly url: string;

  constructor(
    runtime: WorkerRuntime,
    counters: readonly LoadCounter[],
    breaker: CircuitBreaker,
    trial: number,
    url: string,
  ) {
    this.#runtime = runtime;
    this.#counters = counters;
    this.#breaker = breaker;
    this.#trial = trial;
    this.url = url;
  }

  get ended(): boolean {
    return this.#runtime === undefined;
  }

  /** Whether the request still awaits its first token (counted in the worker's `prefilling`). */
  #prefilling = true;
  /** Uncached prompt tokens charged to the worker's `prefillTokens`. */
  #charged = 0;
  /** Whether `charge` ran (a lease is charged at most once). */
  #isCharged = false;
  /** Prefill work predicted ahead of this request when it was charged (tokens). */
  #ahead = 0;
  /** When it was charged, on `#clock`; the clock is `undefined` when nothing is measured. */
  #at = 0;
  #clock: (() => number) | undefined;
  /** The prior speed the worker's estimate is blended with (tokens per ms). */
  #priorPerMs = 0;

  /**
   * Charges the request's predicted uncached prompt tokens to the worker's `prefillTokens` until
   * its first token or release, once, and only while it awaits its first token. With a clock,
   * the first token's time also feeds the worker's prefill speed: `ahead + tokens` over the time
   * since now. O(1).
   * @returns whether it charged.
   */
  charge(tokens: number, ahead: number, clock?: () => number, priorPerMs = 0): boolean {
    const rt = this.#runtime;
    if (rt === undefined || !this.#prefilling || this.#isCharged) return false;
    if (!(tokens >= 0) || !Number.isFinite(tokens)) return false;
    this.#isCharged = true;
    this.#charged = tokens;
    this.#ahead = ahead >= 0 && Number.isFinite(ahead) ? ahead : 0;
    if (clock !== undefined && priorPerMs > 0) {
      this.#clock = clock;
      this.#priorPerMs = priorPerMs;
      this.#at = clock();
      rt.addPrefillTokens(tokens, this.#at);
    } else {
      rt.addPrefillTokens(tokens);
    }
    return true;
  }

  /**
   * Marks the first token once: the worker's `prefilling` goes down by one, its `prefillTokens`
   * by what this lease was charged, and a measured charge feeds the worker's prefill speed.
   * @returns `false` when already marked or the lease has ended.
   */
  firstToken(): boolean {
    const rt = this.#runtime;
    if (rt === undefined || !this.#prefilling) return false;
    this.#prefilling = false;
    rt.addPrefilling(-1);
    if (this.#charged !== 0) rt.addPrefillTokens(-this.#charged);
    const clock = this.#clock;
    if (clock !== undefined) {
      const now = clock();
      rt.observePrefill(this.#ahead + this.#charged, now - this.#at, this.#priorPerMs);
      rt.prefillDone(now);
      this.#clock = undefined;
    }
    return true;
  }

  /** Ends the lease once. @returns `false` when it had already ended. */
  end(outcome: LeaseOutcome | undefined): boolean {
    const rt = this.#runtime;
    if (rt === undefined) return false;
    this.#runtime = undefined;
    rt.addLoad(-1, this.#prefilling ? -1 : 0);
    if (this.#prefilling && this.#charged !== 0) rt.addPrefillTokens(-this.#charged);
    this.#prefilling = false;
    this.#clock = undefined;
    // The group totals the lease was counted in, even if the worker changed groups since.
    const counters = this.#counters;
    for (let i = 0; i < counters.length; i++)
      if (counters[i]!.inFlight > 0) counters[i]!.inFlight--;
    // The breaker the lease was taken under: a replace that swapped the breaker does not let a
    // request sent before it count against (or for) the new one.
    const breaker = this.#breaker;
    if (breaker !== rt.breaker) return true;
    const given = typeof outcome === 'object' && outcome !== null;
    const failed = given && isFailure(outcome, breaker.config.failureStatuses);
    breaker.settle(this.#trial, !given ? 'none' : failed ? 'failure' : 'success');
    if (failed && outcome.retryAfterMs !== undefined) breaker.coolDownAfter(outcome.retryAfterMs);
    return true;
  }
}

function isFailure(outcome: LeaseOutcome, failureStatuses: readonly number[]): boolean {
  const status = outcome.status;
  if (typeof status === 'number' && Number.isFinite(status))
    return failureStatuses.includes(status);
  return outcome.ok !== true;
}
