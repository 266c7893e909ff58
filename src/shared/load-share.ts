/**
 * Shared in-flight loads: this router's per-worker counts published as changes, the other live
 * routers' counts folded into what the policies read.
 *
 * @module
 * @internal
 */

import { TIMED_OUT, withDeadline } from '../core/bounded-wait.js';
import type { WorkerRegistry } from '../registry/worker-registry.js';
import { workerInternals } from '../workers/worker.js';
import type { WorkerRuntime } from '../workers/worker-runtime.js';
import { PartHealth } from './part-health.js';
import type { SharedLoadStats } from './shared-state-stats.js';
import type { LoadEntry, SharedStore } from './shared-store.js';
import { isLoadEntry, isTally, MAX_SHARED_COUNT } from './store-values.js';

/** @internal Resolved options of the loads part. */
export interface LoadShareConfig {
  readonly refreshMs: number;
  readonly liveMs: number;
  readonly timeoutMs: number;
}

/**
 * @internal One router's share of the fleet's in-flight counts. At most one sync is in flight;
 * a refresh that comes while one is pending is skipped, so a slow store never piles calls up.
 */
export class LoadShare {
  readonly health: PartHealth;
  readonly stats: SharedLoadStats = {
    syncs: 0,
    failures: 0,
    timeouts: 0,
    rebuilds: 0,
    routers: 0,
    ignored: 0,
  };
  readonly #store: SharedStore;
  readonly #routerId: string;
  readonly #config: LoadShareConfig;
  readonly #now: () => number;
  #registry: WorkerRegistry | undefined;
  /** What the store holds for this router, as of the last accepted sync. */
  readonly #published = new Map<string, { load: number; prefilling: number }>();
  /** Workers whose remote count this share set above zero. */
  #remote = new Map<string, WorkerRuntime>();
  #full = true;
  #epoch = '';
  #epochs = 0;
  #pending: Promise<void> | undefined;
  #queued: Promise<void> | undefined;
  /** The last sync was refused: the next one, in full, follows at once. */
  #refused = false;
  #lastOk = Number.NEGATIVE_INFINITY;
  #closed = false;

  constructor(store: SharedStore, routerId: string, config: LoadShareConfig, now: () => number) {
    this.#store = store;
    this.#routerId = routerId;
    this.#config = config;
    this.#now = now;
    // A sync that fails or stalls past `timeoutMs` degrades at once: misses are never counted.
    this.health = new PartHealth('loads', 1);
  }

  attach(registry: WorkerRegistry): void {
    this.#registry = registry;
  }

