/**
 * `DnsDiscovery`: keeps a `WorkerRegistry` in step with a DNS name.
 *
 * @module
 */
import { promises as dns } from 'node:dns';
import { EventEmitter } from 'eventemitter3';
import { FleetRouteError, invalidArgument } from '../core/errors.js';
import { log } from '../core/logger.js';
import { fail } from '../core/options.js';
import type { WorkerRegistry } from '../registry/worker-registry.js';
import type { WorkerSpec } from '../workers/worker-spec.js';
import { type DnsAnswer, type DnsResolverLike, lookupWorkers } from './dns-answer.js';
import {
  type DnsDiscoveryOptions,
  type ResolvedDnsDiscoveryOptions,
  resolveDnsDiscoveryOptions,
} from './dns-discovery-options.js';
import type {
  DnsDiscoveryEvent,
  DnsDiscoveryEventMap,
  DnsDiscoveryStats,
  DnsRefresh,
  DnsUpdatedEvent,
} from './dns-events.js';
import { dueForRemoval, type OwnedWorker, planAnswer } from './owned-workers.js';

const CLOSED: DnsRefresh = Object.freeze({ type: 'closed' });
const NONE: readonly string[] = Object.freeze([]);

/** The lists of an `updated` event, filled as a lookup's answer is applied. */
interface Changes {
  readonly added: string[];
  readonly revived: string[];
  readonly draining: string[];
  readonly removed: string[];
  readonly foreign: string[];
}

const noChanges = (): Changes => ({
  added: [],
  revived: [],
  draining: [],
  removed: [],
  foreign: [],
});

/** A resolver handed to the next constructor call by {@link createDnsDiscoveryWithResolver}. */
let injectedResolver: DnsResolverLike | undefined;

/**
 * @internal A discovery that asks `resolver` instead of Node's (tests stand in for DNS with it).
 * @throws as the constructor does.
 */
export function createDnsDiscoveryWithResolver(
  registry: WorkerRegistry,
  options: DnsDiscoveryOptions,
  resolver: DnsResolverLike,
): DnsDiscovery {
  injectedResolver = resolver;
  try {
    return new DnsDiscovery(registry, options);
  } finally {
    injectedResolver = undefined;
  }
}

/**
 * Keeps a {@link WorkerRegistry} in step with a DNS name: the A and AAAA records of a Kubernetes
 * headless Service, or SRV records with their ports. Each lookup registers the new addresses,
 * drains the vanished ones (status `draining`, then removed once nothing is in flight or after
 * `drainMs`), and brings back a draining worker whose address returns. A failed or empty lookup
 * changes nothing: the last good answer is kept, and reported (`lookup_failed`, `empty`).
 *
 * It only ever changes workers it registered itself: a worker registered by hand keeps its URL,
 * status and spec even when the DNS answer names it, and is never drained nor removed. The
 * lookups use Node's own resolver (`node:dns`), so there is no peer to install.
 *
 * @example
 * ```ts
 * import { DnsDiscovery } from 'fleetroute/dns';
 *
 * const discovery = new DnsDiscovery(registry, {
 *   name: 'vllm.llm.svc.cluster.local', // a headless Service
 *   port: 8000,
 *   runtime: 'vllm',
 *   models: ['llama-3-8b'],
 * });
 * discovery.on('lookup_failed', (e) => console.warn(e.code, 'keeping', e.keeping));
 * await discovery.start(); // the first lookup is applied
 * ```
 * @public
 */
export class DnsDiscovery {
  readonly #registry: WorkerRegistry;
  readonly #options: ResolvedDnsDiscoveryOptions;
  readonly #resolver: DnsResolverLike;
  readonly #emitter = new EventEmitter<DnsDiscoveryEventMap>();
  /** The workers this discovery registered, by URL (the registry's normalised form). */
  readonly #owned = new Map<string, OwnedWorker>();
  /** Every refresh and sweep runs after the previous one: one chain, never two at once. */
  #tail: Promise<unknown> = Promise.resolve();
  /** A refresh queued and not begun: later callers share it. */
  #nextRefresh: Promise<DnsRefresh> | undefined;
  #sweepQueued = false;
  #started = false;
  #closed = false;
  #lookupTimer: ReturnType<typeof setTimeout> | undefined;
  #drainTimer: ReturnType<typeof setTimeout> | undefined;
  #lookups = 0;
  #failures = 0;
  #empties = 0;
  #ignored = 0;
  #registryErrors = 0;
  #lastProblem: string | undefined;

