/**
 * `WorkerLease`: one request in flight on one worker.
 *
 * @module
 */
import type { CircuitBreaker } from '../resilience/circuit-breaker.js';
import type { LoadCounter } from './load-counter.js';
import type { Worker, WorkerRuntime } from './worker.js';

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

  /** Ends the lease once. @returns `false` when it had already ended. */
  end(outcome: LeaseOutcome | undefined): boolean {
    const rt = this.#runtime;
    if (rt === undefined) return false;
    this.#runtime = undefined;
    rt.addLoad(-1);
    // The group totals the lease was counted in, even if the worker changed groups since.
    const counters = this.#counters;
    for (let i = 0; i < counters.length; i++)
      if (counters[i]!.inFlight > 0) counters[i]!.inFlight--;
    // The breaker the lease was taken under: a replace that swapped the breaker does not let a
    // request sent before it count against (or for) the new one.
    const breaker = this.#breaker;
    if (breaker !== rt.breaker) return true;
    const given = typeof outcome === 'object' && outcome !== null;
    breaker.settle(
      this.#trial,
      !given ? 'none' : isFailure(outcome, breaker.config.failureStatuses) ? 'failure' : 'success',
    );
    return true;
  }
}

// Set by the class's static block.
let newLease: (worker: Worker, state: LeaseState) => WorkerLease;
let stateOfLease: (lease: WorkerLease) => LeaseState;

/**
 * A request in flight on a worker, from {@link Worker.acquire} (or a router's `select`).
 * `release` decrements the worker's `load` exactly once; later calls do nothing.
 *
 * @public
 */
export class WorkerLease {
  readonly #worker: Worker;
  readonly #state: LeaseState;

  /** Leases come from {@link Worker.acquire}. */
  private constructor(worker: Worker, state: LeaseState) {
    this.#worker = worker;
    this.#state = state;
  }

  /** The worker this lease is on. */
  get worker(): Worker {
    return this.#worker;
  }

  /** Whether `release` has been called. */
  get released(): boolean {
    return this.#state.ended;
  }

  /**
   * Ends the lease: the worker's `load` goes down by one, and the outcome, if given, is recorded
   * in its circuit breaker. O(1).
   *
   * @returns `true` the first time, `false` on every later call (which does nothing).
   */
  release(outcome?: LeaseOutcome): boolean {
    return this.#state.end(outcome);
  }

  static {
    newLease = (worker, state) => new WorkerLease(worker, state);
    stateOfLease = (lease) => lease.#state;
  }
}

/** @internal A lease on `worker` that undoes `state` when it ends (what `Worker.acquire` returns). */
export function createLease(worker: Worker, state: LeaseState): WorkerLease {
  return newLease(worker, state);
}

/** @internal The lease's undo record (leak tracking by the router's finaliser). */
export function leaseStateOf(lease: WorkerLease): LeaseState {
  return stateOfLease(lease);
}

function isFailure(outcome: LeaseOutcome, failureStatuses: readonly number[]): boolean {
  const status = outcome.status;
  if (typeof status === 'number' && Number.isFinite(status))
    return failureStatuses.includes(status);
  return outcome.ok !== true;
}
