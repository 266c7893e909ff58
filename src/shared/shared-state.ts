/**
 * `SharedState`: what one router shares with the others through a {@link SharedStore} —
 * in-flight loads, and the placements of the policies that can share them (`manual`'s sticky
 * sessions, `cache_aware`'s prefix placements). Each part lives in a module of its own
 * (`load-share.ts`, `session-share.ts`, `prefix-share.ts`); this one reads the options, routes
 * each call to its part, and queues the placements.
 *
 * @module
 */
import { hostname } from 'node:os';
import { log } from '../core/logger.js';
import { fail, readObject } from '../core/options.js';
import { type PlacementSharing, sharingOf } from '../policies/placement-sharing.js';
import type { Policy, SelectRequest } from '../policies/policy.js';
import type {
  RouterSharedState,
  SharedStateEvent,
  SharedStateHost,
} from '../router/shared-state.js';
import type { Worker } from '../workers/worker.js';
import { LoadShare } from './load-share.js';
import { PartCalls } from './part-calls.js';
import { PrefixShare } from './prefix-share.js';
import { SessionShare } from './session-share.js';
import {
  SHARED_LOADS_OPTIONS,
  SHARED_PREFIX_OPTIONS,
  SHARED_SESSIONS_OPTIONS,
  SHARED_STATE_OPTIONS,
  type SharedLoadsConfig,
  type SharedStateOptions,
} from './shared-state-options.js';
import type { SharedLoadStats, SharedStateStats } from './shared-state-stats.js';
import type { SharedStore } from './shared-store.js';

/** Placements waiting to be written, as three parallel arrays (no object per placement). */
interface Placements {
  readonly requests: SelectRequest[];
  readonly ports: PlacementSharing[];
  readonly workers: Worker[];
}

const noPlacements = (): Placements => ({ requests: [], ports: [], workers: [] });

/**
 * One router's share of state kept with other routers in a {@link SharedStore}. Pass it as a
 * `Router`'s `shared` option (one per router); the router starts and closes it.
 *
 * - **Loads**: every `refreshMs`, one round trip publishes this router's per-worker in-flight
 *   counts (only those that changed) with a heartbeat, and reads the other live routers'
 *   counts, which the policies then read as part of each worker's `load` and `prefilling`.
 *   Each router writes only its own counts, so a crashed router leaves nothing inflated: it
 *   stops counting `liveMs` after its last sync.
 * - **Sessions** (`manual`): before routing, the session's workers are read from the store
 *   (within `deadlineMs`) and adopted; after routing, a changed placement is written with the
 *   policy's `ttlMs`, so a session keeps its worker whichever replica serves it.
 * - **Prefix index** (`cache_aware` without engine events): before routing, the workers that
 *   were recently sent the request's leading blocks are read (within `deadlineMs`) into the
 *   local tree; after routing, the placement is written.
 *
 * `select` never waits on the store: it only queues the placement (written on the next turn of
 * the event loop, batched). `execute` and `router.prepare` wait at most a deadline. A store
 * that fails, stalls or restarts empty degrades each part to local state (a `sharedState`
 * observation on the router); the part recovers, and this router rebuilds its counts, by
 * itself.
 *
 * @example
 * ```ts
 * const store = new MemorySharedStore(); // or await RedisSharedStore.create({ url })
 * const router = new Router({ registry, transport, shared: new SharedState({ store }) });
 * ```
 * @public
 */
export class SharedState implements RouterSharedState {
  readonly #store: SharedStore;
  readonly #routerId: string;
  readonly #loads: LoadShare | undefined;
  readonly #refreshMs: number;
  readonly #sessions: SessionShare | undefined;
  readonly #prefixes: PrefixShare | undefined;
  readonly #sessionCalls: PartCalls;
  readonly #prefixCalls: PartCalls;
  readonly #maxPending: number;
  #host: SharedStateHost | undefined;
  #timer: ReturnType<typeof setInterval> | undefined;
  #queue: Placements = noPlacements();
  #flushing: Promise<void> | undefined;
  #scheduled: ReturnType<typeof setImmediate> | undefined;
  #closed = false;
  /** The policy of the last call and its port when its part is on (a router has one per model). */
  #lastPolicy: Policy | undefined;
  #lastPort: PlacementSharing | undefined;

