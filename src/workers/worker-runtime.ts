/**
 * `WorkerRuntime`: the state every revision of one worker id shares — status, liveness, breaker,
 * in-flight count and the load groups it is counted in.
 *
 * @module
 * @internal
 */
import type { CircuitBreaker } from '../resilience/circuit-breaker.js';
import { type LoadCounter, NO_COUNTERS } from './load-counter.js';
import type { WorkerStatus } from './worker-spec.js';

/** @internal Weight an observed prefill speed keeps per later observation. */
export const PREFILL_DECAY = 0.95;
/** @internal How many ms of observation the configured prior speed counts as. */
export const PREFILL_PRIOR_MS = 250;
/** @internal An observation counts as at most this many times slower or faster than the estimate. */
export const PREFILL_SPREAD = 4;
/** @internal Added to the slowest time an observation may count as (ms): a step's fixed cost. */
export const PREFILL_SLACK_MS = 100;

/**
 * @internal State shared by every revision of one worker id: a `replace` hands the same runtime
 * to the new revision, so status, counters and in-flight leases carry over.
 */
export class WorkerRuntime {
  #status: WorkerStatus;
  #live = true;
  #breaker: CircuitBreaker;
  #breakerClosed = true;
  #load = 0;
  #prefilling = 0;
  // Other routers' in-flight counts on this worker (shared state): added to what policies read,
  // never touched by this process's leases.
  #remote = 0;
  #remotePrefilling = 0;
  // Uncached prompt tokens this process's leases were charged and that await a first token.
  #prefillTokens = 0;
  // Since when (a clock's ms) that queue has been draining: its last first token, or the charge
  // that found it empty; NaN before any.
  #drainSince = Number.NaN;
  // Prefill speed seen at first tokens: decayed sums of the work (tokens) and the time (ms).
  #speedTokens = 0;
  #speedMs = 0;
  #counters: readonly LoadCounter[] = NO_COUNTERS;
  // Where this worker is counted in its groups' load histograms: the level (its load, or -1 when
  // it is not available) and the groups, so a change moves it exactly once.
  #histLevel = -1;
  #prefillLevel = -1;
  #histGroups: readonly LoadCounter[] = NO_COUNTERS;
  // `routable` as the groups' versions last saw it: readiness moves them too (a policy's cached
  // figure over the ready members must notice a breaker-open worker leaving ready).
  #histRoutable = false;
  /** `live && status === 'ready'`, kept by the setters so hot paths read one field. */
  routable: boolean;
  processed = 0;

  constructor(status: WorkerStatus, breaker: CircuitBreaker) {
    this.#status = status;
    this.routable = status === 'ready';
    this.#breaker = breaker;
    breaker.mirrorInto(this);
  }

  get breaker(): CircuitBreaker {
    return this.#breaker;
  }

