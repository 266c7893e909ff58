/**
 * The registry's breaker bookkeeping: the defaults every worker's breaker starts from, one breaker
 * per worker, and the swap when a worker's resolved settings change.
 *
 * @module
 * @internal
 */
import { type CircuitBreaker, createCircuitBreaker } from '../resilience/circuit-breaker.js';
import {
  type ResolvedCircuitBreakerConfig,
  resolveCircuitBreakerConfig,
  sameCircuitBreakerConfig,
} from '../resilience/circuit-breaker-config.js';
import type { Clock } from '../resilience/clock.js';
import type { WorkerRuntime } from '../workers/worker-runtime.js';
import type { ResolvedWorkerSpec } from '../workers/worker-spec.js';

/** @internal */
export class WorkerBreakers {
  #defaults: ResolvedCircuitBreakerConfig;
  readonly #clock: Clock;
  /** The open routers that wrote the defaults (see {@link WorkerBreakers.claim}). */
  readonly #owners = new Set<object>();

  constructor(defaults: ResolvedCircuitBreakerConfig, clock: Clock) {
    this.#defaults = defaults;
    this.#clock = clock;
  }

  /**
   * The current defaults while some owner holds a claim on them, else `undefined`: what a new
   * owner must agree with. Read from the defaults themselves, not from a copy taken at claim
   * time, so a direct `setCircuitBreakerDefaults` meanwhile is what counts.
   */
  get claimed(): ResolvedCircuitBreakerConfig | undefined {
    return this.#owners.size === 0 ? undefined : this.#defaults;
  }

  /** Takes new, already resolved defaults (the caller refreshes the workers' breakers). */
  setDefaults(config: ResolvedCircuitBreakerConfig): void {
    this.#defaults = config;
  }

  /** Takes new defaults, as {@link WorkerBreakers.setDefaults}, and records `owner` as holding them. */
  claim(owner: object, config: ResolvedCircuitBreakerConfig): void {
    this.setDefaults(config);
    this.#owners.add(owner);
  }

  /** `owner` gives up its claim; the defaults stay as they are. Idempotent. */
  release(owner: object): void {
    this.#owners.delete(owner);
  }

  /** A new, closed breaker for a worker with this spec (its overrides over the defaults). */
  create(spec: ResolvedWorkerSpec): CircuitBreaker {
    return createCircuitBreaker(this.configFor(spec), this.#clock);
  }

  /**
   * Brings a worker's breaker in line with `spec` (after a replace or new defaults): a new,
   * closed breaker when the resolved settings differ. It keeps the old one's observers, so every
   * router's `circuitChanged` keeps following the worker, and they are told of the change of
   * state (open → closed) once the new breaker is in place.
   */
  refresh(runtime: WorkerRuntime, spec: ResolvedWorkerSpec): void {
    const config = this.configFor(spec);
    if (sameCircuitBreakerConfig(runtime.breaker.config, config)) return;
    const previous = runtime.breaker;
    const next = createCircuitBreaker(config, this.#clock);
    runtime.breaker = next;
    next.succeed(previous);
  }

  /** The spec's breaker overrides over the defaults. */
  configFor(spec: ResolvedWorkerSpec): ResolvedCircuitBreakerConfig {
    return spec.circuitBreaker === undefined
      ? this.#defaults
      : resolveCircuitBreakerConfig(spec.circuitBreaker, 'spec.circuitBreaker', this.#defaults);
  }
}
