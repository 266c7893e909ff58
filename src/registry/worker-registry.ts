/**
 * `WorkerRegistry`: the live set of workers, its indexes and hash rings, and its event stream.
 *
 * @module
 */
import { EventEmitter } from 'eventemitter3';
import { FleetRouteError } from '../core/errors.js';
import { type Hasher, loadHasher } from '../core/hash.js';
import { describe, fail, readEnum, readInteger, readObject, readString } from '../core/options.js';
import { CircuitBreaker } from '../resilience/circuit-breaker.js';
import {
  type CircuitBreakerConfig,
  type ResolvedCircuitBreakerConfig,
  resolveCircuitBreakerConfig,
  sameCircuitBreakerConfig,
} from '../resilience/circuit-breaker-config.js';
import { type Clock, monotonicClock } from '../resilience/clock.js';
import {
  type ResolvedRetryConfig,
  type RetryConfig,
  resolveRetryConfig,
} from '../resilience/retry-config.js';
import { DEFAULT_VIRTUAL_NODES, type HashRing } from '../ring/hash-ring.js';
import { Worker, type WorkerInfo, WorkerRuntime } from '../workers/worker.js';
import {
  MAX_MODEL_ID_LENGTH,
  type ResolvedWorkerSpec,
  resolveWorkerSpec,
  WORKER_STATUSES,
  WORKER_TYPES,
  type WorkerSpec,
  type WorkerStatus,
  type WorkerType,
} from '../workers/worker-spec.js';
import { type ConnectionMode, parseWorkerUrl } from '../workers/worker-url.js';
import { EventStream, type StreamItem } from './event-stream.js';
import { type LockHooks, UrlLocks } from './url-locks.js';
import type { WorkerEvent, WorkerEventMap, WorkerEventType } from './worker-event.js';
import { WorkerIndex } from './worker-index.js';

/**
 * Options of {@link WorkerRegistry.create}.
 *
 * @public
 */
export interface WorkerRegistryOptions {
  /** Virtual nodes per worker on every hash ring. Cost: 12 bytes and one xxh64 per point. @defaultValue 150 */
  readonly virtualNodes?: number;
  /**
   * Status of a worker registered without `status`. Use `'ready'` when nothing probes health.
   *
   * @defaultValue 'pending'
   */
  readonly defaultStatus?: WorkerStatus;
  /** Breaker settings for every worker, under each worker's own `circuitBreaker` overrides. */
  readonly circuitBreaker?: CircuitBreakerConfig;
  /**
   * Default buffer of each {@link WorkerRegistry.events} subscriber, in events. 1,024 events
   * cost about 8 KB of pointers per subscriber. @defaultValue 1024
   */
  readonly eventBufferSize?: number;
  /** Time source for circuit breakers (ms, monotonic). @defaultValue `performance.now` */
  readonly clock?: Clock;
  /**
   * Called when an event listener throws. The registry and the other listeners are unaffected
   * either way. @defaultValue emits a process warning with code `FLEETROUTE_LISTENER_ERROR`
   */
  readonly onListenerError?: (error: unknown, event: WorkerEvent) => void;
}

/** Options of {@link WorkerRegistry.events}. @public */
export interface EventsOptions {
  /** Ends the iterator when aborted. */
  readonly signal?: AbortSignal;
  /** Events buffered for this subscriber before the oldest are dropped. @defaultValue the registry's `eventBufferSize` */
  readonly bufferSize?: number;
}

/** Options of the mutations that accept a revision check. @public */
export interface RevisionOptions {
  /** Fail with `STALE_REVISION` unless the worker is still at this revision. */
  readonly expectedRevision?: number;
}

/** Result of {@link WorkerRegistry.registerOrReplace}. @public */
export interface RegisterOrReplaceResult {
  readonly worker: Worker;
  /** `true` when a live worker with the same URL was replaced, `false` when a new one was registered. */
  readonly replaced: boolean;
}

/** Result of {@link WorkerRegistry.transitionStatus}. @public */
export interface StatusTransition {
  readonly from: WorkerStatus;
  readonly to: WorkerStatus;
}

/** Counts from {@link WorkerRegistry.stats}; a plain object built per call. @public */
export interface RegistryStats {
  readonly workers: number;
  readonly models: number;
  readonly wildcardWorkers: number;
  readonly byStatus: Readonly<Record<WorkerStatus, number>>;
  readonly byType: Readonly<Record<WorkerType, number>>;
  readonly byConnection: Readonly<Record<ConnectionMode, number>>;
  readonly reservations: number;
  readonly eventsEmitted: number;
  readonly listenerErrors: number;
  readonly subscribers: number;
  readonly ringsBuilt: number;
  readonly closed: boolean;
}

