/**
 * `MemorySharedStore`: a {@link SharedStore} in this process, for routers that share one
 * process, for tests, and for the simulator. Same semantics as the Redis store.
 *
 * @module
 */
import { callback, integer, OptionTable } from '../core/option-table.js';
import type {
  LoadEntry,
  LoadSync,
  LoadSyncReply,
  PrefixHolder,
  SessionRecord,
  SharedStore,
} from './shared-store.js';

/** Options of {@link MemorySharedStore}. @public */
export interface MemorySharedStoreOptions {
  /** Time source (ms): heartbeats, session TTLs and prefix ages. @defaultValue `Date.now` */
  readonly clock?: () => number;
  /** Most prefix blocks held; beyond it the least recently recorded go. @defaultValue 1000000 */
  readonly maxBlocks?: number;
  /** Most sessions held; beyond it the least recently stored go. @defaultValue 1000000 */
  readonly maxSessions?: number;
}

/** @internal The options of the memory store. */
export const MEMORY_STORE_OPTIONS = new OptionTable(
  'MemorySharedStore',
  'MemorySharedStoreOptions',
  {
    clock: callback<() => number>('a function', Date.now, '`Date.now`'),
    maxBlocks: integer(1_000_000, 1, 2 ** 31 - 1),
    maxSessions: integer(1_000_000, 1, 2 ** 31 - 1),
  },
);

interface RouterShare {
  heartbeat: number;
  epoch: string;
  readonly counts: Map<string, { load: number; prefilling: number }>;
}

interface StoredSession {
  readonly primary: string;
  readonly secondary: string | undefined;
  readonly expiresAt: number;
}

/**
 * A shared store in this process's memory. Routers built in one process share state by sharing
 * one instance; it is also what `fleetroute simulate --shared-state memory` runs on. Every
 * method answers on a later microtask, like a remote store, and never rejects.
 *
 * Memory: about 100 bytes per (block, holder) and per session, bounded by `maxBlocks` and
 * `maxSessions`; a router's counts go when it leaves or after 10 × its live window.
 *
 * @example
 * ```ts
 * const store = new MemorySharedStore();
 * const a = new Router({ registry: registryA, transport, shared: new SharedState({ store }) });
 * const b = new Router({ registry: registryB, transport, shared: new SharedState({ store }) });
 * ```
 * @public
 */
export class MemorySharedStore implements SharedStore {
  readonly kind = 'memory';
  readonly #clock: () => number;
  readonly #maxBlocks: number;
  readonly #maxSessions: number;
  readonly #routers = new Map<string, RouterShare>();
  readonly #sessions = new Map<string, StoredSession>();
  readonly #blocks = new Map<string, Map<string, number>>();

  /** @throws {@link FleetRouteError} `INVALID_ARGUMENT` naming a bad option. */
  constructor(options: MemorySharedStoreOptions = {}) {
    const o = MEMORY_STORE_OPTIONS.read(options);
    this.#clock = o.clock ?? Date.now;
    this.#maxBlocks = o.maxBlocks;
    this.#maxSessions = o.maxSessions;
  }

  /** Routers with counts or a heartbeat held (dead ones until they are dropped). O(1). */
  get routerCount(): number {
    return this.#routers.size;
  }

  /** Prefix blocks held. O(1). */
  get blockCount(): number {
    return this.#blocks.size;
  }

  /** Sessions held (expired ones until they are read or evicted). O(1). */
  get sessionCount(): number {
    return this.#sessions.size;
  }

  async syncLoads(sync: LoadSync): Promise<LoadSyncReply> {
    await undefined;
    const now = this.#clock();
    let mine = this.#routers.get(sync.routerId);
    let accepted = true;
    if (sync.full) {
      mine = { heartbeat: now, epoch: sync.epoch, counts: new Map() };
      this.#routers.set(sync.routerId, mine);
    } else if (mine === undefined || mine.epoch !== sync.epoch) {
      accepted = false;
      if (mine === undefined) {
        mine = { heartbeat: now, epoch: '', counts: new Map() };
        this.#routers.set(sync.routerId, mine);
      }
    }
    mine.heartbeat = now;
    if (accepted) {
      for (const e of sync.entries) {
        if (e.load > 0 || e.prefilling > 0)
          mine.counts.set(e.url, { load: e.load, prefilling: e.prefilling });
        else mine.counts.delete(e.url);
      }
    }
    const sums = new Map<string, { load: number; prefilling: number }>();
    let routers = 0;
    for (const [id, share] of this.#routers) {
      if (id === sync.routerId) continue;
      const age = now - share.heartbeat;
      if (age > 10 * sync.liveMs) {
        this.#routers.delete(id);
        continue;
      }
      if (age > sync.liveMs) continue;
      routers++;
      for (const [url, c] of share.counts) {
        const sum = sums.get(url);
        if (sum === undefined) sums.set(url, { load: c.load, prefilling: c.prefilling });
        else {
          sum.load += c.load;
          sum.prefilling += c.prefilling;
        }
      }
    }
    const loads: LoadEntry[] = [];
    for (const [url, c] of sums) loads.push({ url, load: c.load, prefilling: c.prefilling });
    return { accepted, routers, loads };
  }