  /**
   * Validates the options; starts nothing (see {@link DnsDiscovery.start}).
   *
   * @throws {@link FleetRouteError} `INVALID_ARGUMENT` naming the first bad option (an unknown
   *   key, a missing `name`, a missing `port` for A / AAAA records, a bad server address).
   */
  constructor(registry: WorkerRegistry, options: DnsDiscoveryOptions) {
    this.#options = resolveDnsDiscoveryOptions(options);
    this.#resolver = injectedResolver ?? systemResolver(this.#options);
    if (typeof (registry as Partial<WorkerRegistry> | null)?.getIdByUrl !== 'function')
      fail('dnsDiscovery registry', 'a WorkerRegistry', registry);
    this.#registry = registry;
  }

  // ─── 1. Lifecycle ──────────────────────────────────────────────────────────────────────

  /**
   * Starts following the name: a lookup now, then one per interval (the earlier of
   * `intervalMs` and the answer's smallest TTL, at least `minIntervalMs`). A second call starts
   * nothing more; it runs one more lookup, as {@link DnsDiscovery.refresh} does.
   *
   * @returns the first lookup's result, once applied; never rejects.
   * @throws {@link FleetRouteError} `CLOSED` after `close()`.
   *
   * Emits: what the lookup reports. Cost: one lookup.
   */
  start(): Promise<DnsRefresh> {
    if (this.#closed) throw new FleetRouteError('CLOSED', 'the DNS discovery was closed');
    this.#started = true;
    return this.refresh();
  }

  /**
   * Looks the name up now and applies the answer. Lookups never overlap: a call during one
   * waits for it and then looks up again (calls made meanwhile share that second lookup). When
   * started, the next timed lookup is counted from this one.
   *
   * @returns what the lookup did: `updated` (even with nothing changed), `lookup_failed`,
   *   `empty`, or `closed` when `close()` came first. Never rejects.
   *
   * Emits: `updated` when a list of it is non-empty, else `lookup_failed` or `empty`; and
   * `event` with each. Cost: one lookup, then one registry call per worker changed.
   */
  refresh(): Promise<DnsRefresh> {
    if (this.#closed) return Promise.resolve(CLOSED);
    if (this.#nextRefresh !== undefined) return this.#nextRefresh;
    const next = this.#serial(() => {
      this.#nextRefresh = undefined;
      return this.#refreshNow();
    });
    this.#nextRefresh = next;
    return next;
  }

  /**
   * Stops the lookups and the drain timers; a lookup in flight is cancelled and its answer
   * ignored. The workers registered stay in the registry as they are (draining ones too): the
   * registry is the caller's. Idempotent.
   *
   * @returns once any registry change under way has ended. Emits: nothing.
   */
  async close(): Promise<void> {
    this.#stop();
    await this.#tail;
  }

  // ─── 2. Events and reads ───────────────────────────────────────────────────────────────

  /**
   * Adds a listener for one event type (`event`: every event). A listener that throws is
   * reported as a `FLEETROUTE_LISTENER_THREW` process warning; the discovery goes on.
   *
   * @returns this discovery. Cost: O(1).
   */
  on<K extends keyof DnsDiscoveryEventMap>(type: K, listener: DnsDiscoveryEventMap[K]): this {
    this.#emitter.on(type, listener as never);
    return this;
  }

  /** Removes a listener added with {@link DnsDiscovery.on}. @returns this discovery. Cost: O(listeners). */
  off<K extends keyof DnsDiscoveryEventMap>(type: K, listener: DnsDiscoveryEventMap[K]): this {
    this.#emitter.off(type, listener as never);
    return this;
  }

  /**
   * The URLs of the workers this discovery registered and keeps (draining ones included), as
   * the registry keys them.
   *
   * @returns a new sorted array. Cost: O(n log n).
   */
  ownedUrls(): string[] {
    return [...this.#owned.keys()].sort();
  }

  /** @returns a plain snapshot of the counters. Cost: O(owned). */
  stats(): DnsDiscoveryStats {
    let draining = 0;
    for (const mine of this.#owned.values()) if (mine.draining) draining++;
    return {
      lookups: this.#lookups,
      failures: this.#failures,
      empties: this.#empties,
      workers: this.#owned.size - draining,
      draining,
      ignored: this.#ignored,
      registryErrors: this.#registryErrors,
      lastProblem: this.#lastProblem,
    };
  }

  // ─── 3. A lookup and its answer ────────────────────────────────────────────────────────

  async #refreshNow(): Promise<DnsRefresh> {
    if (this.#closed) return CLOSED;
    const o = this.#options;
    const answer = await lookupWorkers(this.#resolver, o, o.timeoutMs);
    if (this.#closed) return CLOSED;
    this.#lookups++;
    let event: DnsDiscoveryEvent;
    if (answer.kind === 'found') {
      event = await this.#apply(answer);
      this.#lastProblem = undefined;
    } else {
      this.#forgetLost();
      const keeping = this.#keeping();
      this.#lastProblem = answer.code;
      if (answer.kind === 'failed') {
        this.#failures++;
        event = { type: 'lookup_failed', code: answer.code, message: answer.message, keeping };
      } else {
        this.#empties++;
        event = { type: 'empty', code: answer.code, keeping };
      }
      // Workers already draining still leave on time; their removal is reported on its own.
      const changes = noChanges();
      await this.#sweep(changes);
      if (changes.removed.length > 0 && !this.#closed)
        this.#emit(this.#updated(changes, this.#ignored));
    }
    if (this.#closed) return CLOSED;
    if (event.type !== 'updated' || changed(event)) this.#emit(event);
    this.#schedule(answer);
    return event;
  }

  /** Applies a non-empty answer: registers, revives and drains, then removes what is due. */
  async #apply(answer: Extract<DnsAnswer, { kind: 'found' }>): Promise<DnsUpdatedEvent> {
    this.#forgetLost();
    this.#ignored = answer.ignored;
    const plan = planAnswer(this.#owned, answer.urls);
    const changes = noChanges();
    for (const url of plan.add) if (!this.#closed) await this.#add(url, changes);
    for (const url of plan.revive) if (!this.#closed) await this.#revive(url, changes);
    for (const url of plan.drain) if (!this.#closed) await this.#drain(url, changes);
    await this.#sweep(changes);
    return this.#updated(changes, answer.ignored);
  }

  async #add(url: string, changes: Changes): Promise<void> {
    if (this.#registry.getIdByUrl(url) !== undefined) {
      changes.foreign.push(url);
      return;
    }
    const worker = await this.#mutate(
      () => this.#registry.register(this.#specFor(url)),
      url,
      changes,
    );
    if (worker === undefined) return;
    this.#owned.set(url, { id: worker.id, draining: false, drainedAt: 0, previous: worker.status });
    changes.added.push(url);
  }

  /**
   * A draining worker is back: its status before the drain is restored, then it is replaced
   * with the same spec, so a router's health loop (which stopped at `draining`) probes it again.
   */
  async #revive(url: string, changes: Changes): Promise<void> {
    const mine = this.#owned.get(url)!;
    const done = await this.#mutate(
      async () => {
        await this.#registry.transitionStatus(mine.id, mine.previous, {
          expectedStatus: 'draining',
        });
        return this.#registry.replace(mine.id, this.#specFor(url));
      },
      url,
      changes,
    );
    if (done === undefined) return;
    mine.draining = false;
    changes.revived.push(url);
  }

  async #drain(url: string, changes: Changes): Promise<void> {
    const mine = this.#owned.get(url)!;
    const worker = this.#registry.get(mine.id);
    if (worker === undefined) {
      this.#owned.delete(url);
      return;
    }
    mine.previous = worker.status;
    mine.drainedAt = this.#options.clock();
    if (this.#options.drainMs > 0 && worker.load > 0) {
      const done = await this.#mutate(
        () => this.#registry.transitionStatus(mine.id, 'draining').then(() => true),
        url,
        changes,
      );
      if (done === undefined) return;
    }
    mine.draining = true;
    changes.draining.push(url);
  }

  /** Removes the draining workers that are due (nothing in flight, or past `drainMs`). */
  async #sweep(changes: Changes): Promise<void> {
    const o = this.#options;
    const due = dueForRemoval(this.#owned, o.clock(), o.drainMs, o.maxWorkers, (url) => {
      const worker = this.#registry.get(this.#owned.get(url)!.id);
      return worker === undefined ? 0 : worker.load;
    });
    for (const url of due) {
      if (this.#closed) return;
      const mine = this.#owned.get(url)!;
      const removed = await this.#mutate(() => this.#registry.remove(mine.id), url, changes);
      this.#owned.delete(url);
      if (removed !== undefined) changes.removed.push(url);
    }
    this.#watchDrains();
  }

  // ─── 4. Helpers ────────────────────────────────────────────────────────────────────────

  /**
   * Runs one registry call. A URL taken meanwhile by a hand-registered worker is counted
   * foreign; a closed registry closes this discovery; any other error is counted.
   * @returns the call's result, or `undefined` when it threw.
   */
  async #mutate<T>(call: () => Promise<T>, url: string, changes: Changes): Promise<T | undefined> {
    try {
      return await call();
    } catch (error) {
      const code = error instanceof FleetRouteError ? error.code : undefined;
      if (code === 'DUPLICATE_URL') changes.foreign.push(url);
      else if (code === 'CLOSED') this.#stop();
      else this.#registryErrors++;
      return undefined;
    }
  }

