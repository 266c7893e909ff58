/**
 * `WorkerRegistry`: the live set of workers, its indexes and hash rings, and its event stream.
 *
 * @module
 */
import { FleetRouteError } from '../core/errors.js';
import { Hasher, loadHasher } from '../core/hash.js';
import { describe, fail, readEnum, readString } from '../core/options.js';
import {
  type CircuitBreakerConfig,
  type ResolvedCircuitBreakerConfig,
  resolveCircuitBreakerConfig,
} from '../resilience/circuit-breaker-config.js';
import { type RetryConfig, resolveRetryConfig } from '../resilience/retry-config.js';
import type { HashRing } from '../ring/hash-ring.js';
import type { Worker } from '../workers/worker.js';
import {
  isWildcardModel,
  MAX_MODEL_ID_LENGTH,
  resolveWorkerSpec,
  WORKER_STATUSES,
  WORKER_TYPES,
  type WorkerSpec,
  type WorkerStatus,
  type WorkerType,
} from '../workers/worker-spec.js';
import {
  type ConnectionMode,
  normalisedUrlOrUndefined,
  parseWorkerUrl,
} from '../workers/worker-url.js';
import { EventHub, type StreamItem } from './event-hub.js';
import {
  checkRevision,
  type EventsOptions,
  type RegisterOrReplaceResult,
  type RegistrySnapshot,
  type RegistryStats,
  type RevisionOptions,
  readExpectedRevision,
  readTransitionOptions,
  resolveRegistryOptions,
  type StatusTransition,
  type TransitionOptions,
  type WorkerRegistryOptions,
} from './registry-options.js';
import { RegistryState } from './registry-state.js';
import { type LockHooks, UrlLocks } from './url-locks.js';
import { WorkerBreakers } from './worker-breakers.js';
import type { WorkerEvent, WorkerEventMap } from './worker-event.js';
import { WorkerIndex } from './worker-index.js';

// Set by the class's static block; used by `createRegistryWithHooks`.
let newRegistry: (
  hasher: Hasher,
  options: WorkerRegistryOptions | undefined,
  hooks: LockHooks | undefined,
) => WorkerRegistry;

/** @internal What {@link registryInternals} offers: the routers' claims on the breaker defaults. */
export interface RegistryInternals {
  /**
   * @returns the registry's current breaker defaults while an open router holds a claim on them
   *   (what a new router's `circuitBreaker` option must equal), else `undefined`. O(1).
   */
  claimedBreakerDefaults(registry: WorkerRegistry): ResolvedCircuitBreakerConfig | undefined;
  /**
   * Writes `config` as the breaker defaults, as {@link WorkerRegistry.setCircuitBreakerDefaults}
   * does (without resolving it again), and records `owner` as a router holding them.
   * @throws {@link FleetRouteError} `CLOSED` (and records nothing). Cost: O(n).
   */
  claimBreakerDefaults(
    registry: WorkerRegistry,
    owner: object,
    config: ResolvedCircuitBreakerConfig,
  ): void;
  /** `owner` (a closed router) gives up its claim; the defaults stay as they are. O(1). */
  releaseBreakerDefaults(registry: WorkerRegistry, owner: object): void;
  /**
   * Calls `listener` whenever a worker's in-flight or prefilling count falls (room may have
   * freed), synchronously, from inside the release. @returns a function that stops it. O(1).
   */
  onRoomFreed(registry: WorkerRegistry, listener: () => void): () => void;
}

function unset(): never {
  throw new Error('registryInternals used before the WorkerRegistry class was defined');
}

/**
 * @internal Privileged access to the registry's breaker bookkeeping for the routers on it, which
 * share the defaults (breakers belong to the workers). Not part of the public API.
 */
export const registryInternals: RegistryInternals = {
  // Filled in by the class's static block, which alone can reach the private fields.
  claimedBreakerDefaults: unset,
  claimBreakerDefaults: unset,
  releaseBreakerDefaults: unset,
  onRoomFreed: unset,
};