  async leave(routerId: string): Promise<void> {
    await undefined;
    this.#routers.delete(routerId);
  }

  async getSession(key: string): Promise<SessionRecord | undefined> {
    await undefined;
    const s = this.#sessions.get(key);
    if (s === undefined) return undefined;
    const left = s.expiresAt - this.#clock();
    if (left <= 0) {
      this.#sessions.delete(key);
      return undefined;
    }
    return s.secondary === undefined
      ? { primary: s.primary, ttlLeftMs: left }
      : { primary: s.primary, secondary: s.secondary, ttlLeftMs: left };
  }

  async putSession(
    key: string,
    primary: string,
    secondary: string | undefined,
    ttlMs: number,
  ): Promise<void> {
    await undefined;
    const sessions = this.#sessions;
    sessions.delete(key);
    if (sessions.size >= this.#maxSessions) {
      for (const oldest of sessions.keys()) {
        sessions.delete(oldest);
        break;
      }
    }
    sessions.set(key, { primary, secondary, expiresAt: this.#clock() + ttlMs });
  }

  async matchPrefix(
    blocks: readonly string[],
    ttlMs: number,
    maxHolders: number,
  ): Promise<readonly PrefixHolder[]> {
    await undefined;
    if (blocks.length === 0) return [];
    const now = this.#clock();
    const cutoff = now - ttlMs;
    const first = this.#blocks.get(blocks[0]!);
    if (first === undefined) return [];
    const fresh: [string, number][] = [];
    for (const [url, at] of first) if (at >= cutoff) fresh.push([url, at]);
    // Newest first; equal times in reverse byte order of the URL, as Redis's ZRANGE … REV.
    fresh.sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? 1 : a[0] > b[0] ? -1 : 0));
    const candidates = fresh.slice(0, maxHolders);
    // The deepest block any of them holds, by binary search (a worker's blocks are recorded
    // together, so holding is monotone along the chain), as the Redis script does; the answer
    // is the candidates holding that block.
    let lo = 0;
    let hi = blocks.length - 1;
    let holding = candidates;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      const at = this.#blocks.get(blocks[mid]!);
      const found =
        at === undefined
          ? []
          : candidates.filter(([url]) => {
              const seen = at.get(url);
              return seen !== undefined && seen >= cutoff;
            });
      if (found.length > 0) {
        lo = mid;
        holding = found;
      } else hi = mid - 1;
    }
    const out: PrefixHolder[] = holding.map(([url, at]) => ({
      url,
      blocks: lo + 1,
      ageMs: now - at,
    }));
    return out;
  }

  async recordPrefix(
    blocks: readonly string[],
    url: string,
    _ttlMs: number,
    maxHolders: number,
  ): Promise<void> {
    await undefined;
    const now = this.#clock();
    const all = this.#blocks;
    for (const block of blocks) {
      let holders = all.get(block);
      if (holders === undefined) {
        if (all.size >= this.#maxBlocks) {
          for (const oldest of all.keys()) {
            all.delete(oldest);
            break;
          }
        }
        holders = new Map();
      } else {
        all.delete(block);
      }
      all.set(block, holders);
      const isNew = !holders.has(url);
      holders.set(url, now);
      if (isNew && holders.size > maxHolders) {
        // The oldest goes; equal times the lowest URL first, as Redis's ZREMRANGEBYRANK.
        let oldest: string | undefined;
        let oldestAt = 0;
        for (const [u, at] of holders) {
          if (oldest === undefined || at < oldestAt || (at === oldestAt && u < oldest)) {
            oldest = u;
            oldestAt = at;
          }
        }
        holders.delete(oldest!);
      }
    }
  }
}