  /** Forgets owned workers no longer in the registry under the id they were registered with. */
  #forgetLost(): void {
    for (const [url, mine] of this.#owned) {
      if (this.#registry.getIdByUrl(url) !== mine.id) this.#owned.delete(url);
    }
  }

  #keeping(): number {
    let n = 0;
    for (const mine of this.#owned.values()) if (!mine.draining) n++;
    return n;
  }

  #updated(changes: Changes, ignored: number): DnsUpdatedEvent {
    return {
      type: 'updated',
      added: frozen(changes.added),
      revived: frozen(changes.revived),
      draining: frozen(changes.draining.filter((url) => !changes.removed.includes(url))),
      removed: frozen(changes.removed),
      foreign: frozen(changes.foreign),
      ignored,
      workers: this.#keeping(),
    };
  }

  #specFor(url: string): WorkerSpec {
    const o = this.#options;
    return {
      url,
      runtime: o.runtime,
      type: o.type,
      ...(o.models === undefined ? {} : { models: o.models }),
      ...(o.labels === undefined ? {} : { labels: o.labels }),
      ...(o.status === undefined ? {} : { status: o.status }),
    };
  }

  #emit(event: DnsDiscoveryEvent): void {
    for (const type of [event.type, 'event'] as const) {
      for (const listener of this.#emitter.listeners(type) as ((e: DnsDiscoveryEvent) => void)[]) {
        try {
          listener(event);
        } catch (error) {
          log(
            undefined,
            'warn',
            'FLEETROUTE_LISTENER_THREW',
            `a DnsDiscovery '${type}' listener threw (${error instanceof Error ? error.message : String(error)}); discovery goes on`,
          );
        }
      }
    }
  }

  /** Runs `task` after every task queued before it. */
  #serial<T>(task: () => Promise<T>): Promise<T> {
    const run = this.#tail.then(task);
    this.#tail = run.then(ignore, ignore);
    return run;
  }

  /** The next timed lookup, when started: after the answer's TTL or the interval. */
  #schedule(answer: DnsAnswer): void {
    if (!this.#started || this.#closed) return;
    const o = this.#options;
    const ttl = answer.kind === 'found' ? answer.ttlMs : undefined;
    const delay = Math.max(o.minIntervalMs, Math.min(o.intervalMs, ttl ?? o.intervalMs));
    clearTimeout(this.#lookupTimer);
    this.#lookupTimer = setTimeout(() => void this.refresh(), delay);
    this.#lookupTimer.unref?.();
  }

  /**
   * While workers drain, one timer: at the earliest drain deadline, or sooner, after
   * `minIntervalMs`, to remove a drained worker whose last request has ended (its `load` is read
   * then: the public reads only, so a registry from another copy of the package works too).
   */
  #watchDrains(): void {
    clearTimeout(this.#drainTimer);
    this.#drainTimer = undefined;
    let earliest = Number.POSITIVE_INFINITY;
    for (const mine of this.#owned.values())
      if (mine.draining) earliest = Math.min(earliest, mine.drainedAt + this.#options.drainMs);
    if (this.#closed || earliest === Number.POSITIVE_INFINITY) return;
    const untilDeadline = Math.max(0, Math.ceil(earliest - this.#options.clock()));
    this.#drainTimer = setTimeout(
      () => this.#requestSweep(),
      Math.min(untilDeadline, this.#options.minIntervalMs),
    );
    this.#drainTimer.unref?.();
  }

  /** Queues one sweep (several requests before it runs share it). */
  #requestSweep(): void {
    if (this.#sweepQueued || this.#closed) return;
    this.#sweepQueued = true;
    void this.#serial(async () => {
      this.#sweepQueued = false;
      if (this.#closed) return;
      this.#forgetLost();
      const changes = noChanges();
      await this.#sweep(changes);
      if (changes.removed.length > 0 && !this.#closed)
        this.#emit(this.#updated(changes, this.#ignored));
    });
  }

  #stop(): void {
    if (this.#closed) return;
    this.#closed = true;
    clearTimeout(this.#lookupTimer);
    clearTimeout(this.#drainTimer);
    this.#resolver.cancel();
  }
}

const ignore = (): void => {};

function frozen(list: string[]): readonly string[] {
  return list.length === 0 ? NONE : Object.freeze(list);
}

function changed(e: DnsUpdatedEvent): boolean {
  return e.added.length + e.revived.length + e.draining.length + e.removed.length > 0;
}

/** Node's resolver, on the options' servers (else the system's), for one discovery. */
function systemResolver(o: ResolvedDnsDiscoveryOptions): DnsResolverLike {
  // Two tries of half the deadline each: one lost UDP datagram does not fail the lookup.
  const resolver = new dns.Resolver({ timeout: Math.max(1, Math.ceil(o.timeoutMs / 2)), tries: 2 });
  if (o.servers !== undefined) {
    try {
      resolver.setServers([...o.servers]);
    } catch (error) {
      throw invalidArgument(
        `dnsDiscovery.servers must be 'ip' or 'ip:port' addresses: ${(error as Error).message}`,
      );
    }
  }
  return resolver as unknown as DnsResolverLike;
}