/**
 * The live set of workers.
 *
 * Every mutation is `async` and serialised per worker URL (different URLs interleave); it
 * validates its input completely before changing anything, and emits exactly one
 * {@link WorkerEvent} on success and none on failure or no-op. Every read is synchronous; the
 * collection reads return cached read-only arrays that keep their identity until their membership
 * changes, so they allocate nothing. Never mutate them: they are shared (and not frozen, because
 * a frozen array is about four times slower to walk on Node 20).
 *
 * @example
 * ```ts
 * const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
 * registry.on('event', (e) => console.log(e.type, e.workerId));
 * await registry.register({ url: 'http://10.0.0.1:8000', models: ['llama-3-8b'] });
 * registry.getByModel('llama-3-8b'); // [Worker]
 * registry.getHashRing('llama-3-8b').find('session-1');
 * ```
 * @public
 */
export class WorkerRegistry {
  // Lock order: a mutation takes exactly one URL lock and never another while holding it.
  readonly #locks: UrlLocks;
  /** What the mutations change, under their lock; `#index` and `#hub` are its own, for reads. */
  readonly #state: RegistryState;
  readonly #index: WorkerIndex;
  readonly #hub: EventHub;
  #closed = false;

  // ─── 1. Construction & subscription ─────────────────────────────────────────────────────

  /** Use {@link WorkerRegistry.create}; `new WorkerRegistry()` from JavaScript is `INVALID_ARGUMENT`. */
  private constructor(hasher: Hasher, options: WorkerRegistryOptions = {}, lockHooks?: LockHooks) {
    if (!(hasher instanceof Hasher)) {
      throw new FleetRouteError(
        'INVALID_ARGUMENT',
        'a WorkerRegistry is created with `await WorkerRegistry.create(options)`, not `new`',
      );
    }
    const o = resolveRegistryOptions(options);
    this.#locks = new UrlLocks(lockHooks);
    this.#hub = new EventHub(o.eventBufferSize, o.onListenerError);
    this.#index = new WorkerIndex(hasher, o.virtualNodes);
    const breakers = new WorkerBreakers(o.circuitBreaker, o.clock);
    this.#state = new RegistryState(this.#index, this.#hub, breakers, o.defaultStatus);
  }

  static {
    newRegistry = (hasher, options, hooks) => new WorkerRegistry(hasher, options, hooks);
    registryInternals.claimedBreakerDefaults = (registry) => registry.#state.breakers.claimed;
    registryInternals.claimBreakerDefaults = (registry, owner, config) => {
      registry.#assertOpen();
      registry.#state.breakers.claim(owner, config);
      registry.#state.refreshBreakers();
    };
    registryInternals.releaseBreakerDefaults = (registry, owner) =>
      registry.#state.breakers.release(owner);
    registryInternals.onRoomFreed = (registry, listener) => registry.#index.room.add(listener);
  }

  /**
   * Creates a registry. Async because the hash function is WebAssembly, loaded once per process.
   *
   * @throws {@link FleetRouteError} `INVALID_ARGUMENT` naming the first bad option.
   */
  static async create(options: WorkerRegistryOptions = {}): Promise<WorkerRegistry> {
    resolveRegistryOptions(options);
    const hasher = await loadHasher();
    return new WorkerRegistry(hasher, options);
  }

  /**
   * Adds a listener for every event (`'event'`) or one event type. Listeners run synchronously
   * inside the mutation, in the order added; one that throws is reported through
   * `onListenerError` and cannot affect the registry or the other listeners.
   *
   * @returns `this`. Emits: nothing. Cost: O(1).
   * @throws {@link FleetRouteError} `INVALID_ARGUMENT` for an unknown event type or a listener
   *   that is not a function.
   */
  on<K extends keyof WorkerEventMap>(type: K, listener: WorkerEventMap[K]): this {
    this.#hub.on(type, listener);
    return this;
  }

  /** Like {@link WorkerRegistry.on}, for one event only. @returns `this`. */
  once<K extends keyof WorkerEventMap>(type: K, listener: WorkerEventMap[K]): this {
    this.#hub.once(type, listener);
    return this;
  }

  /** Removes a listener added with `on` or `once`. @returns `this`. */
  off<K extends keyof WorkerEventMap>(type: K, listener: WorkerEventMap[K]): this {
    this.#hub.off(type, listener);
    return this;
  }

