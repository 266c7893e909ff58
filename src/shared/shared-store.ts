/**
 * `SharedStore`: the few operations shared state needs from a store several routers reach —
 * in memory (`MemorySharedStore`) or Redis (`RedisSharedStore` from `fleetroute/redis`).
 *
 * @module
 */

/**
 * One worker's in-flight counts from one router (a change to publish), or the sum over the
 * other routers (what a sync answers). `load: 0` with `prefilling: 0` removes the entry.
 *
 * @public
 */
export interface LoadEntry {
  /** The worker's URL: the same worker has the same URL in every router's registry. */
  readonly url: string;
  /** Requests in flight. */
  readonly load: number;
  /** Of those, requests still awaiting their first token. */
  readonly prefilling: number;
}

/** What a router sends on each load sync. @public */
export interface LoadSync {
  /** This router's id: its counts are its own, and never summed into its own view. */
  readonly routerId: string;
  /**
   * Names the contribution this router last wrote in full. A store that does not hold it (it
   * restarted empty, or the contribution expired during a stall) refuses a partial update.
   */
  readonly epoch: string;
  /** `true`: `entries` are all of this router's non-zero counts, replacing what was stored. */
  readonly full: boolean;
  /** Changed counts since the last accepted sync (or all of them when `full`). */
  readonly entries: readonly LoadEntry[];
  /** A router whose last sync is older than this (ms) is dead: its counts are not summed. */
  readonly liveMs: number;
}

/** A store's answer to {@link LoadSync}. @public */
export interface LoadSyncReply {
  /** `false`: the store lost this router's contribution; send it again in full. */
  readonly accepted: boolean;
  /** Live routers other than the caller. */
  readonly routers: number;
  /** The other live routers' counts, summed per worker (workers at zero are left out). */
  readonly loads: readonly LoadEntry[];
  /**
   * Values the store read and left out of the sums because no router could have written them
   * (shared state adds them to `stats().loads.ignored`); absent: none.
   */
  readonly ignored?: number;
}

/** A shared sticky session: the workers a routing key is placed on. @public */
export interface SessionRecord {
  readonly primary: string;
  readonly secondary?: string;
  /** Time left before the store forgets the key (ms). */
  readonly ttlLeftMs: number;
}

/**
 * A worker the prefix index says was recently sent a request's first `blocks` blocks: one of
 * the holders of the longest run the index knows for that request. @public
 */
export interface PrefixHolder {
  readonly url: string;
  /** Consecutive blocks from the start of the request held by this worker (at least 1). */
  readonly blocks: number;
  /**
   * How long ago the first block was last recorded for this worker (ms). Negative for a record
   * dated ahead of the store's clock, which no router writes: a store may answer such records
   * after the holders, for shared state to count them.
   */
  readonly ageMs: number;
}

/**
 * The operations shared state runs against a store. Every method is one round trip for a
 * remote store, and may reject (the caller degrades to local state); none is called inside
 * `select`. Keys are opaque strings chosen by the caller (hashes: no prompt text or routing key
 * in the clear); the store prefixes them with its namespace.
 *
 * Shared state trusts nothing a store answers: a value outside what a router writes (a count
 * above 65,536 or not an integer, a URL longer than 32,768 characters, a session without a time
 * left, a holder dated ahead of the store's clock) is ignored and counted in `stats()`. A store
 * bounds what it reads in size, so that answering never costs more than the answer's bounds.
 *
 * @public
 */
export interface SharedStore {
  /** `'memory'`, `'redis'`, …: for messages and stats. */
  readonly kind: string;
  /** Publishes this router's changed counts and heartbeat; reads the other live routers' sums. */
  syncLoads(sync: LoadSync): Promise<LoadSyncReply>;
  /** Removes this router's counts and heartbeat (a clean shutdown). */
  leave(routerId: string): Promise<void>;
  /** A session's workers, or `undefined` when the store has none. */
  getSession(key: string): Promise<SessionRecord | undefined>;
  /** Stores a session's workers for `ttlMs` (idle TTL: every put restarts it). */
  putSession(
    key: string,
    primary: string,
    secondary: string | undefined,
    ttlMs: number,
  ): Promise<void>;
  /**
   * Among the newest `maxHolders` workers recorded within `ttlMs` for `blocks[0]`, those that
   * hold the longest run of leading blocks, newest first, each with that run's length (the
   * policy routes among the holders of the longest match; a shallower holder would lose to
   * them).
   */
  matchPrefix(
    blocks: readonly string[],
    ttlMs: number,
    maxHolders: number,
  ): Promise<readonly PrefixHolder[]>;
  /**
   * Records `url` as a holder of `blocks` (now), keeping at most `maxHolders` per block, each
   * block forgotten `ttlMs` after its last record.
   */
  recordPrefix(
    blocks: readonly string[],
    url: string,
    ttlMs: number,
    maxHolders: number,
  ): Promise<void>;
}