/** Plain-data state from {@link WorkerRegistry.snapshot}. @public */
export interface RegistrySnapshot {
  /** `seq` of the last event reflected here (0 before any event). */
  readonly seq: number;
  /** Every live worker, in registration order. */
  readonly workers: readonly WorkerInfo[];
  /** Explicitly served model → ids of the workers naming it. */
  readonly models: Readonly<Record<string, readonly string[]>>;
  /** Per-model retry overrides. */
  readonly retryConfigs: Readonly<Record<string, ResolvedRetryConfig>>;
}

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
  readonly #index: WorkerIndex;
  readonly #locks: UrlLocks;
  readonly #reserved = new Map<string, string>();
  readonly #retryConfigs = new Map<string, ResolvedRetryConfig>();
  readonly #emitter = new EventEmitter<WorkerEventMap>();
  readonly #streams = new Set<EventStream>();
  /** `once` listeners → their self-removing wrappers, per event type, so `off` finds them. */
  readonly #onceWrappers = new Map<string, Map<unknown, ((event: WorkerEvent) => void)[]>>();
  readonly #defaultStatus: WorkerStatus;
  readonly #breakerDefaults: ResolvedCircuitBreakerConfig;
  readonly #eventBufferSize: number;
  readonly #clock: Clock;
  readonly #onListenerError: (error: unknown, event: WorkerEvent) => void;
  #nextId = 1;
  #seq = 0;
  #listenerErrors = 0;
  #closed = false;

  // ─── 1. Construction & subscription ─────────────────────────────────────────────────────

  /**
   * @internal Use {@link WorkerRegistry.create}. `lockHooks` lets tests suspend mutations around
   * lock acquisition to force interleavings.
   */
  constructor(hasher: Hasher, options: WorkerRegistryOptions = {}, lockHooks?: LockHooks) {
    this.#locks = new UrlLocks(lockHooks);
    const o = readObject('options', options);
    const virtualNodes = readInteger(
      'options.virtualNodes',
      o.virtualNodes,
      DEFAULT_VIRTUAL_NODES,
      1,
      10_000,
    );
    this.#defaultStatus = readEnum(
      'options.defaultStatus',
      o.defaultStatus,
      WORKER_STATUSES,
      'pending',
    );
    this.#breakerDefaults = resolveCircuitBreakerConfig(o.circuitBreaker, 'options.circuitBreaker');
    this.#eventBufferSize = readInteger(
      'options.eventBufferSize',
      o.eventBufferSize,
      1024,
      1,
      1_000_000,
    );
    if (o.clock !== undefined && typeof o.clock !== 'function')
      fail('options.clock', 'a function', o.clock);
    this.#clock = (o.clock as Clock | undefined) ?? monotonicClock;
    if (o.onListenerError !== undefined && typeof o.onListenerError !== 'function') {
      fail('options.onListenerError', 'a function', o.onListenerError);
    }
    this.#onListenerError =
      (o.onListenerError as WorkerRegistryOptions['onListenerError']) ?? warnListenerError;
    this.#index = new WorkerIndex(hasher, virtualNodes);
  }

  /**
   * Creates a registry. Async because the hash function is WebAssembly, loaded once per process.
   *
   * @throws {@link FleetRouteError} `INVALID_ARGUMENT` naming the first bad option.
   */
  static async create(options: WorkerRegistryOptions = {}): Promise<WorkerRegistry> {
    const hasher = await loadHasher();
    return new WorkerRegistry(hasher, options);
  }

  /**
   * Adds a listener for every event (`'event'`) or one event type. Listeners run synchronously
   * inside the mutation, in registration order; one that throws is reported through
   * `onListenerError` and cannot affect the registry or the other listeners.
   *
   * @returns `this`. Emits: nothing. Cost: O(1).
   */
  on<K extends keyof WorkerEventMap>(type: K, listener: WorkerEventMap[K]): this {
    this.#emitter.on(type, listener as never);
    return this;
  }

  /** Like {@link WorkerRegistry.on}, for one event only. @returns `this`. */
  once<K extends keyof WorkerEventMap>(type: K, listener: WorkerEventMap[K]): this {
    const wrapper = (event: WorkerEvent): void => {
      this.#forgetOnce(type, listener, wrapper);
      (listener as (e: WorkerEvent) => void)(event);
    };
    let byListener = this.#onceWrappers.get(type);
    if (byListener === undefined) {
      byListener = new Map();
      this.#onceWrappers.set(type, byListener);
    }
    byListener.set(listener, [...(byListener.get(listener) ?? []), wrapper]);
    this.#emitter.on(type, wrapper as never);
    return this;
  }

  /** Removes a listener added with `on` or `once`. @returns `this`. */
  off<K extends keyof WorkerEventMap>(type: K, listener: WorkerEventMap[K]): this {
    this.#emitter.off(type, listener as never);
    for (const wrapper of this.#onceWrappers.get(type)?.get(listener) ?? []) {
      this.#forgetOnce(type, listener, wrapper);
    }
    return this;
  }

  /**
   * Subscribes with a bounded buffer. A consumer that falls more than `bufferSize` events behind
   * loses the oldest ones and reads `{ type: 'lagged', missed }` before the rest.
   *
   * A late subscriber should subscribe first, then take {@link WorkerRegistry.snapshot}, and skip
   * events whose `seq` is at most `snapshot.seq`; after a `lagged` item it resynchronises the same
   * way. The iterator ends when `signal` aborts, when the consumer breaks out of its loop, or when
   * the registry is closed (after the buffered events).
   *
   * @returns an async iterator of {@link WorkerEvent} and {@link LaggedEvent}.
   * @throws {@link FleetRouteError} `INVALID_ARGUMENT` for a bad `bufferSize` or `signal`;
   *   `CLOSED` when the registry is closed.
   */
  events(options: EventsOptions = {}): AsyncIterableIterator<StreamItem> {
    const o = readObject('events options', options);
    const bufferSize = readInteger(
      'events.bufferSize',
      o.bufferSize,
      this.#eventBufferSize,
      1,
      1_000_000,
    );
    const signal = o.signal;
    if (signal !== undefined && !(signal instanceof AbortSignal))
      fail('events.signal', 'an AbortSignal', signal);
    this.#assertOpen();
    const onAbort = (): void => stream.close();
    const stream = new EventStream(bufferSize, (s) => {
      this.#streams.delete(s);
      signal?.removeEventListener('abort', onAbort);
    });
    this.#streams.add(stream);
    if (signal !== undefined) {
      if (signal.aborted) stream.close();
      else signal.addEventListener('abort', onAbort, { once: true });
    }
    return stream;
  }

  /**
   * Stops the registry: every later mutation fails with `CLOSED`, event iterators end after
   * their buffered events, and listeners are removed. Reads keep working. Idempotent.
   */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const stream of [...this.#streams]) stream.end();
    this.#emitter.removeAllListeners();
    this.#onceWrappers.clear();
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
    const id = this.#index.idByUrl(url) ?? this.#reserved.get(url);
    if (id !== undefined) return id;
    const normalised = tryNormalise(url);
    if (normalised === undefined || normalised === url) return undefined;
    return this.#index.idByUrl(normalised) ?? this.#reserved.get(normalised);
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
   * `model` is absent, `''` or `'*'`. An unknown model gets the wildcard workers only.
   *
   * @returns a shared read-only array, the same object until that model's membership changes. O(1) when
   *   cached, no allocation.
   */
  getByModel(model?: string): readonly Worker[] {
    return isWildcardModel(model) ? this.#index.all() : this.#index.byModel(model as string);
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
    const byStatus: Record<WorkerStatus, number> = {
      pending: 0,
      ready: 0,
      not_ready: 0,
      failed: 0,
      draining: 0,
    };
    for (const worker of this.#index.all()) byStatus[worker.status]++;
    return {
      workers: this.#index.size,
      models: this.#index.models().length,
      wildcardWorkers: this.#index.wildcardCount,
      byStatus,
      byType: {
        regular: this.#index.byType('regular').length,
        prefill: this.#index.byType('prefill').length,
        decode: this.#index.byType('decode').length,
      },
      byConnection: {
        http: this.#index.byConnection('http').length,
        grpc: this.#index.byConnection('grpc').length,
      },
      reservations: this.#reserved.size,
      eventsEmitted: this.#seq,
      listenerErrors: this.#listenerErrors,
      subscribers:
        this.#streams.size +
        this.#emitter.eventNames().reduce((n, t) => n + this.#emitter.listenerCount(t), 0),
      ringsBuilt: this.#index.ringsBuilt,
      closed: this.#closed,
    };
  }

  /**
   * A plain-data copy of the registry for late subscribers and debugging: no live objects, no
   * secrets. `seq` is the last event it reflects. O(n).
   */
  snapshot(): RegistrySnapshot {
    const models: Record<string, readonly string[]> = {};
    for (const model of this.#index.models()) {
      models[model] = this.#index
        .byModel(model)
        .filter((w) => !w.isWildcard)
        .map((w) => w.id);
    }
    return {
      seq: this.#seq,
      workers: this.#index.all().map((w) => w.toJSON()),
      models,
      retryConfigs: Object.fromEntries(this.#retryConfigs),
    };
  }

  // ─── 4. Read: config ───────────────────────────────────────────────────────────────────

  /**
   * @returns the retry override set for `model` with {@link WorkerRegistry.setModelRetryConfig},
   *   or `undefined`. O(1).
   */
  getRetryConfig(model: string): ResolvedRetryConfig | undefined {
    return typeof model === 'string' ? this.#retryConfigs.get(model) : undefined;
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
      return this.#registerLocked(resolved);
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
      if (current === undefined) return { worker: this.#registerLocked(resolved), replaced: false };
      return { worker: this.#replaceLocked(current, resolved), replaced: true };
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
    const url = this.#urlOf(id);
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
      return this.#replaceLocked(current, resolved);
    });
  }

  /**
   * Sets a worker's status. A pure primitive: any transition is allowed; the caller (the router's
   * health loop) owns the state machine.
   *
   * @returns `{ from, to }`, or `undefined` when the worker already had that status (no event).
   * @throws {@link FleetRouteError} `NOT_FOUND`, `STALE_REVISION`, `INVALID_ARGUMENT` for an
   *   unknown status, `CLOSED`.
   *
   * Emits: `statusChanged` when the status changes. Locks: the URL's.
   */
  async transitionStatus(
    id: string,
    status: WorkerStatus,
    options: RevisionOptions = {},
  ): Promise<StatusTransition | undefined> {
    this.#assertOpen();
    if (status === undefined) fail('status', 'a worker status', status);
    const to = readEnum('status', status, WORKER_STATUSES, 'pending');
    const expected = readExpectedRevision(options);
    const url = this.#urlOf(id);
    return this.#locks.run(url, () => {
      this.#assertOpen();
      const worker = this.#liveOrThrow(id);
      checkRevision(worker, expected);
      const runtime = Worker.runtimeOf(worker);
      const from = runtime.status;
      if (from === to) return undefined;
      runtime.status = to;
      this.#emit({ type: 'statusChanged', seq: 0, workerId: id, worker, from, to });
      return { from, to };
    });
  }

  // ─── 6. Update: config (no event) ──────────────────────────────────────────────────────

  /**
   * Sets the retry override for a model that live workers name explicitly. It is dropped when the
   * model's last worker leaves (by `remove` or by a `replace` that drops the model).
   *
   * @throws {@link FleetRouteError} `NOT_FOUND` when no live worker names `model`,
   *   `INVALID_ARGUMENT` for a bad config.
   *
   * Emits: nothing. Locks: none (synchronous). Cost: O(1).
   */
  setModelRetryConfig(model: string, config: RetryConfig): void {
    this.#assertOpen();
    const id = readString('model', model, MAX_MODEL_ID_LENGTH);
    const resolved = resolveRetryConfig(config, 'config');
    if (!this.#index.hasModel(id))
      throw new FleetRouteError('NOT_FOUND', `no live worker serves model ${JSON.stringify(id)}`);
    this.#retryConfigs.set(id, resolved);
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
      const live = this.#index.idByUrl(normalised);
      if (live !== undefined) return live;
      let id = this.#reserved.get(normalised);
      if (id === undefined) {
        id = this.#newId();
        this.#reserved.set(normalised, id);
      }
      return id;
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
      return current === undefined ? undefined : this.#removeLocked(current);
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
      this.#reserved.delete(normalised);
      const id = this.#index.idByUrl(normalised);
      const worker = id === undefined ? undefined : this.#index.get(id);
      return worker === undefined ? undefined : this.#removeLocked(worker);
    });
  }

  // ─── 8. Internal helpers ───────────────────────────────────────────────────────────────

  #registerLocked(spec: ResolvedWorkerSpec): Worker {
    const id = this.#reserved.get(spec.url) ?? this.#newId();
    this.#reserved.delete(spec.url);
    const runtime = new WorkerRuntime(spec.status ?? this.#defaultStatus, this.#breakerFor(spec));
    const worker = new Worker(id, 0, spec, runtime);
    this.#index.add(worker);
    this.#emit({ type: 'registered', seq: 0, workerId: id, worker, status: runtime.status });
    return worker;
  }

  #replaceLocked(current: Worker, spec: ResolvedWorkerSpec): Worker {
    const runtime = Worker.runtimeOf(current);
    const breakerConfig = this.#breakerConfigFor(spec);
    if (!sameCircuitBreakerConfig(runtime.breaker.config, breakerConfig)) {
      runtime.breaker = new CircuitBreaker(breakerConfig, this.#clock);
    }
    const next = new Worker(current.id, current.revision + 1, spec, runtime);
    this.#index.replace(current, next);
    this.#dropOrphanRetryConfigs(current.models);
    this.#emit({ type: 'replaced', seq: 0, workerId: current.id, old: current, new: next });
    return next;
  }

  #removeLocked(worker: Worker): Worker {
    this.#index.remove(worker);
    Worker.runtimeOf(worker).live = false;
    this.#dropOrphanRetryConfigs(worker.models);
    this.#emit({ type: 'removed', seq: 0, workerId: worker.id, worker });
    return worker;
  }

  #dropOrphanRetryConfigs(models: readonly string[]): void {
    for (const model of models) if (!this.#index.hasModel(model)) this.#retryConfigs.delete(model);
  }

  #breakerConfigFor(spec: ResolvedWorkerSpec): ResolvedCircuitBreakerConfig {
    return spec.circuitBreaker === undefined
      ? this.#breakerDefaults
      : resolveCircuitBreakerConfig(
          spec.circuitBreaker,
          'spec.circuitBreaker',
          this.#breakerDefaults,
        );
  }

  #breakerFor(spec: ResolvedWorkerSpec): CircuitBreaker {
    return new CircuitBreaker(this.#breakerConfigFor(spec), this.#clock);
  }

  #newId(): string {
    return `worker-${this.#nextId++}`;
  }

  /** The URL of a live worker (URLs never change for an id), or `NOT_FOUND`. */
  #urlOf(id: string): string {
    return this.#liveOrThrow(id).url;
  }

  #liveOrThrow(id: string): Worker {
    const worker = typeof id === 'string' ? this.#index.get(id) : undefined;
    if (worker === undefined)
      throw new FleetRouteError('NOT_FOUND', `no live worker with id ${describe(id)}`);
    return worker;
  }

  #forgetOnce(type: string, listener: unknown, wrapper: (event: WorkerEvent) => void): void {
    this.#emitter.off(type as keyof WorkerEventMap, wrapper as never);
    const byListener = this.#onceWrappers.get(type);
    const rest = byListener?.get(listener)?.filter((w) => w !== wrapper) ?? [];
    if (rest.length > 0) byListener!.set(listener, rest);
    else byListener?.delete(listener);
  }

  #assertOpen(): void {
    if (this.#closed) throw new FleetRouteError('CLOSED', 'the registry is closed');
  }

  /** Stamps `seq`, then delivers to listeners (each isolated) and to every stream. */
  #emit(draft: WorkerEvent): void {
    const event = Object.freeze({ ...draft, seq: ++this.#seq }) as WorkerEvent;
    this.#deliver('event', event);
    this.#deliver(event.type, event);
    for (const stream of this.#streams) stream.push(event);
  }

  #deliver(type: WorkerEventType | 'event', event: WorkerEvent): void {
    if (this.#emitter.listenerCount(type) === 0) return;
    for (const listener of this.#emitter.listeners(type)) {
      try {
        (listener as (e: WorkerEvent) => void)(event);
      } catch (error) {
        this.#listenerErrors++;
        try {
          this.#onListenerError(error, event);
        } catch {
          // The error reporter itself failed; nothing more can be done without risking the registry.
        }
      }
    }
  }
}

/** `true` for no model, `''` or `'*'`; throws for a non-string. */
function isWildcardModel(model: string | undefined): boolean {
  if (model === undefined) return true;
  if (typeof model !== 'string') fail('model', 'a string', model);
  return model === '' || model === '*';
}

function tryNormalise(url: string): string | undefined {
  try {
    return parseWorkerUrl(url).url;
  } catch {
    return undefined;
  }
}

function readExpectedRevision(options: unknown): number | undefined {
  const o = readObject('options', options);
  return o.expectedRevision === undefined
    ? undefined
    : readInteger('options.expectedRevision', o.expectedRevision, 0, 0, Number.MAX_SAFE_INTEGER);
}

function checkRevision(worker: Worker, expected: number | undefined): void {
  if (expected !== undefined && worker.revision !== expected) {
    throw new FleetRouteError(
      'STALE_REVISION',
      `worker ${worker.id} is at revision ${worker.revision}, expected ${expected}`,
    );
  }
}

function warnListenerError(error: unknown, event: WorkerEvent): void {
  process.emitWarning(
    `a WorkerEvent listener threw while handling '${event.type}' (seq ${event.seq}): ${String(error)}`,
    {
      code: 'FLEETROUTE_LISTENER_ERROR',
    },
  );
}