  /**
   * A sync that reads this router's counts as they are now: at once, or right after the one in
   * flight (calls while that one waits share it). Never rejects.
   */
  sync(): Promise<void> {
    if (this.#closed || this.#registry === undefined) return Promise.resolve();
    const pending = this.#pending;
    if (pending === undefined) return this.#start();
    this.#queued ??= pending.then(() => {
      this.#queued = undefined;
      return this.#start();
    });
    return this.#queued;
  }

  /** The timer's sync: skipped while one is in flight, so a slow store never piles calls up. */
  tick(): void {
    if (this.#pending === undefined && !this.#closed && this.#registry !== undefined)
      void this.#start();
  }

  #start(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    const run = this.#sync().finally(() => {
      if (this.#pending === run) this.#pending = undefined;
    });
    this.#pending = run;
    // Refused (the store lost this router's counts): rewrite them at once, not a refresh later.
    return run.then(() => {
      if (!this.#refused) return;
      this.#refused = false;
      return this.sync();
    });
  }

  /** Stops syncing, clears the remote counts, and withdraws this router's share. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#queued;
    await this.#pending;
    this.#clearRemote();
    try {
      await withDeadline(this.#store.leave(this.#routerId), this.#config.timeoutMs);
    } catch {
      // Best effort: the heartbeat window retires this router's counts anyway.
    }
  }

  async #sync(): Promise<void> {
    const registry = this.#registry!;
    const full = this.#full;
    if (full) this.#epoch = `${this.#routerId}#${++this.#epochs}`;
    const entries = this.#changes(registry, full);
    const started = this.#now();
    try {
      const reply = await withDeadline(
        this.#store.syncLoads({
          routerId: this.#routerId,
          epoch: this.#epoch,
          full,
          entries,
          liveMs: this.#config.liveMs,
        }),
        this.#config.timeoutMs,
      );
      if (this.#closed) return;
      if (reply === TIMED_OUT) {
        this.stats.timeouts++;
        this.#lost(started);
        this.health.stalled(started);
        return;
      }
      this.stats.syncs++;
      if (!reply.accepted) {
        // The store lost this router's counts (restarted empty, or they expired in a stall).
        this.#full = true;
        this.#refused = true;
      } else {
        if (full) {
          this.stats.rebuilds++;
          this.#published.clear();
        }
        for (const e of entries) {
          if (e.load > 0 || e.prefilling > 0)
            this.#published.set(e.url, { load: e.load, prefilling: e.prefilling });
          else this.#published.delete(e.url);
        }
        this.#full = false;
      }
      const stats = this.stats;
      if (isTally(reply.routers)) stats.routers = reply.routers;
      else stats.ignored++;
      if (isTally(reply.ignored)) stats.ignored += reply.ignored;
      else if (reply.ignored !== undefined) stats.ignored++;
      this.#lastOk = this.#now();
      stats.ignored += this.#apply(registry, reply.loads);
      this.health.ok();
    } catch (error) {
      if (this.#closed) return;
      this.stats.failures++;
      this.#lost(started);
      this.health.failed(error, started);
    }
  }

  /** After a failed sync: send everything next time; forget other routers once their view is too old. */
  #lost(now: number): void {
    this.#full = true;
    if (now - this.#lastOk > this.#config.liveMs) this.#clearRemote();
  }

  /** This router's counts that differ from what the store holds (all non-zero ones when `full`). */
  #changes(registry: WorkerRegistry, full: boolean): LoadEntry[] {
    const entries: LoadEntry[] = [];
    const published = this.#published;
    const seen = full ? undefined : new Set<string>();
    for (const worker of registry.getAll()) {
      const rt = workerInternals.runtimeOf(worker);
      // Beyond the bound, the others would ignore the count: they read the bound instead.
      const load = Math.min(rt.localLoad, MAX_SHARED_COUNT);
      const prefilling = Math.min(rt.localPrefilling, load);
      const url = worker.url;
      if (full) {
        if (load > 0) entries.push({ url, load, prefilling });
        continue;
      }
      seen!.add(url);
      const before = published.get(url);
      if (
        before === undefined ? load > 0 : before.load !== load || before.prefilling !== prefilling
      )
        entries.push({ url, load, prefilling });
    }
    if (seen !== undefined)
      for (const url of published.keys())
        if (!seen.has(url)) entries.push({ url, load: 0, prefilling: 0 });
    return entries;
  }

  /**
   * Sets every worker's remote count from the other routers' sums, and clears it on every
   * runtime set before that is not set now — also when its URL now belongs to another runtime (a
   * worker removed and registered again), whose old groups would otherwise keep the count. An
   * entry outside what routers write (see `isLoadEntry`) is ignored.
   *
   * @returns how many entries were ignored. O(workers in the answer + workers set before).
   */
  #apply(registry: WorkerRegistry, loads: readonly LoadEntry[]): number {
    let ignored = 0;
    const next = new Map<string, WorkerRuntime>();
    if (Array.isArray(loads)) {
      for (const e of loads) {
        if (!isLoadEntry(e)) {
          ignored++;
          continue;
        }
        const worker = registry.getByUrl(e.url);
        if (worker === undefined) continue;
        const rt = workerInternals.runtimeOf(worker);
        rt.setRemote(e.load, e.prefilling);
        if (rt.remoteLoad > 0) next.set(e.url, rt);
      }
    } else ignored++;
    for (const [url, rt] of this.#remote) if (next.get(url) !== rt) rt.setRemote(0, 0);
    this.#remote = next;
    return ignored;
  }

  #clearRemote(): void {
    for (const rt of this.#remote.values()) rt.setRemote(0, 0);
    this.#remote.clear();
  }
}
