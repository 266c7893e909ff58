/**
 * The options of `SharedState`: its own, and those of each part (loads, sessions, prefix
 * index), each declared once in an option table.
 *
 * @module
 */
import { custom, duration, integer, OptionTable } from '../core/option-table.js';
import { readString } from '../core/options.js';
import type { SharedStore } from './shared-store.js';

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
  /**
   * A sync not answered after this long (ms) counts as failed, and degrades the loads part at
   * once. @defaultValue 1000
   */
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
   * Lookup deadline misses in a row after which `sessions` or `prefixIndex` counts as degraded:
   * it stops waiting on the store (lookups run in the background, one per `probeMs`) until one
   * answers in time. (`loads` degrades on its first sync past `loads.timeoutMs`.)
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
