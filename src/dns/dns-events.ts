/**
 * What a `DnsDiscovery` reports: its events (a discriminated union on `type`), the result of a
 * refresh, and its stats.
 *
 * @module
 */

/**
 * The workers changed after a lookup, or a draining worker was removed. Emitted only when one of
 * `added`, `revived`, `draining` or `removed` is non-empty ({@link DnsDiscovery.refresh} returns
 * it either way). Every list holds worker URLs as the registry keys them.
 *
 * @public
 */
export interface DnsUpdatedEvent {
  readonly type: 'updated';
  /** Addresses new to the answer, registered now. */
  readonly added: readonly string[];
  /** Draining workers whose address came back: their status before the drain is restored. */
  readonly revived: readonly string[];
  /** Workers whose address left the answer, now `draining`. */
  readonly draining: readonly string[];
  /** Workers removed: drained (nothing left in flight, or `drainMs` passed) or never busy. */
  readonly removed: readonly string[];
  /**
   * Addresses of the answer held by a worker the discovery did not register (registered by
   * hand): left alone, never changed nor removed.
   */
  readonly foreign: readonly string[];
  /** Addresses of the answer past `maxWorkers`, left out (0 when none). */
  readonly ignored: number;
  /** Workers the discovery now keeps registered from the answer (not counting draining ones). */
  readonly workers: number;
}

/**
 * A lookup failed — timeout, SERVFAIL, refused, unreachable server — and the registry was left
 * as it was: the last good answer is kept.
 *
 * @public
 */
export interface DnsLookupFailedEvent {
  readonly type: 'lookup_failed';
  /** The resolver's code: `ETIMEOUT`, `ESERVFAIL`, `ECONNREFUSED`, `EREFUSED`… */
  readonly code: string;
  readonly message: string;
  /** Workers kept from the last good answer. */
  readonly keeping: number;
}

/**
 * The name had no usable records — NXDOMAIN (`ENOTFOUND`), no records of the type asked
 * (`ENODATA`), or only records that failed the checks — and the registry was left as it was:
 * the last good answer is kept.
 *
 * @public
 */
export interface DnsEmptyEvent {
  readonly type: 'empty';
  /** `ENOTFOUND` (no such name) or `ENODATA` (no such records, or none usable). */
  readonly code: string;
  /** Workers kept from the last good answer. */
  readonly keeping: number;
}

/** Every event of a {@link DnsDiscovery}. @public */
export type DnsDiscoveryEvent = DnsUpdatedEvent | DnsLookupFailedEvent | DnsEmptyEvent;

/**
 * What one {@link DnsDiscovery.refresh} did: the event of its lookup, or `closed` when the
 * discovery was closed before the lookup's answer was applied (nothing was changed then).
 *
 * @public
 */
export type DnsRefresh = DnsDiscoveryEvent | { readonly type: 'closed' };

/** The listeners of a {@link DnsDiscovery}, by event type; `event` hears every one. @public */
export interface DnsDiscoveryEventMap {
  updated: (event: DnsUpdatedEvent) => void;
  lookup_failed: (event: DnsLookupFailedEvent) => void;
  empty: (event: DnsEmptyEvent) => void;
  event: (event: DnsDiscoveryEvent) => void;
}

/** A plain snapshot of a {@link DnsDiscovery}'s counters. @public */
export interface DnsDiscoveryStats {
  /** Lookups completed, failed and empty ones included (not those cut short by `close()`). */
  readonly lookups: number;
  /** Lookups that failed (`lookup_failed`). */
  readonly failures: number;
  /** Lookups with an empty answer (`empty`). */
  readonly empties: number;
  /** Workers the discovery keeps registered from its last good answer. */
  readonly workers: number;
  /** Workers it registered that are draining now. */
  readonly draining: number;
  /** Addresses the last good answer had past `maxWorkers`. */
  readonly ignored: number;
  /** Registry calls that failed for another reason than a hand-registered URL (see the docs). */
  readonly registryErrors: number;
  /** The code of the last failed or empty lookup, until a good one. */
  readonly lastProblem: string | undefined;
}
