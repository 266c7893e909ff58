/**
 * `Worker`: one model-server instance as the registry hands it out, and `WorkerLease`, one
 * request in flight on it (one file: each names the other).
 *
 * @module
 */
import { inspect } from 'node:util';
import type { CircuitBreaker, CircuitBreakerSnapshot } from '../resilience/circuit-breaker.js';
import type { CircuitBreakerConfig } from '../resilience/circuit-breaker-config.js';
import type { HealthConfig } from '../resilience/health-config.js';
import { type LeaseOutcome, LeaseState } from './lease-state.js';
import type { LoadCounter } from './load-counter.js';
import type { WorkerRuntime } from './worker-runtime.js';
import type { ResolvedWorkerSpec, RuntimeType, WorkerStatus, WorkerType } from './worker-spec.js';
import type { ConnectionMode } from './worker-url.js';

/**
 * Node's `util.inspect.custom` (a registered symbol). Named here rather than read from
 * `node:util` so the published declarations do not need `@types/node`.
 */
const INSPECT_CUSTOM = Symbol.for('nodejs.util.inspect.custom');

/**
 * The per-worker values a policy reads, gathered in one call so a policy touches each candidate
 * once per selection. Pass the same object to {@link Worker.routingState} on every call to read
 * without allocating.
 *
 * @public
 */
export interface RoutingState {
  /** The worker is live and `ready`. */
  healthy: boolean;
  /** The worker's circuit breaker admits a request now. */
  canExecute: boolean;
  /** Requests in flight (leases not yet released). */
  load: number;
  /** Requests ever selected. */
  processed: number;
  /**
   * Requests in flight awaiting their first token ({@link Worker.prefilling}); written by
   * {@link Worker.routingState}, which adds it to an `into` object that lacks it.
   */
  prefilling?: number;
}

/**
 * A plain-data copy of a worker, safe to serialise: no secret, no live object.
 *
 * @public
 */
export interface WorkerInfo {
  readonly id: string;
  readonly url: string;
  readonly baseUrl: string;
  readonly models: readonly string[];
  readonly type: WorkerType;
  readonly connection: ConnectionMode;
  readonly runtime: RuntimeType;
  readonly labels: Readonly<Record<string, string>>;
  readonly bootstrapPort?: number;
  readonly dpRank?: number;
  readonly dpSize?: number;
  readonly status: WorkerStatus;
  readonly revision: number;
  readonly load: number;
  readonly processed: number;
  readonly live: boolean;
  readonly circuitBreaker: CircuitBreakerSnapshot;
}

/** @internal What {@link workerInternals} offers. */
export interface WorkerInternals {
  /** A new worker object (a registration, or a new revision sharing `runtime`). */
  create(id: string, revision: number, spec: ResolvedWorkerSpec, runtime: WorkerRuntime): Worker;
  /** The resolved spec this revision was built from. */
  specOf(worker: Worker): ResolvedWorkerSpec;
  /** The runtime shared across revisions. */
  runtimeOf(worker: Worker): WorkerRuntime;
  /**
   * The registry-wide load group of the worker (its registry's: every worker's first group), or
   * `undefined` before it joined one. Not a routing-state read.
   */
  registryGroupOf(worker: Worker): LoadCounter | undefined;
}

function unset(): never {
  throw new Error('workerInternals used before the Worker class was defined');
}

/**
 * @internal Privileged access to a worker's resolved spec and shared runtime, for the layers
 * that own them (the registry mutates the runtime; candidate reads and leases read it). Not part
 * of the public API: a caller that sets `routable` by hand would bypass the registry. An object
 * rather than bare functions so tests can count the reads.
 */
export const workerInternals: WorkerInternals = {
  // Filled in by the `Worker` class's static block, which alone can reach the private fields.
  create: unset,
  specOf: unset,
  runtimeOf: unset,
  registryGroupOf: unset,
};

/**
 * One model-server worker. Read-only to callers except for the documented counters
 * ({@link Worker.acquire}, {@link Worker.incrementProcessed}) and its
 * {@link Worker.circuitBreaker}. Each `replace` creates a new `Worker` object (new
 * `revision`) that shares status, counters and breaker with the previous one; the old object
 * keeps its old spec.
 *
 * @public
 */
export class Worker {
  readonly #id: string;
  readonly #revision: number;
  readonly #spec: ResolvedWorkerSpec;
  readonly #modelSet: ReadonlySet<string>;
  readonly #runtime: WorkerRuntime;

