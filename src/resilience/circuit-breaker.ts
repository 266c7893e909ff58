/**
 * Per-worker circuit breaker: closed → open → half-open → closed.
 *
 * @module
 */

import { fail } from '../core/options.js';
import type { ResolvedCircuitBreakerConfig } from './circuit-breaker-config.js';
import type { Clock } from './clock.js';
import { FailureWindow } from './failure-window.js';

/** A breaker's state. Only `closed` and a half-open breaker with a free trial slot admit requests. @public */
export type CircuitState = 'closed' | 'open' | 'half_open';

/** @internal Told about every state change of a breaker. */
export type CircuitObserver = (from: CircuitState, to: CircuitState) => void;

/** Plain-data view of a breaker for `stats()` and snapshots. @public */
export interface CircuitBreakerSnapshot {
  readonly state: CircuitState;
  readonly consecutiveFailures: number;
  readonly trialsInFlight: number;
  readonly disabled: boolean;
  /**
   * Time left, in ms, of the cooldown a `Retry-After` started ({@link CircuitBreaker.coolDown}):
   * the worker takes no request until it is over, whatever the state. 0 when there is none.
   */
  readonly cooldownMs: number;
}

// Set by the class's static block.
let newBreaker: (config: ResolvedCircuitBreakerConfig, clock: Clock) => CircuitBreaker;

/**
 * A worker's circuit breaker.
 *
 * - **closed**: every request passes; `failureThreshold` consecutive failures open it, and so
 *   does, when `window` is configured, a failure rate of at least `window.failureRate` over the
 *   last `window.ms` with at least `window.minRequests` requests.
 * - **open**: no request passes until `openMs` have elapsed; then the next read of
 *   {@link CircuitBreaker.state} or {@link CircuitBreaker.canExecute} finds it half-open (no timer
 *   per worker: the transition is evaluated lazily from the injected clock). Evidence that the
 *   worker is back ends the period at once ({@link CircuitBreaker.halfOpen}).
 * - **half_open**: at most `halfOpenMaxRequests` trial requests at a time; `successThreshold`
 *   successes close it, any failure reopens it.
 *
 * Apart from its state, a breaker can be **cooling down** ({@link CircuitBreaker.coolDown}): the
 * worker answered a failure with a `Retry-After`, so it takes no request until that time has
 * passed (at most `maxCooldownMs`). A cooldown is not a failure state: it moves no count, opens
 * nothing and is not reported as a state change; it ends by itself, evaluated lazily from the
 * clock like the open period.
 *
 * A disabled breaker is always closed, ignores outcomes and never cools down.
 *
 * @public
 */
export class CircuitBreaker {
  readonly #config: ResolvedCircuitBreakerConfig;
  readonly #clock: Clock;
  #state: CircuitState = 'closed';
  #consecutiveFailures = 0;
  #halfOpenSuccesses = 0;
  #trialsInFlight = 0;
  #openedAt = 0;
  /** Clock time at which the current cooldown ends; 0 while there is none. */
  #coolUntil = 0;
  /**
   * Where the breaker mirrors "admits every request without being asked" — closed and not
   * cooling down — for hot paths (the worker's runtime).
   */
  #mirror: { breakerClosed: boolean } | undefined;
  /** +1 each time the breaker turns half-open; tags trial leases so late outcomes are recognised. */
  #generation = 0;
  readonly #window: FailureWindow | undefined;
  /** Called on every state change, in the order added (each router on the registry adds one). */
  #observers: CircuitObserver[] = [];

  /** Breakers are created by the registry with the worker. */
  private constructor(config: ResolvedCircuitBreakerConfig, clock: Clock) {
    this.#config = config;
    this.#clock = clock;
    this.#window = config.window === undefined ? undefined : new FailureWindow(config.window.ms);
  }

  /** The resolved configuration. */
  get config(): ResolvedCircuitBreakerConfig {
    return this.#config;
  }

