/**
 * `SharedState`: what one router shares with the others through a {@link SharedStore} —
 * in-flight loads, `manual`'s sticky sessions, and `cache_aware`'s prefix placements.
 *
 * @module
 */
import { hostname } from 'node:os';
import { loadedHasher } from '../core/hash.js';
import { log } from '../core/logger.js';
import { custom, duration, integer, OptionTable } from '../core/option-table.js';
import { fail, readObject, readString } from '../core/options.js';
import {
  CacheAwarePolicy,
  cacheAwareRemember,
  cacheAwareUsesEvents,
} from '../policies/cache-aware.js';
import {
  ManualPolicy,
  manualAdopt,
  manualPlacementOf,
  manualSessionKey,
  manualTtlMs,
} from '../policies/manual.js';
import type { Policy, SelectRequest } from '../policies/policy.js';
import type {
  RouterSharedState,
  SharedStateEvent,
  SharedStateHost,
} from '../router/shared-state.js';
import type { Worker } from '../workers/worker.js';
import { LoadShare, type SharedLoadStats } from './load-share.js';
import { PartHealth, TIMED_OUT, withDeadline } from './part-health.js';
import { PrefixBlocks } from './prefix-blocks.js';
import type { PrefixHolder, SessionRecord, SharedStore } from './shared-store.js';

/** The `loads` part of {@link SharedStateOptions}. @public */
export interface SharedLoadsConfig {
  /**
   * Time between two syncs (ms): each is one round trip that publishes this router's changed
   * counts with its heartbeat and reads the other live routers' sums. 0 runs no timer: call
   * `sync()` yourself (the simulator does, on its own clock). @defaultValue 100
   */
  readonly refreshMs?: number;
  /**
   * A router that has not synced for this long (ms) is dead: its counts stop counting. A router
   * killed without cleanup leaves the fleet's view within this plus `refreshMs`. @defaultValue 2000
   */
  readonly liveMs?: number;
  /** A sync not answered after this long (ms) counts as failed. @defaultValue 1000 */
  readonly timeoutMs?: number;
}

/** The `sessions` part of {@link SharedStateOptions}. @public */
export interface SharedSessionsConfig {
  /**
   * Longest wait for a session's lookup before routing (ms); past it the request is placed on
   * local state alone (counted in `stats().sessions.timeouts`). A few ms above the store's round
   * trip: a busy event loop reads answers late, and a session placed wrong costs its cache.
   * @defaultValue 10
   */
  readonly deadlineMs?: number;
}

/** The `prefixIndex` part of {@link SharedStateOptions}. @public */
export interface SharedPrefixIndexConfig {
  /** A placement not renewed for this long (ms) is forgotten. @defaultValue 120000 */
  readonly ttlMs?: number;
  /**
   * Longest wait for the index before routing (ms); past it the request routes as if nothing
   * were known (counted in `stats().prefixIndex.timeouts`). A prefix-cache miss costs the
   * prompt's prefill (hundreds of ms for a long prompt), so waiting a few ms pays.
   * @defaultValue 10
   */
  readonly deadlineMs?: number;
  /** Tokens per shared block (a multiple of `cache_aware`'s `pageSize` keeps blocks page-aligned). @defaultValue 64 */
  readonly blockTokens?: number;
  /** Characters per shared block of a text request. @defaultValue 256 */
  readonly blockChars?: number;
  /** Most leading blocks of a request looked up and recorded (64 K tokens at 64 per block). @defaultValue 1024 */
  readonly maxBlocks?: number;
  /** Most workers kept per block (the most recent). @defaultValue 16 */
  readonly maxHolders?: number;
}

/** Options of {@link SharedState}. @public */
export interface SharedStateOptions {
  /** Where state is shared: `MemorySharedStore`, or `RedisSharedStore` from `fleetroute/redis`. */
  readonly store: SharedStore;
  /**
   * This router's id, unique among the routers sharing the store. @defaultValue
   * `<hostname>:<pid>:<random>`
   */
  readonly routerId?: string;
  /** Shared in-flight loads; `false` turns them off. */
  readonly loads?: SharedLoadsConfig | false;
  /** Shared sticky sessions of `manual`; `false` turns them off. */
  readonly sessions?: SharedSessionsConfig | false;
  /** Shared prefix index for `cache_aware` without engine events; `false` turns it off. */
  readonly prefixIndex?: SharedPrefixIndexConfig | false;
  /**
   * Deadline misses in a row after which a part counts as degraded: it stops waiting on the
   * store (lookups run in the background, one per `probeMs`) until one answers in time.
   * @defaultValue 3
   */
  readonly degradeAfter?: number;
  /** While a part is degraded, least time between two probe lookups (ms). @defaultValue 1000 */
  readonly probeMs?: number;
  /**
   * Most placements waiting to be written (they go out on the next turn of the event loop);
   * beyond it new ones are dropped (counted in `stats()`). @defaultValue 10000
   */
  readonly maxPendingWrites?: number;
}