  /** Workers are created by the registry. */
  private constructor(
    id: string,
    revision: number,
    spec: ResolvedWorkerSpec,
    runtime: WorkerRuntime,
  ) {
    this.#id = id;
    this.#revision = revision;
    this.#spec = spec;
    this.#modelSet = new Set(spec.models);
    this.#runtime = runtime;
  }

  /** Stable id, kept across same-URL replaces. */
  get id(): string {
    return this.#id;
  }
  /** Normalised URL, with the `@rank` suffix when the worker is a data-parallel rank. */
  get url(): string {
    return this.#spec.url;
  }
  /**
   * Normalised URL without the `@rank` suffix: where the engine is reached — the transport's
   * probes and polls, and the requests your code sends.
   */
  get baseUrl(): string {
    return this.#spec.baseUrl;
  }
  /** Model ids served (frozen). Empty: a wildcard worker that serves any model. */
  get models(): readonly string[] {
    return this.#spec.models;
  }
  /** `true` when the worker serves any model. */
  get isWildcard(): boolean {
    return this.#spec.models.length === 0;
  }
  /** Role: `regular`, `prefill` or `decode`. */
  get type(): WorkerType {
    return this.#spec.type;
  }
  /** `http` or `grpc`, from the URL scheme. */
  get connection(): ConnectionMode {
    return this.#spec.connection;
  }
  /** Engine behind the worker (`vllm`, `sglang`, `trtllm`, `unspecified`). */
  get runtime(): RuntimeType {
    return this.#spec.runtime;
  }
  /** Frozen labels. */
  get labels(): Readonly<Record<string, string>> {
    return this.#spec.labels;
  }
  /** Bootstrap port of a prefill worker, if set. */
  get bootstrapPort(): number | undefined {
    return this.#spec.bootstrapPort;
  }
  /** Data-parallel rank, if set. */
  get dpRank(): number | undefined {
    return this.#spec.dpRank;
  }
  /** Data-parallel world size, if set. */
  get dpSize(): number | undefined {
    return this.#spec.dpSize;
  }
  /** The worker's secret for transports. Not part of `toJSON()`, events' JSON or `inspect`. */
  get apiKey(): string | undefined {
    return this.#spec.apiKey;
  }
  /** Per-worker health overrides as given at registration. */
  get health(): HealthConfig | undefined {
    return this.#spec.health;
  }
  /** Per-worker breaker overrides as given at registration. */
  get circuitBreakerConfig(): CircuitBreakerConfig | undefined {
    return this.#spec.circuitBreaker;
  }
  /** 0 at registration, +1 on every `replace`. */
  get revision(): number {
    return this.#revision;
  }
  /** Current status (shared by all revisions of this id). */
  get status(): WorkerStatus {
    return this.#runtime.status;
  }
  /**
   * Requests in flight: leases taken and not yet released — with a router's shared state, other
   * routers' leases on this worker too, as of their last sync. Never negative.
   */
  get load(): number {
    return this.#runtime.load;
  }
  /**
   * Requests in flight that have not produced their first token yet: queued on the worker or in
   * prefill. A lease counts here from `acquire()` until {@link WorkerLease.firstToken} or its
   * release, whichever comes first, so it equals {@link Worker.load} for callers that never mark
   * first tokens. Load-aware policies read it to tell a worker busy prefilling (a new request
   * waits behind that prefill) from one that is only decoding. Never negative. O(1).
   */
  get prefilling(): number {
    return this.#runtime.prefilling;
  }
  /** Requests ever selected for this worker. */
  get processed(): number {
    return this.#runtime.processed;
  }
  /** `false` once the worker has been removed from its registry. */
  get live(): boolean {
    return this.#runtime.live;
  }
  /** The worker's circuit breaker (shared by all revisions unless a replace changed its config). */
  get circuitBreaker(): CircuitBreaker {
    return this.#runtime.breaker;
  }

  /** Whether the worker serves `model`. O(1). */
  serves(model: string): boolean {
    return this.#spec.models.length === 0 || this.#modelSet.has(model);
  }

  /** Live, `ready`, and its breaker admits a request. O(1). */
  isAvailable(): boolean {
    const rt = this.#runtime;
    return rt.routable && rt.canExecute();
  }