  /**
   * Subscribes with a bounded buffer: a consumer more than `bufferSize` events behind loses the
   * oldest and reads `{ type: 'lagged', missed }` first. A late subscriber subscribes, then takes
   * {@link WorkerRegistry.snapshot} and skips events with `seq` ≤ `snapshot.seq` (and so after a
   * `lagged` item). It ends when `signal` aborts, the loop breaks, or the registry closes.
   *
   * @returns an async iterator of {@link WorkerEvent} and {@link LaggedEvent}.
   * @throws {@link FleetRouteError} `INVALID_ARGUMENT` for a bad `bufferSize` or `signal`;
   *   `CLOSED` when the registry is closed.
   */
  events(options: EventsOptions = {}): AsyncIterableIterator<StreamItem> {
    const subscribe = this.#hub.prepareStream(options);
    this.#assertOpen();
    return subscribe();
  }

  /**
   * Stops the registry: every later mutation fails with `CLOSED`, event iterators end after
   * their buffered events, and listeners are removed. Reads keep working. Idempotent.
   */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#hub.close();
  }

  // ─── 2. Read: single worker ────────────────────────────────────────────────────────────

  /** @returns the live worker with this id, or `undefined`. O(1), no allocation. */
  get(id: string): Worker | undefined {
    return typeof id === 'string' ? this.#index.get(id) : undefined;
  }

  /**
   * @param url - as registered, or any spelling that normalises to it (`host:port`, upper case…);
   *   the exact normalised form is the O(1) fast path.
   * @returns the live worker with this URL, or `undefined` (also for an invalid URL).
   */
  getByUrl(url: string): Worker | undefined {
    const id = this.getIdByUrl(url);
    return id === undefined ? undefined : this.#index.get(id);
  }

  /**
   * @returns the id of the live worker with this URL; else the id reserved for it with
   *   {@link WorkerRegistry.reserveIdForUrl}; else `undefined`. O(1) for a normalised URL.
   */
  getIdByUrl(url: string): string | undefined {
    if (typeof url !== 'string') return undefined;
    const id = this.#state.idOf(url);
    if (id !== undefined) return id;
    const normalised = normalisedUrlOrUndefined(url);
    return normalised === undefined || normalised === url
      ? undefined
      : this.#state.idOf(normalised);
  }

  /**
   * The hash ring for `model`: over the workers that serve it (naming it, or wildcard). With no
   * model, `''` or `'*'`, the wildcard ring over every worker. When the registry serves one
   * model, its ring and the wildcard ring are the same object. Built on the first call after a
   * membership change (O(n · virtualNodes) then, reusing each URL's cached points); O(1) after.
   *
   * @returns a ring, empty when no worker serves `model`.
   */
  getHashRing(model?: string): HashRing {
    return this.#index.ring(isWildcardModel(model) ? undefined : (model as string));
  }

  // ─── 3. Read: collections ──────────────────────────────────────────────────────────────

  /**
   * Workers that serve `model` (those naming it, then wildcard workers); every worker when
   * `model` is absent, `''` or `'*'`. An unknown model gets the wildcard workers only. Every
   * worker type is listed unless `type` is given: then only the workers of that type.
   *
   * @returns a shared read-only array, the same object until that model's membership changes.
   *   O(1) when cached, no allocation (a `type` list is filtered once per membership).
   * @throws {@link FleetRouteError} `INVALID_ARGUMENT` for a `type` that is no worker type.
   */
  getByModel(model?: string, type?: WorkerType): readonly Worker[] {
    const m = isWildcardModel(model) ? undefined : (model as string);
    if (type === undefined) return m === undefined ? this.#index.all() : this.#index.byModel(m);
    if (!WORKER_TYPES.includes(type)) fail('type', `one of ${WORKER_TYPES.join(', ')}`, type);
    return this.#index.byModelAndType(m, type);
  }

  /** @returns the workers of one type (shared, cached). */
  getByType(type: WorkerType): readonly Worker[] {
    if (!WORKER_TYPES.includes(type)) fail('type', `one of ${WORKER_TYPES.join(', ')}`, type);
    return this.#index.byType(type);
  }

  /** @returns the workers reached over one connection mode (shared, cached). */
  getByConnection(connection: ConnectionMode): readonly Worker[] {
    if (connection !== 'http' && connection !== 'grpc')
      fail('connection', "'http' or 'grpc'", connection);
    return this.#index.byConnection(connection);
  }

  /** @returns the prefill workers (shared, cached). */
  getPrefillWorkers(): readonly Worker[] {
    return this.#index.byType('prefill');
  }

  /** @returns the decode workers (shared, cached). */
  getDecodeWorkers(): readonly Worker[] {
    return this.#index.byType('decode');
  }

  /** @returns every live worker in registration order (shared, cached). */
  getAll(): readonly Worker[] {
    return this.#index.all();
  }

  /** @returns the explicitly served model ids, sorted (frozen, cached). */
  getModels(): readonly string[] {
    return this.#index.models();
  }

  /** Number of live workers. O(1). */
  get size(): number {
    return this.#index.size;
  }

  /** @returns counts by status, type and connection, and event/subscriber counters. O(n). */
  stats(): RegistryStats {
    return {
      ...this.#index.counts(),
      reservations: this.#state.reservations,
      eventsEmitted: this.#hub.seq,
      listenerErrors: this.#hub.listenerErrors,
      subscribers: this.#hub.subscribers,
      ringsBuilt: this.#index.ringsBuilt,
      closed: this.#closed,
    };
  }

  /**
   * A plain-data copy of the registry for late subscribers and debugging: no live objects, no
   * secrets. `seq` is the last event it reflects. O(n).
   */
  snapshot(): RegistrySnapshot {
    return {
      seq: this.#hub.seq,
      workers: this.#index.all().map((w) => w.toJSON()),
      models: this.#index.explicitMembers(),
      retryConfigs: this.#state.retryConfigs.toObject(),
    };
  }

  // ─── 4. Read: config ───────────────────────────────────────────────────────────────────

  /**
   * @returns the retry override set for `model` with {@link WorkerRegistry.setModelRetryConfig}
   *   (the fields given there, frozen; a router fills the others from its own `retry` option),
   *   or `undefined`. O(1).
   */
  getRetryConfig(model: string): RetryConfig | undefined {
    return this.#state.retryConfigs.get(model);
  }

  // ─── 5. Write: mutation primitives ─────────────────────────────────────────────────────
  // Rule for every method here: validate all input first, then take the URL's lock, re-check
  // what the lock may have changed, mutate, and emit exactly one event before releasing the
  // lock. A failed or no-op call emits nothing and changes nothing. New mutations MUST do the same.

  /**
   * Registers a new worker under a fresh id (or the id reserved for its URL).
   *
   * @returns the new worker, at revision 0.
   * @throws {@link FleetRouteError} `INVALID_URL` / `INVALID_ARGUMENT` for a bad spec,
   *   `DUPLICATE_URL` when a live worker has the URL, `CLOSED` after `close()`.
   *
   * Emits: `registered`. Locks: the URL's. Cost: O(models) plus lazy invalidation.
   */
  async register(spec: WorkerSpec): Promise<Worker> {
    this.#assertOpen();
    const resolved = resolveWorkerSpec(spec);
    return this.#locks.run(resolved.url, () => {
      this.#assertOpen();
      if (this.#index.idByUrl(resolved.url) !== undefined) {
        throw new FleetRouteError('DUPLICATE_URL', `a live worker already has URL ${resolved.url}`);
      }
      return this.#state.register(resolved);
    });
  }

  /**
   * Registers the worker, or replaces the live worker with the same URL (as
   * {@link WorkerRegistry.replace} would, keeping its id, status and counters).
   *
   * @returns the worker and whether it replaced one.
   * @throws {@link FleetRouteError} `INVALID_URL` / `INVALID_ARGUMENT`, `CLOSED`.
   *
   * Emits: `registered` or `replaced`. Locks: the URL's.
   */
  async registerOrReplace(spec: WorkerSpec): Promise<RegisterOrReplaceResult> {
    this.#assertOpen();
    const resolved = resolveWorkerSpec(spec);
    return this.#locks.run(resolved.url, () => {
      this.#assertOpen();
      const id = this.#index.idByUrl(resolved.url);
      const current = id === undefined ? undefined : this.#index.get(id);
      if (current === undefined) return { worker: this.#state.register(resolved), replaced: false };
      return { worker: this.#state.replace(current, resolved), replaced: true };
    });
  }

  /**
   * Replaces a worker's spec. The URL must stay the same. Keeps id, status, load, processed and
   * the circuit breaker (a new breaker when the breaker config changed); bumps `revision`;
   * re-indexes models, type and connection. Retry overrides of models the worker was the last
   * to serve are dropped.
   *
   * @returns the new revision's worker object.
   * @throws {@link FleetRouteError} `NOT_FOUND` for an unknown id, `URL_CHANGED`,
   *   `STALE_REVISION` when `expectedRevision` does not match, `INVALID_URL` /
   *   `INVALID_ARGUMENT`, `CLOSED`.
   *
   * Emits: `replaced`. Locks: the URL's.
   */
  async replace(id: string, spec: WorkerSpec, options: RevisionOptions = {}): Promise<Worker> {
    this.#assertOpen();
    const expected = readExpectedRevision(options);
    const resolved = resolveWorkerSpec(spec);
    const url = this.#liveOrThrow(id).url;
    if (resolved.url !== url) {
      throw new FleetRouteError(
        'URL_CHANGED',
        `worker ${id} has URL ${url}; the replacement has ${resolved.url}`,
      );
    }
    return this.#locks.run(url, () => {
      this.#assertOpen();
      const current = this.#liveOrThrow(id);
      checkRevision(current, expected);
      return this.#state.replace(current, resolved);
    });
  }

  /**
   * Sets a worker's status. A pure primitive: any transition is allowed; the caller (the router's
   * health loop) owns the state machine.
   *
   * @returns `{ from, to }`, or `undefined` when the worker already had that status, or when
   *   `expectedStatus` is given and the status is another (no event either way).
   * @throws {@link FleetRouteError} `NOT_FOUND`, `STALE_REVISION`, `INVALID_ARGUMENT` for an
   *   unknown status, `CLOSED`.
   *
   * Emits: `statusChanged` when the status changes. Locks: the URL's.
   */
  async transitionStatus(
    id: string,
    status: WorkerStatus,
    options: TransitionOptions = {},
  ): Promise<StatusTransition | undefined> {
    this.#assertOpen();
    if (status === undefined) fail('status', 'a worker status', status);
    const to = readEnum('status', status, WORKER_STATUSES, 'pending');
    const { expectedRevision, expectedStatus: onlyFrom } = readTransitionOptions(options);
    const url = this.#liveOrThrow(id).url;
    return this.#locks.run(url, () => {
      this.#assertOpen();
      const worker = this.#liveOrThrow(id);
      checkRevision(worker, expectedRevision);
      return this.#state.setStatus(worker, to, onlyFrom);
    });
  }

  // ─── 6. Update: config (no event) ──────────────────────────────────────────────────────

  /**
   * Replaces the breaker settings every worker starts from (under its own `circuitBreaker`
   * overrides), for current and future workers. A worker whose resolved settings change gets a
   * new, closed breaker; the others keep theirs. The registry owns these defaults: a router's
   * `circuitBreaker` option is written here, and every router on the registry keeps observing
   * every worker's breaker across the swap (an open breaker that is swapped reports open →
   * closed through each router's `circuitChanged`).
   *
   * @throws {@link FleetRouteError} `INVALID_ARGUMENT` naming a bad field, `CLOSED`.
   *
   * Emits: nothing. Locks: none (synchronous). Cost: O(n).
   */
  setCircuitBreakerDefaults(config: CircuitBreakerConfig | ResolvedCircuitBreakerConfig): void {
    this.#assertOpen();
    this.#state.breakers.setDefaults(resolveCircuitBreakerConfig(config, 'circuitBreaker'));
    this.#state.refreshBreakers();
  }

  /**
   * Sets the retry override for a model that live workers name explicitly: the fields given win
   * over the router's `retry` option for requests to this model; the others come from it. It
   * is dropped when the model's last worker leaves (by `remove` or by a `replace` that drops the
   * model).
   *
   * @throws {@link FleetRouteError} `NOT_FOUND` when no live worker names `model`,
   *   `INVALID_ARGUMENT` for a bad config.
   *
   * Emits: nothing. Locks: none (synchronous). Cost: O(1).
   */
  setModelRetryConfig(model: string, config: RetryConfig): void {
    this.#assertOpen();
    const id = readString('model', model, MAX_MODEL_ID_LENGTH);
    if (!this.#index.hasModel(id)) {
      resolveRetryConfig(config, 'config'); // a bad config is reported first
      throw new FleetRouteError('NOT_FOUND', `no live worker serves model ${JSON.stringify(id)}`);
    }
    this.#state.retryConfigs.set(id, config);
  }

  /**
   * Reserves the id that the next `register` of `url` will use, so a caller can name a worker
   * before it exists. A reservation never shadows a live worker: for a live URL its id is
   * returned. `removeByUrl(url)` drops a reservation.
   *
   * @returns the id (the live worker's, the existing reservation's, or a new one).
   * @throws {@link FleetRouteError} `INVALID_URL`, `CLOSED`.
   *
   * Emits: nothing. Locks: the URL's.
   */
  async reserveIdForUrl(url: string): Promise<string> {
    this.#assertOpen();
    const normalised = parseWorkerUrl(url).url;
    return this.#locks.run(normalised, () => {
      this.#assertOpen();
      return this.#state.reserve(normalised);
    });
  }

  // ─── 7. Remove ─────────────────────────────────────────────────────────────────────────

  /**
   * Removes a worker. Its object keeps its last state but `live` becomes `false`, so it is never
   * available again; the URL leaves no mapping behind.
   *
   * @returns the removed worker, or `undefined` when no live worker has this id.
   * @throws {@link FleetRouteError} `CLOSED`.
   *
   * Emits: `removed`. Locks: the URL's.
   */
  async remove(id: string): Promise<Worker | undefined> {
    this.#assertOpen();
    const worker = typeof id === 'string' ? this.#index.get(id) : undefined;
    if (worker === undefined) return undefined;
    return this.#locks.run(worker.url, () => {
      this.#assertOpen();
      const current = this.#index.get(id);
      return current === undefined ? undefined : this.#state.remove(current);
    });
  }

  /**
   * Removes the worker with this URL (any spelling that normalises to it), or drops the URL's
   * reservation. The URL → id mapping is read under the URL's lock, so a concurrent `register`
   * of the same URL is either removed whole or left intact, never half.
   *
   * @returns the removed worker, or `undefined` when no live worker has the URL.
   * @throws {@link FleetRouteError} `INVALID_URL`, `CLOSED`.
   *
   * Emits: `removed` when a worker is removed. Locks: the URL's.
   */
  async removeByUrl(url: string): Promise<Worker | undefined> {
    this.#assertOpen();
    const normalised = parseWorkerUrl(url).url;
    return this.#locks.run(normalised, () => {
      this.#assertOpen();
      this.#state.dropReservation(normalised);
      const id = this.#index.idByUrl(normalised);
      const worker = id === undefined ? undefined : this.#index.get(id);
      return worker === undefined ? undefined : this.#state.remove(worker);
    });
  }

  // ─── 8. Internal helpers ───────────────────────────────────────────────────────────────

  #liveOrThrow(id: string): Worker {
    const worker = typeof id === 'string' ? this.#index.get(id) : undefined;
    if (worker === undefined)
      throw new FleetRouteError('NOT_FOUND', `no live worker with id ${describe(id)}`);
    return worker;
  }

  #assertOpen(): void {
    if (this.#closed) throw new FleetRouteError('CLOSED', 'the registry is closed');
  }
}

/**
 * @internal A registry whose URL locks call `hooks` around each acquisition, so a test can park a
 * mutation before or inside its lock and force an interleaving. Not for production use.
 */
export function createRegistryWithHooks(
  hasher: Hasher,
  options: WorkerRegistryOptions | undefined,
  hooks: LockHooks,
): WorkerRegistry {
  return newRegistry(hasher, options, hooks);
}