/** Counters of one lookup part of {@link SharedState}. @public */
export interface SharedLookupStats {
  readonly state: 'ok' | 'degraded';
  /** Lookups asked of the store. */
  readonly lookups: number;
  /** Lookups that found something. */
  readonly hits: number;
  /** Lookups past the deadline (the request routed on local state). */
  readonly timeouts: number;
  /** Lookups and writes the store failed. */
  readonly failures: number;
  /** Writes sent. */
  readonly writes: number;
  /** Writes not sent: the part was degraded, or the queue was full. */
  readonly dropped: number;
}

/** What {@link SharedState.stats} returns. @public */
export interface SharedStateStats {
  readonly routerId: string;
  readonly loads: SharedLoadStats & { readonly state: 'ok' | 'degraded' };
  readonly sessions: SharedLookupStats;
  readonly prefixIndex: SharedLookupStats;
}

/** @internal The `loads` options. */
export const SHARED_LOADS_OPTIONS = new OptionTable('loads', 'SharedLoadsConfig', {
  refreshMs: duration(100, 0),
  liveMs: duration(2000),
  timeoutMs: duration(1000),
});

/** @internal The `sessions` options. */
export const SHARED_SESSIONS_OPTIONS = new OptionTable('sessions', 'SharedSessionsConfig', {
  deadlineMs: duration(10),
});

/** @internal The `prefixIndex` options. */
export const SHARED_PREFIX_OPTIONS = new OptionTable('prefixIndex', 'SharedPrefixIndexConfig', {
  ttlMs: duration(120_000),
  deadlineMs: duration(10),
  blockTokens: integer(64, 1, 65_536),
  blockChars: integer(256, 1, 1_048_576),
  maxBlocks: integer(1024, 1, 4096),
  maxHolders: integer(16, 1, 1024),
});

/** @internal The `SharedState` options. */
export const SHARED_STATE_OPTIONS = new OptionTable(
  'SharedState',
  'SharedStateOptions',
  {
    routerId: custom<string | undefined>(
      undefined,
      (field, value) => readString(field, value, 256),
      '`<hostname>:<pid>:<random>`',
    ),
    degradeAfter: integer(3, 1, 1_000_000),
    probeMs: duration(1000),
    maxPendingWrites: integer(10_000, 1, 10_000_000),
  },
  ['store', 'loads', 'sessions', 'prefixIndex'],
);

interface Prepared {
  /** The session key, when `manual` keys the request. */
  sessionKey?: string;
  /** What the store held for it (`null`: nothing, or not asked). */
  session?: SessionRecord | null;
  /** The request's prefix blocks, when `cache_aware` routes it on its tree. */
  blocks?: string[];
  holders?: readonly PrefixHolder[];
}

/** Placements waiting to be written, as three parallel arrays (no object per placement). */
interface Placements {
  readonly requests: SelectRequest[];
  readonly policies: Policy[];
  readonly workers: Worker[];
}

const noPlacements = (): Placements => ({ requests: [], policies: [], workers: [] });

/** What a policy's placements share: nothing, sessions (`manual`), prefixes (`cache_aware`). */
const NOT_SHARED = 0;
const SESSIONS = 1;
const PREFIXES = 2;

