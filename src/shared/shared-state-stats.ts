/**
 * What `SharedState.stats()` reports: each part's state and counters.
 *
 * @module
 */

/** What `SharedState.stats()` returns. @public */
export interface SharedStateStats {
  readonly routerId: string;
  readonly loads: SharedLoadStats & { readonly state: 'ok' | 'degraded' };
  readonly sessions: SharedLookupStats;
  readonly prefixIndex: SharedLookupStats;
}

/** Counters of the loads part of `SharedState` (`stats().loads`). @public */
export interface SharedLoadStats {
  /** Syncs the store answered. */
  syncs: number;
  /** Syncs the store failed. */
  failures: number;
  /** Syncs not answered within `loads.timeoutMs`. */
  timeouts: number;
  /** Full rewrites of this router's counts (the first sync, and after the store lost them). */
  rebuilds: number;
  /** Other live routers at the last sync. */
  routers: number;
  /**
   * Values read from the store that no router could have written (a count out of bounds, a
   * heartbeat dated ahead of the store's clock, a field of another shape), ignored.
   */
  ignored: number;
}

/** Counters of one lookup part of `SharedState` (`stats().sessions`, `stats().prefixIndex`). @public */
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
  /**
   * Values read from the store that no router could have written (a session that names no
   * worker or has no expiry, a prefix holder dated ahead of the store's clock or out of the
   * lookup's bounds), ignored.
   */
  readonly ignored: number;
}