  /** The current state, after applying an elapsed open period. O(1). */
  get state(): CircuitState {
    if (this.#state === 'open' && this.#clock() - this.#openedAt >= this.#config.openMs)
      this.#toHalfOpen();
    return this.#state;
  }

  /**
   * Whether a request may be sent now: not cooling down, and closed or half-open with a free
   * trial slot. Does not reserve a trial slot. O(1).
   */
  canExecute(): boolean {
    // Closed first: the common case reads two fields (a disabled breaker never leaves closed).
    if ((this.#state === 'closed' && this.#coolUntil === 0) || this.#config.disabled) return true;
    if (this.#coolUntil !== 0 && this.#cooling()) return false;
    const state = this.state;
    if (state === 'closed') return true;
    return state === 'half_open' && this.#trialsInFlight < this.#config.halfOpenMaxRequests;
  }

  /** Records a successful request. In half-open, enough of them close the breaker. */
  recordSuccess(): void {
    if (this.#config.disabled) return;
    const state = this.state;
    if (state === 'half_open') {
      this.#endTrial();
      if (++this.#halfOpenSuccesses >= this.#config.successThreshold) this.#close();
    } else if (state === 'closed') {
      this.#closedSuccess();
    }
  }

  /** Records a failed request. Opens the breaker at the threshold, or at once when half-open. */
  recordFailure(): void {
    if (this.#config.disabled) return;
    const state = this.state;
    if (state === 'half_open') {
      this.#endTrial();
      this.#open();
    } else if (state === 'closed') {
      this.#closedFailure();
    }
  }

  /** Closes the breaker and forgets every count, and ends a cooldown. */
  reset(): void {
    this.#coolUntil = 0;
    this.#close();
  }

  /**
   * Starts a cooldown: no request is admitted for `ms` (capped at `maxCooldownMs`), then the
   * breaker admits requests again by itself as its state allows — evaluated lazily from the
   * clock, no timer. A cooldown that would end sooner than the current one changes nothing. Not a
   * failure: counts and state stay as they are and no `circuitChanged` is emitted. The router
   * calls it when a worker answers a failure status with a `Retry-After`; a lease released with
   * `retryAfterMs` does too. A disabled breaker, `maxCooldownMs: 0` and `ms` 0 do nothing.
   *
   * @throws {@link FleetRouteError} `INVALID_ARGUMENT` when `ms` is not a finite number ≥ 0.
   *   Cost: O(1).
   */
  coolDown(ms: number): void {
    if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0)
      fail('ms', 'a finite number ≥ 0', ms);
    this.#coolDown(ms);
  }

  /** Opens the breaker now, as if the failure threshold had been reached. A disabled breaker stays closed. */
  forceOpen(): void {
    if (this.#config.disabled) return;
    this.#open();
  }

  /**
   * Ends an open period now, as if `openMs` had elapsed: an open breaker turns half-open, and its
   * trial rules apply from here (`halfOpenMaxRequests` trials at a time, `successThreshold`
   * successes close it, a failure reopens it for a full `openMs`). Does nothing to a closed or
   * half-open breaker, nor to a disabled one. The router's health loop calls it when the worker
   * shows it is back: it returns to `ready`, or a probe succeeds after one failed while the
   * breaker was open. A cooldown in progress still holds requests off until it ends.
   *
   * Emits (through the breaker's observers, so as every router's `circuitChanged`): `open →
   * half_open` when it moved. Cost: O(1).
   */
  halfOpen(): void {
    if (this.#config.disabled || this.state !== 'open') return;
    this.#toHalfOpen();
  }

  /**
   * Time left of the current cooldown ({@link CircuitBreaker.coolDown}), in ms; 0 when there is
   * none (one that has elapsed ends here). O(1).
   */
  get cooldownMs(): number {
    return this.#coolUntil !== 0 && this.#cooling() ? this.#coolUntil - this.#clock() : 0;
  }

  /** A plain-data copy of the breaker's state (an elapsed open period or cooldown applied). */
  snapshot(): CircuitBreakerSnapshot {
    return {
      state: this.state,
      consecutiveFailures: this.#consecutiveFailures,
      trialsInFlight: this.#trialsInFlight,
      disabled: this.#config.disabled,
      cooldownMs: this.cooldownMs,
    };
  }

  /**
   * @internal Keeps `target.breakerClosed` equal to "closed and not cooling down" from now on (a
   * worker runtime); `undefined` detaches the breaker from its previous target. The mirror moves
   * when the state changes and when a cooldown starts or is found over; an open period or a
   * cooldown that elapsed unobserved leaves it as it was (the next read applies it).
   */
  mirrorInto(target: { breakerClosed: boolean } | undefined): void {
    this.#mirror = target;
    if (target !== undefined) target.breakerClosed = this.#admitsAll();
  }

  /**
   * @internal A lease ended with a failure whose response carried a `Retry-After` of `ms`:
   * starts a cooldown, as {@link CircuitBreaker.coolDown}, for a value that is a finite
   * number > 0; anything else (from outside, never trusted) is ignored.
   */
  coolDownAfter(ms: unknown): void {
    if (typeof ms === 'number' && ms > 0 && ms <= Number.MAX_VALUE) this.#coolDown(ms);
  }

  /**
   * @internal A lease was taken. In half-open it occupies a trial slot.
   * @returns the trial tag to hand back to {@link CircuitBreaker.settle}, or -1 when the lease is
   *   not a trial.
   */
  onAcquire(): number {
    if (this.#config.disabled || this.state !== 'half_open') return -1;
    this.#trialsInFlight++;
    return this.#generation;
  }

  /**
   * @internal A lease ended. Frees its trial slot if it still holds one, then records the outcome.
   * A success only counts towards closing a half-open breaker when it comes from one of this
   * half-open period's trials: a request sent while the breaker was closed proves nothing about
   * the recovery. A failure always counts.
   */
  settle(trial: number, outcome: 'success' | 'failure' | 'none'): void {
    if (this.#config.disabled) return;
    const state = this.state;
    const currentTrial = trial >= 0 && trial === this.#generation && state === 'half_open';
    if (currentTrial) this.#endTrial();
    if (outcome === 'failure') {
      if (state === 'half_open') this.#open();
      else if (state === 'closed') this.#closedFailure();
    } else if (outcome === 'success') {
      if (state === 'closed') this.#closedSuccess();
      else if (currentTrial && ++this.#halfOpenSuccesses >= this.#config.successThreshold)
        this.#close();
    }
  }

  /**
   * @internal Calls `observer(from, to)` on every state change from now on (each router that
   * routes over the registry adds one for its `circuitChanged` event). Adding the same function
   * twice keeps one. An observer that throws does not stop the others or the state change.
   */
  addObserver(observer: CircuitObserver): void {
    if (!this.#observers.includes(observer)) this.#observers = [...this.#observers, observer];
  }

  /** @internal Stops calling `observer`. */
  removeObserver(observer: CircuitObserver): void {
    if (this.#observers.includes(observer))
      this.#observers = this.#observers.filter((o) => o !== observer);
  }

  /**
   * @internal This breaker takes the place of `previous` (the registry swaps a worker's breaker
   * when its settings change): it keeps `previous`'s observers, and tells them the worker's
   * breaker went from `previous`'s state to this one's when they differ. `previous` keeps none.
   */
  succeed(previous: CircuitBreaker): void {
    const observers = previous.#observers;
    previous.#observers = [];
    for (const observer of observers) this.addObserver(observer);
    // A cooldown in progress carries over (under this breaker's cap): the worker asked for it.
    if (previous.#coolUntil !== 0 && previous.#cooling())
      this.#coolDown(previous.#coolUntil - this.#clock());
    const from = previous.#state;
    if (from !== this.#state) this.#notify(from, this.#state);
  }

  static {
    newBreaker = (config, clock) => new CircuitBreaker(config, clock);
  }

  #closedSuccess(): void {
    this.#consecutiveFailures = 0;
    this.#window?.record(false, this.#clock());
  }

  #closedFailure(): void {
    const window = this.#window;
    let rateTripped = false;
    if (window !== undefined) {
      window.record(true, this.#clock());
      const w = this.#config.window!;
      rateTripped =
        window.total >= w.minRequests && window.failures / window.total >= w.failureRate;
    }
    if (++this.#consecutiveFailures >= this.#config.failureThreshold || rateTripped) this.#open();
  }

  #moveTo(to: CircuitState): void {
    const from = this.#state;
    this.#state = to;
    this.#syncMirror();
    if (from !== to) this.#notify(from, to);
  }

  /** Closed and not cooling down: every request passes without asking. */
  #admitsAll(): boolean {
    return this.#state === 'closed' && this.#coolUntil === 0;
  }

  #syncMirror(): void {
    const mirror = this.#mirror;
    if (mirror === undefined) return;
    const admits = this.#admitsAll();
    // Only a change: the runtime's setter re-files the worker in its groups' histograms.
    if (mirror.breakerClosed !== admits) mirror.breakerClosed = admits;
  }

  /** `ms` capped at `maxCooldownMs`; a later end than the current one wins. */
  #coolDown(ms: number): void {
    const cap = this.#config.maxCooldownMs;
    if (this.#config.disabled || cap === 0 || !(ms > 0)) return;
    const until = this.#clock() + Math.min(ms, cap);
    if (until <= this.#coolUntil) return;
    this.#coolUntil = until;
    this.#syncMirror();
  }

  /** Whether a cooldown is still running; one that has elapsed ends here (lazily). */
  #cooling(): boolean {
    if (this.#clock() < this.#coolUntil) return true;
    this.#coolUntil = 0;
    this.#syncMirror();
    return false;
  }

  #notify(from: CircuitState, to: CircuitState): void {
    // The array is replaced, never mutated, so an observer that adds or removes one is safe.
    const observers = this.#observers;
    for (let i = 0; i < observers.length; i++) {
      try {
        observers[i]!(from, to);
      } catch {
        // An observer must not break the lease or probe that moved the breaker.
      }
    }
  }

  /** A new half-open period: no trial in flight or succeeded yet, and a new trial tag. */
  #toHalfOpen(): void {
    this.#halfOpenSuccesses = 0;
    this.#trialsInFlight = 0;
    this.#generation++;
    this.#moveTo('half_open');
  }

  #endTrial(): void {
    if (this.#trialsInFlight > 0) this.#trialsInFlight--;
  }

  #open(): void {
    this.#openedAt = this.#clock();
    this.#consecutiveFailures = 0;
    this.#halfOpenSuccesses = 0;
    this.#trialsInFlight = 0;
    this.#window?.clear();
    this.#moveTo('open');
  }

  #close(): void {
    this.#consecutiveFailures = 0;
    this.#halfOpenSuccesses = 0;
    this.#trialsInFlight = 0;
    this.#window?.clear();
    this.#moveTo('closed');
  }
}

/** @internal A new, closed breaker (the registry makes one per worker). */
export function createCircuitBreaker(
  config: ResolvedCircuitBreakerConfig,
  clock: Clock,
): CircuitBreaker {
  return newBreaker(config, clock);
}