const SESSION_PREFIX = 's:';
const HEX = (n: bigint): string => n.toString(16).padStart(16, '0');

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
  readonly #loadConfig: Required<SharedLoadsConfig> | undefined;
  readonly #sessionConfig: Required<SharedSessionsConfig> | undefined;
  readonly #prefixConfig: Required<SharedPrefixIndexConfig> | undefined;
  readonly #blocks: PrefixBlocks | undefined;
  readonly #probeMs: number;
  readonly #maxPending: number;
  /** Longest wait for one write's answer in `flush()` and `close()` (ms): `loads.timeoutMs`. */
  readonly #writeWaitMs: number;
  readonly #sessionHealth: PartHealth;
  readonly #prefixHealth: PartHealth;
  readonly #sessionStats = newLookupStats();
  readonly #prefixStats = newLookupStats();
  readonly #prepared = new WeakMap<SelectRequest, Prepared>();
  #host: SharedStateHost | undefined;
  #timer: ReturnType<typeof setInterval> | undefined;
  #queue: Placements = noPlacements();
  #flushing: Promise<void> | undefined;
  #scheduled: ReturnType<typeof setImmediate> | undefined;
  #closed = false;
  #lastPolicy: Policy | undefined;
  #lastKind = NOT_SHARED;

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
    this.#probeMs = own.probeMs;
    this.#maxPending = own.maxPendingWrites;
    this.#loadConfig = o.loads === false ? undefined : SHARED_LOADS_OPTIONS.read(o.loads);
    this.#sessionConfig =
      o.sessions === false ? undefined : SHARED_SESSIONS_OPTIONS.read(o.sessions);
    this.#prefixConfig =
      o.prefixIndex === false ? undefined : SHARED_PREFIX_OPTIONS.read(o.prefixIndex);
    this.#writeWaitMs = (this.#loadConfig ?? SHARED_LOADS_OPTIONS.read(undefined)).timeoutMs;
    const p = this.#prefixConfig;
    this.#blocks =
      p === undefined ? undefined : new PrefixBlocks(p.blockTokens, p.blockChars, p.maxBlocks);
    this.#loads =
      this.#loadConfig === undefined
        ? undefined
        : new LoadShare(store, this.#routerId, this.#loadConfig, own.degradeAfter, now);
    this.#sessionHealth = new PartHealth('sessions', own.degradeAfter);
    this.#prefixHealth = new PartHealth('prefixIndex', own.degradeAfter);
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
    this.#sessionHealth.report = report;
    this.#prefixHealth.report = report;
    const loads = this.#loads;
    if (loads === undefined) return;
    loads.health.report = report;
    loads.attach(host.registry);
    loads.tick();
    const every = this.#loadConfig!.refreshMs;
    if (every > 0) {
      this.#timer = setInterval(() => loads.tick(), every);
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
    const lookups: Promise<void>[] = [];
    let prepared: Prepared | undefined;
    if (this.#sessionConfig !== undefined && policy instanceof ManualPolicy) {
      const key = manualSessionKey(policy, request);
      const hashed = key === undefined ? undefined : sessionKeyOf(key);
      if (key !== undefined && hashed !== undefined) {
        prepared = { sessionKey: key, session: null };
        const p = prepared;
        const lookup = this.#lookup(
          this.#sessionHealth,
          this.#sessionStats,
          this.#sessionConfig.deadlineMs,
          () => this.#store.getSession(hashed),
          (record) => {
            if (record === undefined) return false;
            p.session = record;
            manualAdopt(policy, key, record.primary, record.secondary);
            return true;
          },
        );
        if (lookup !== undefined) lookups.push(lookup);
      }
    }
    if (this.#prefixConfig !== undefined && policy instanceof CacheAwarePolicy) {
      const model = typeof request.model === 'string' ? request.model : '';
      const key = keyOf(request);
      if (key !== undefined && !cacheAwareUsesEvents(policy, model)) {
        const blocks = this.#blocks!.of(model, key);
        if (blocks.length > 0) {
          prepared ??= {};
          prepared.blocks = blocks;
          const p = prepared;
          const c = this.#prefixConfig;
          const lookup = this.#lookup(
            this.#prefixHealth,
            this.#prefixStats,
            c.deadlineMs,
            () => this.#store.matchPrefix(blocks, c.ttlMs, c.maxHolders),
            (holders) => {
              p.holders = holders;
              if (holders.length === 0) return false;
              this.#remember(policy, request, model, key, holders);
              return true;
            },
          );
          if (lookup !== undefined) lookups.push(lookup);
        }
      }
    }
    if (prepared !== undefined) this.#prepared.set(request, prepared);
    if (lookups.length === 0) return undefined;
    return lookups.length === 1 ? lookups[0] : Promise.all(lookups).then(() => undefined);
  }

  /** Called by the router after each pick, inside `select`: queues the write. O(1). */
  placed(request: SelectRequest, policy: Policy, worker: Worker): void {
    if (this.#closed) return;
    // One identity check for the policy of the last call (a router has a policy per model).
    let kind = this.#lastKind;
    if (policy !== this.#lastPolicy) {
      kind = this.#kindOf(policy);
      this.#lastPolicy = policy;
      this.#lastKind = kind;
    }
    if (kind === NOT_SHARED) return;
    const queue = this.#queue;
    if (queue.requests.length >= this.#maxPending) {
      (kind === SESSIONS ? this.#sessionStats : this.#prefixStats).dropped++;
      return;
    }
    queue.requests.push(request);
    queue.policies.push(policy);
    queue.workers.push(worker);
    this.#scheduled ??= setImmediate(() => {
      this.#scheduled = undefined;
      void this.flush();
    });
  }

  /** Which part shares what `policy` places. */
  #kindOf(policy: Policy): number {
    if (policy instanceof ManualPolicy)
      return this.#sessionConfig === undefined ? NOT_SHARED : SESSIONS;
    if (policy instanceof CacheAwarePolicy)
      return this.#prefixConfig === undefined ? NOT_SHARED : PREFIXES;
    return NOT_SHARED;
  }

  /** Counters and states of each part. O(1). */
  stats(): SharedStateStats {
    const loads = this.#loads;
    return {
      routerId: this.#routerId,
      loads: {
        ...(loads?.stats ?? { syncs: 0, failures: 0, timeouts: 0, rebuilds: 0, routers: 0 }),
        state: loads?.health.degraded ? 'degraded' : 'ok',
      },
      sessions: { ...this.#sessionStats, state: this.#sessionHealth.degraded ? 'degraded' : 'ok' },
      prefixIndex: { ...this.#prefixStats, state: this.#prefixHealth.degraded ? 'degraded' : 'ok' },
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
   * One lookup under `health`: awaited within `deadlineMs` when the part is ok; while it is
   * degraded, at most one per `probeMs` runs unawaited (its answer still lands, and recovers the
   * part), and the request routes on local state at once.
   */
  #lookup<T>(
    health: PartHealth,
    stats: MutableLookupStats,
    deadlineMs: number,
    call: () => Promise<T>,
    use: (value: T) => boolean,
  ): Promise<void> | undefined {
    const started = now();
    if (health.degraded) {
      if (started - health.lastProbe < this.#probeMs) return undefined;
      health.lastProbe = started;
    }
    stats.lookups++;
    let answer: Promise<T>;
    try {
      answer = call();
    } catch (error) {
      stats.failures++;
      health.failed(error, started);
      return undefined;
    }
    const run = withDeadline(answer, deadlineMs).then(
      (value) => {
        if (value === TIMED_OUT) {
          stats.timeouts++;
          health.timedOut(started);
          return;
        }
        health.ok();
        if (!this.#closed && use(value)) stats.hits++;
      },
      (error: unknown) => {
        stats.failures++;
        health.failed(error, started);
      },
    );
    return health.degraded ? undefined : run;
  }

  /** The holders' placements, as if this router had routed them, into the policy's tree. */
  #remember(
    policy: CacheAwarePolicy,
    request: SelectRequest,
    model: string,
    key: string | ArrayLike<number>,
    holders: readonly PrefixHolder[],
  ): void {
    const registry = this.#host?.registry;
    if (registry === undefined) return;
    const workers = registry.getByModel(
      typeof request.model === 'string' ? request.model : undefined,
    );
    const per = this.#blocks!.unitsPerBlock(typeof key === 'string' ? 'text' : 'tokens');
    // The store answers only the holders of the longest run, so they share one prefix.
    const prefix = prefixOf(key, Math.min(holders[0]!.blocks * per, key.length));
    for (const holder of holders) {
      if (registry.getByUrl(holder.url) === undefined) continue;
      cacheAwareRemember(policy, workers, model, prefix, holder.url);
    }
  }

  /** Writes a batch of placements: sessions that changed, prefix blocks the worker lacks. */
  async #write(batch: Placements): Promise<void> {
    const writes: Promise<void>[] = [];
    for (let i = 0; i < batch.requests.length; i++) {
      const request = batch.requests[i]!;
      const policy = batch.policies[i]!;
      const url = batch.workers[i]!.url;
      const prepared = this.#prepared.get(request);
      if (policy instanceof ManualPolicy) {
        const write = this.#writeSession(policy, request, prepared);
        if (write !== undefined) writes.push(write);
      } else if (policy instanceof CacheAwarePolicy) {
        const write = this.#writePrefix(request, url, prepared);
        if (write !== undefined) writes.push(write);
      }
    }
    await Promise.all(writes);
  }

  #writeSession(
    policy: ManualPolicy,
    request: SelectRequest,
    prepared: Prepared | undefined,
  ): Promise<void> | undefined {
    const key = prepared?.sessionKey ?? manualSessionKey(policy, request);
    if (key === undefined) return undefined;
    const placement = manualPlacementOf(policy, key);
    const hashed = sessionKeyOf(key);
    if (placement === undefined || hashed === undefined) return undefined;
    const ttl = manualTtlMs(policy);
    const known = prepared?.session;
    // Unchanged and still well within its TTL: nothing to write.
    if (
      known != null &&
      known.primary === placement.primary &&
      known.secondary === placement.secondary &&
      known.ttlLeftMs > 0.75 * ttl
    )
      return undefined;
    return this.#send(this.#sessionHealth, this.#sessionStats, () =>
      this.#store.putSession(hashed, placement.primary, placement.secondary, ttl),
    );
  }

  #writePrefix(
    request: SelectRequest,
    url: string,
    prepared: Prepared | undefined,
  ): Promise<void> | undefined {
    let blocks = prepared?.blocks;
    if (blocks === undefined) {
      const key = keyOf(request);
      if (key === undefined) return undefined;
      blocks = this.#blocks!.of(typeof request.model === 'string' ? request.model : '', key);
    }
    if (blocks.length === 0) return undefined;
    const c = this.#prefixConfig!;
    // Blocks the index already holds for this worker, recently enough, need no write.
    const held = prepared?.holders?.find((h) => h.url === url);
    const from = held !== undefined && held.ageMs < c.ttlMs / 4 ? held.blocks : 0;
    if (from >= blocks.length) return undefined;
    const keys = from === 0 ? blocks : blocks.slice(from);
    return this.#send(this.#prefixHealth, this.#prefixStats, () =>
      this.#store.recordPrefix(keys, url, c.ttlMs, c.maxHolders),
    );
  }

  /**
   * One write under `health`: dropped while the part is degraded; never rejects. The promise
   * returned settles when the store answers, or after {@link #writeWaitMs} (a late answer is
   * still counted).
   */
  #send(
    health: PartHealth,
    stats: MutableLookupStats,
    call: () => Promise<void>,
  ): Promise<void> | undefined {
    if (health.degraded) {
      stats.dropped++;
      return undefined;
    }
    stats.writes++;
    let sent: Promise<void>;
    try {
      sent = call().catch((error: unknown) => {
        stats.failures++;
        health.failed(error, now());
      });
    } catch (error) {
      stats.failures++;
      health.failed(error, now());
      return undefined;
    }
    return withDeadline(sent, this.#writeWaitMs).then(() => undefined);
  }
}