  /** @throws {@link FleetRouteError} `INVALID_ARGUMENT` naming a bad option. */
  constructor(options: SharedStateOptions) {
    const o = readObject('SharedState options', options);
    const store = o.store as SharedStore | undefined;
    if (
      typeof store !== 'object' ||
      store === null ||
      typeof store.syncLoads !== 'function' ||
      typeof store.matchPrefix !== 'function'
    )
      fail('store', 'a SharedStore (MemorySharedStore, RedisSharedStore)', store);
    const own = SHARED_STATE_OPTIONS.read(o);
    this.#store = store;
    this.#routerId =
      own.routerId ?? `${hostname()}:${process.pid}:${Math.random().toString(36).slice(2, 10)}`;
    this.#maxPending = own.maxPendingWrites;
    const loads: Required<SharedLoadsConfig> | undefined =
      o.loads === false ? undefined : SHARED_LOADS_OPTIONS.read(o.loads);
    const sessions = o.sessions === false ? undefined : SHARED_SESSIONS_OPTIONS.read(o.sessions);
    const prefixes =
      o.prefixIndex === false ? undefined : SHARED_PREFIX_OPTIONS.read(o.prefixIndex);
    const calls = {
      degradeAfter: own.degradeAfter,
      probeMs: own.probeMs,
      // Longest wait for one write's answer in `flush()` and `close()`: `loads.timeoutMs`.
      writeWaitMs: (loads ?? SHARED_LOADS_OPTIONS.read(undefined)).timeoutMs,
      closed: () => this.#closed,
      now,
    };
    this.#sessionCalls = new PartCalls('sessions', calls);
    this.#prefixCalls = new PartCalls('prefixIndex', calls);
    this.#sessions =
      sessions === undefined
        ? undefined
        : new SessionShare(store, sessions.deadlineMs, this.#sessionCalls);
    this.#prefixes =
      prefixes === undefined ? undefined : new PrefixShare(store, prefixes, this.#prefixCalls);
    this.#refreshMs = loads?.refreshMs ?? 0;
    this.#loads =
      loads === undefined ? undefined : new LoadShare(store, this.#routerId, loads, now);
  }

  /** This router's id in the store. */
  get routerId(): string {
    return this.#routerId;
  }

  /** The store. */
  get store(): SharedStore {
    return this.#store;
  }

  /**
   * Called by the router's `start()` (never call it yourself): starts the load sync.
   * @throws {@link FleetRouteError} `INVALID_ARGUMENT` when another router attached it already.
   */
  attach(host: SharedStateHost): void {
    if (this.#host !== undefined) fail('shared', 'a SharedState of its own for each router', this);
    this.#host = host;
    const report = (event: SharedStateEvent): void => {
      host.report(event);
      if (event.state === 'degraded')
        log(
          host.logger,
          'warn',
          'FLEETROUTE_SHARED_STATE_DEGRADED',
          `shared ${event.part} degraded (${event.reason}): routing on local state`,
          { part: event.part, reason: event.reason },
        );
    };
    this.#sessionCalls.health.report = report;
    this.#prefixCalls.health.report = report;
    this.#prefixes?.attach(host.registry);
    const loads = this.#loads;
    if (loads === undefined) return;
    loads.health.report = report;
    loads.attach(host.registry);
    loads.tick();
    if (this.#refreshMs > 0) {
      this.#timer = setInterval(() => loads.tick(), this.#refreshMs);
      this.#timer.unref();
    }
  }

  /**
   * Runs one load sync now: publishes this router's changed counts and reads the others'.
   * Resolves when it is done (never rejects). Only needed with `loads.refreshMs: 0`.
   */
  sync(): Promise<void> {
    return this.#loads?.sync() ?? Promise.resolve();
  }

  /**
   * Writes every queued placement now; resolves when the store has answered each write, or has
   * left it unanswered for `loads.timeoutMs` (its default when loads are off), so a stalled
   * store never holds it up for longer. Never rejects. The router writes placements on the next
   * turn of the event loop by itself.
   */
  flush(): Promise<void> {
    if (this.#scheduled !== undefined) {
      clearImmediate(this.#scheduled);
      this.#scheduled = undefined;
    }
    if (this.#queue.requests.length === 0) return this.#flushing ?? Promise.resolve();
    const batch = this.#queue;
    this.#queue = noPlacements();
    const run = this.#write(batch);
    const previous = this.#flushing;
    const both = (previous === undefined ? run : Promise.all([previous, run])).then(() => {
      if (this.#flushing === both) this.#flushing = undefined;
    });
    this.#flushing = both;
    return both;
  }

  /**
   * Called by the router before routing (`execute`, `router.prepare`): the lookups, awaited at
   * most their deadline; `undefined` when there is nothing to look up. Never rejects.
   */
  prepare(request: SelectRequest, policy: Policy): Promise<void> | undefined {
    if (this.#closed) return undefined;
    const port = this.#portOf(policy);
    if (port === undefined) return undefined;
    return port.kind === 'sessions'
      ? this.#sessions!.prepare(request, port)
      : this.#prefixes!.prepare(request, port);
  }

  /** Called by the router after each pick, inside `select`: queues the write. O(1). */
  placed(request: SelectRequest, policy: Policy, worker: Worker): void {
    if (this.#closed) return;
    const port = this.#portOf(policy);
    if (port === undefined) return;
    const queue = this.#queue;
    if (queue.requests.length >= this.#maxPending) {
      (port.kind === 'sessions' ? this.#sessionCalls : this.#prefixCalls).counters.dropped++;
      return;
    }
    queue.requests.push(request);
    queue.ports.push(port);
    queue.workers.push(worker);
    this.#scheduled ??= setImmediate(() => {
      this.#scheduled = undefined;
      void this.flush();
    });
  }

  /** Counters and states of each part. O(1). */
  stats(): SharedStateStats {
    const loads = this.#loads;
    return {
      routerId: this.#routerId,
      loads: {
        ...(loads?.stats ?? NO_LOAD_STATS),
        state: loads?.health.degraded ? 'degraded' : 'ok',
      },
      sessions: this.#sessionCalls.stats(),
      prefixIndex: this.#prefixCalls.stats(),
    };
  }

  /**
   * Stops the sync timer, writes what is queued (as `flush()`: each write waited for at most
   * `loads.timeoutMs`), clears the other routers' counts from this router's workers, and
   * withdraws this router's counts from the store (best effort, within `loads.timeoutMs`). The
   * store itself stays open: close it yourself. Idempotent.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
    await this.flush();
    this.#closed = true;
    await this.#loads?.close();
  }

  /**
   * The port `policy` shares its placements through, when this state shares that part: one
   * identity check for the policy of the last call.
   */
  #portOf(policy: Policy): PlacementSharing | undefined {
    if (policy === this.#lastPolicy) return this.#lastPort;
    let port = sharingOf(policy);
    const part = port?.kind === 'sessions' ? this.#sessions : this.#prefixes;
    if (part === undefined) port = undefined;
    this.#lastPolicy = policy;
    this.#lastPort = port;
    return port;
  }

  /** Writes a batch of placements: sessions that changed, prefix blocks the worker lacks. */
  async #write(batch: Placements): Promise<void> {
    const writes: Promise<void>[] = [];
    for (let i = 0; i < batch.requests.length; i++) {
      const request = batch.requests[i]!;
      const port = batch.ports[i]!;
      const write =
        port.kind === 'sessions'
          ? this.#sessions!.write(request, port)
          : this.#prefixes!.write(request, batch.workers[i]!.url);
      if (write !== undefined) writes.push(write);
    }
    await Promise.all(writes);
  }
}

const now = (): number => performance.now();

const NO_LOAD_STATS: SharedLoadStats = Object.freeze({
  syncs: 0,
  failures: 0,
  timeouts: 0,
  rebuilds: 0,
  routers: 0,
  ignored: 0,
});