  set breaker(breaker: CircuitBreaker) {
    if (breaker === this.#breaker) return;
    this.#breaker.mirrorInto(undefined);
    this.#breaker = breaker;
    breaker.mirrorInto(this);
  }

  /**
   * Mirror of "the breaker admits every request without being asked": closed and not cooling
   * down after a `Retry-After`. Kept by the breaker itself, so the common case of an availability
   * check never touches the breaker object (one cache miss less per candidate). `false` leaves
   * the worker out of its groups' load histograms; a breaker whose open period or cooldown has
   * elapsed moves it back when next asked ({@link WorkerRuntime.canExecute}).
   */
  get breakerClosed(): boolean {
    return this.#breakerClosed;
  }

  set breakerClosed(closed: boolean) {
    this.#breakerClosed = closed;
    this.#resync();
  }

  get status(): WorkerStatus {
    return this.#status;
  }

  set status(to: WorkerStatus) {
    this.#status = to;
    this.routable = this.#live && to === 'ready';
    this.#resync();
  }

  get live(): boolean {
    return this.#live;
  }

  set live(value: boolean) {
    this.#live = value;
    this.routable = value && this.#status === 'ready';
    this.#resync();
  }

  /** Requests in flight: this process's leases plus other routers' (see {@link setRemote}). */
  get load(): number {
    return this.#load + this.#remote;
  }

  /** Requests in flight under this process's leases only: what shared state publishes. */
  get localLoad(): number {
    return this.#load;
  }

  /** Requests awaiting a first token under this process's leases only. */
  get localPrefilling(): number {
    return this.#prefilling;
  }

  /** Other routers' in-flight count on this worker (0 without shared state). */
  get remoteLoad(): number {
    return this.#remote;
  }

  /**
   * Sets other routers' in-flight and prefilling counts on this worker (shared state's view,
   * replaced on every refresh; never negative). The groups' `inFlight` totals move by the
   * change. O(groups).
   */
  setRemote(load: number, prefilling: number): void {
    const l = Number.isFinite(load) ? Math.max(load, 0) : 0;
    const p = prefilling > 0 ? Math.min(prefilling, l) : 0;
    const delta = l - this.#remote;
    if (delta === 0 && p === this.#remotePrefilling) return;
    const fell = delta < 0 || p < this.#remotePrefilling;
    if (delta !== 0) {
      const counters = this.#counters;
      for (let i = 0; i < counters.length; i++)
        counters[i]!.inFlight = Math.max(counters[i]!.inFlight + delta, 0);
    }
    this.#remote = l;
    this.#remotePrefilling = p;
    this.#resync();
    if (fell) this.#counters[0]?.freed?.();
  }

  /**
   * Changes the in-flight count by `delta` and the count awaiting a first token by `prefilling`
   * (neither below zero).
   */
  addLoad(delta: number, prefilling = 0): void {
    this.#load = Math.max(this.#load + delta, 0);
    if (prefilling !== 0) this.#prefilling = Math.max(this.#prefilling + prefilling, 0);
    this.#resync();
    // Room may have freed: a router's admission (the registry group's hook, when set) wakes.
    if (delta < 0 || prefilling < 0) this.#counters[0]?.freed?.();
  }

  /**
   * Requests in flight that have not produced their first token (see `WorkerLease.firstToken`),
   * other routers' included.
   */
  get prefilling(): number {
    return this.#prefilling + this.#remotePrefilling;
  }

  /** Changes the count of requests awaiting their first token by `delta` (never below zero). */
  addPrefilling(delta: number): void {
    this.addLoad(0, delta);
  }

  /**
   * Uncached prompt tokens of this process's leases awaiting a first token: what each lease was
   * charged when it was taken (`chargePrefill`), until its first token or release. Never negative.
   */
  get prefillTokens(): number {
    return this.#prefillTokens;
  }

  /**
   * Changes {@link prefillTokens} by `delta` (never below zero; non-finite: ignored). A charge
   * made at `now` (a clock's ms) on an empty queue starts its drain there
   * ({@link queuedPrefillTokens}). O(1).
   */
  addPrefillTokens(delta: number, now?: number): void {
    if (!Number.isFinite(delta)) return;
    if (now !== undefined && delta > 0 && this.#prefillTokens === 0) this.#drainSince = now;
    const next = this.#prefillTokens + delta;
    this.#prefillTokens = Math.max(next, 0);
  }

  /** A first token came out at `now` (a clock's ms): the work behind it drains from there. O(1). */
  prefillDone(now: number): void {
    this.#drainSince = now;
  }

  /**
   * What is left at `now` of {@link prefillTokens}: the engine works its queue in order, so
   * since the later of its last first token and the charge that found the queue empty it has
   * prefilled about `perMs` tokens per ms of it. Without a time to start from, the whole queue.
   * O(1).
   */
  queuedPrefillTokens(now: number, perMs: number): number {
    const queued = this.#prefillTokens;
    const since = this.#drainSince;
    if (queued === 0 || Number.isNaN(since) || !(now > since)) return queued;
    return Math.max(queued - (now - since) * perMs, 0);
  }

  /**
   * Folds one first token into the worker's prefill speed: `tokens` of prefill work (what was
   * queued ahead when the request was sent, plus its own uncached tokens) took `ms`. Older
   * observations weigh less ({@link PREFILL_DECAY} per observation); an observation more than
   * {@link PREFILL_SPREAD} times slower or faster than the estimate counts as that bound, so one
   * stalled request cannot wreck it. O(1).
   */
  observePrefill(tokens: number, ms: number, priorPerMs: number): void {
    if (!(tokens > 0) || !(ms > 0) || !Number.isFinite(tokens) || !Number.isFinite(ms)) return;
    const estimate = this.prefillSpeed(priorPerMs);
    const fastest = tokens / (estimate * PREFILL_SPREAD);
    const slowest = (tokens * PREFILL_SPREAD) / estimate + PREFILL_SLACK_MS;
    const clamped = Math.min(Math.max(ms, fastest), slowest);
    this.#speedTokens = this.#speedTokens * PREFILL_DECAY + tokens;
    this.#speedMs = this.#speedMs * PREFILL_DECAY + clamped;
  }

  /**
   * The worker's prefill speed in tokens per ms: what first tokens showed, blended with
   * `priorPerMs` as if it had been seen for {@link PREFILL_PRIOR_MS}. O(1).
   */
  prefillSpeed(priorPerMs: number): number {
    return (this.#speedTokens + priorPerMs * PREFILL_PRIOR_MS) / (this.#speedMs + PREFILL_PRIOR_MS);
  }

  /** Forgets what first tokens showed of the prefill speed (the engine restarted). O(1). */
  forgetPrefillSpeed(): void {
    this.#speedTokens = 0;
    this.#speedMs = 0;
  }

  /** The groups this worker belongs to (set by the registry's index). */
  get counters(): readonly LoadCounter[] {
    return this.#counters;
  }

  set counters(counters: readonly LoadCounter[]) {
    // Other routers' requests move with the worker from its old groups' totals to its new ones.
    const remote = this.#remote;
    if (remote !== 0) {
      const previous = this.#counters;
      for (let i = 0; i < previous.length; i++)
        previous[i]!.inFlight = Math.max(previous[i]!.inFlight - remote, 0);
      for (let i = 0; i < counters.length; i++) counters[i]!.inFlight += remote;
    }
    this.#counters = counters;
    this.#resync();
  }

  /** Whether the breaker admits a request: the mirror first, the breaker only when not closed. */
  canExecute(): boolean {
    return this.#breakerClosed || this.#breaker.canExecute();
  }

  /**
   * Moves this worker to its current level in its current groups' load histograms, and moves
   * the version of every group whose set of available or of ready workers changed (this worker
   * became available or unavailable, ready or not, or joined or left the group).
   */
  #resync(): void {
    const routable = this.routable;
    const available = routable && this.#breakerClosed;
    const level = available ? this.#load + this.#remote : -1;
    const prefillLevel = available ? this.#prefilling + this.#remotePrefilling : -1;
    const groups = this.#counters;
    const before = this.#histLevel;
    const prefillBefore = this.#prefillLevel;
    const previous = this.#histGroups;
    if (
      level === before &&
      prefillLevel === prefillBefore &&
      groups === previous &&
      routable === this.#histRoutable
    )
      return;
    const moved = groups !== previous;
    if (level !== before || moved) {
      if (before >= 0)
        for (let i = 0; i < previous.length; i++) previous[i]!.histogram.remove(before);
      if (level >= 0) for (let i = 0; i < groups.length; i++) groups[i]!.histogram.add(level);
    }
    if (prefillLevel !== prefillBefore || moved) {
      if (prefillBefore >= 0)
        for (let i = 0; i < previous.length; i++)
          previous[i]!.prefillHistogram.remove(prefillBefore);
      if (prefillLevel >= 0)
        for (let i = 0; i < groups.length; i++) groups[i]!.prefillHistogram.add(prefillLevel);
    }
    if (moved) {
      for (let i = 0; i < previous.length; i++) previous[i]!.version++;
      for (let i = 0; i < groups.length; i++) groups[i]!.version++;
    } else if (before < 0 !== level < 0 || routable !== this.#histRoutable) {
      for (let i = 0; i < groups.length; i++) groups[i]!.version++;
    }
    this.#histLevel = level;
    this.#prefillLevel = prefillLevel;
    this.#histGroups = groups;
    this.#histRoutable = routable;
  }
}