type MutableLookupStats = {
  -readonly [K in Exclude<keyof SharedLookupStats, 'state'>]: SharedLookupStats[K];
};

function newLookupStats(): MutableLookupStats {
  return { lookups: 0, hits: 0, timeouts: 0, failures: 0, writes: 0, dropped: 0 };
}

const now = (): number => performance.now();

/** The request's routing key as `cache_aware` reads it: tokens when present, else text. */
function keyOf(request: SelectRequest): string | ArrayLike<number> | undefined {
  const tokens = request.tokens;
  if (typeof tokens === 'object' && tokens !== null && tokens.length > 0) return tokens;
  return typeof request.text === 'string' && request.text.length > 0 ? request.text : undefined;
}

function prefixOf(key: string | ArrayLike<number>, units: number): string | ArrayLike<number> {
  if (typeof key === 'string') return key.slice(0, units);
  if (ArrayBuffer.isView(key)) return (key as unknown as Uint32Array).subarray(0, units);
  return Array.prototype.slice.call(key, 0, units) as number[];
}

/** A session key as stored: its hash, never the key itself (a user or session id). */
function sessionKeyOf(key: string): string | undefined {
  const hasher = loadedHasher();
  return hasher === undefined
    ? undefined
    : SESSION_PREFIX + HEX(hasher.h64(`fleetroute:session:${key}`));
}