  /**
   * Reads every routing value in one call into `into` (reused when given, so no allocation).
   *
   * @returns `into`, filled in.
   */
  routingState(
    into: RoutingState = {
      healthy: false,
      canExecute: false,
      load: 0,
      processed: 0,
      prefilling: 0,
    },
  ): RoutingState {
    const rt = this.#runtime;
    into.healthy = rt.routable;
    into.canExecute = rt.canExecute();
    into.load = rt.load;
    into.processed = rt.processed;
    into.prefilling = rt.prefilling;
    return into;
  }

  /**
   * Takes a lease: `load` goes up by one now and down by one when the lease is released
   * (exactly once). In a half-open breaker the lease occupies a trial slot.
   *
   * @returns the lease; call `release(outcome?)` when the request ends.
   */
  acquire(): WorkerLease {
    const rt = this.#runtime;
    rt.addLoad(1, 1);
    const counters = rt.counters;
    for (let i = 0; i < counters.length; i++) counters[i]!.inFlight++;
    const breaker = rt.breaker;
    return newLease(
      this,
      new LeaseState(rt, counters, breaker, breaker.onAcquire(), this.#spec.url),
    );
  }

  /** Counts one more request selected for this worker. Policies call it on every pick. O(1). */
  incrementProcessed(): void {
    this.#runtime.processed++;
  }

  /** A plain-data copy without the secret. */
  toJSON(): WorkerInfo {
    const s = this.#spec;
    const rt = this.#runtime;
    return {
      id: this.#id,
      url: s.url,
      baseUrl: s.baseUrl,
      models: s.models,
      type: s.type,
      connection: s.connection,
      runtime: s.runtime,
      labels: s.labels,
      ...(s.bootstrapPort === undefined ? {} : { bootstrapPort: s.bootstrapPort }),
      ...(s.dpRank === undefined ? {} : { dpRank: s.dpRank }),
      ...(s.dpSize === undefined ? {} : { dpSize: s.dpSize }),
      status: rt.status,
      revision: this.#revision,
      load: rt.load,
      processed: rt.processed,
      live: rt.live,
      circuitBreaker: rt.breaker.snapshot(),
    };
  }

  /** @internal How `console.log` shows a worker: its JSON, never the secret. */
  [INSPECT_CUSTOM](): string {
    return `Worker ${inspect(this.toJSON(), { depth: 3 })}`;
  }

  static {
    // The registry, the policies' candidate reads and the router reach a worker's spec and
    // runtime through `workerInternals` (below), never through the public class.
    workerInternals.create = (id, revision, spec, runtime) =>
      new Worker(id, revision, spec, runtime);
    workerInternals.specOf = (worker) => worker.#spec;
    workerInternals.runtimeOf = (worker) => worker.#runtime;
    workerInternals.registryGroupOf = (worker) => worker.#runtime.counters[0];
  }
}

// Set by the `WorkerLease` class's static block.
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
   * Marks the request's first output token as received (for a streaming response: its first
   * chunk of generated text): the worker's {@link Worker.prefilling} goes down by one, while
   * `load` stays up until `release`. Optional — a lease never marked leaves `prefilling` at
   * `release` — but it lets `least_load`, `power_of_two` and `bucket` see which workers are busy
   * prefilling, which decides time to first token under load. O(1).
   *
   * @returns `true` the first time, `false` on every later call and after `release` (which do
   *   nothing).
   */
  firstToken(): boolean {
    return this.#state.firstToken();
  }

  /**
   * Ends the lease: the worker's `load` goes down by one (and its `prefilling`, unless
   * {@link WorkerLease.firstToken} was called), and the outcome, if given, is recorded in its
   * circuit breaker. O(1).
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

/** @internal The lease's undo record (leak tracking by the router's finaliser). */
export function leaseStateOf(lease: WorkerLease): LeaseState {
  return stateOfLease(lease);
}

/**
 * @internal Charges `lease`'s worker with `tokens` of predicted uncached prompt (its
 * `prefillTokens`, until the first token or release), with `ahead` tokens of prefill predicted
 * before it; with a clock, the first token's time feeds the worker's prefill speed. At most once
 * per lease, before its first token. O(1). @returns whether it charged.
 */
export function chargePrefill(
  lease: WorkerLease,
  tokens: number,
  ahead: number,
  clock?: () => number,
  priorPerMs?: number,
): boolean {
  return stateOfLease(lease).charge(tokens, ahead, clock, priorPerMs);
}
