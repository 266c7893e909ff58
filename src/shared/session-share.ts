/**
 * The sessions part of shared state: a sticky session's workers read from the store before
 * routing and adopted by the policy, and written back when its placement changed.
 *
 * @module
 * @internal
 */
import { loadedHasher } from '../core/hash.js';
import type { SessionSharing } from '../policies/placement-sharing.js';
import type { SelectRequest } from '../policies/policy.js';
import type { PartCalls } from './part-calls.js';
import type { SessionRecord, SharedStore } from './shared-store.js';
import { isSessionRecord } from './store-values.js';

/** What a lookup left for the write that follows the pick. */
interface PreparedSession {
  /** The request's routing key. */
  readonly key: string;
  /** What the store held for it (`null`: nothing, or not asked). */
  session: SessionRecord | null;
}

const SESSION_PREFIX = 's:';
const HEX = (n: bigint): string => n.toString(16).padStart(16, '0');

/** @internal One router's share of the sticky sessions. */
export class SessionShare {
  readonly #store: SharedStore;
  readonly #deadlineMs: number;
  readonly #calls: PartCalls;
  readonly #prepared = new WeakMap<SelectRequest, PreparedSession>();

  constructor(store: SharedStore, deadlineMs: number, calls: PartCalls) {
    this.#store = store;
    this.#deadlineMs = deadlineMs;
    this.#calls = calls;
  }

  /**
   * Looks the session of `request` up and has the policy adopt what the store holds, unless no
   * router could have written it (counted in `ignored`).
   *
   * @returns what to await before routing (at most the deadline), or `undefined` when the
   *   request has no key or nothing is worth waiting for. Never rejects.
   */
  prepare(request: SelectRequest, sharing: SessionSharing): Promise<void> | undefined {
    const key = sharing.keyOf(request);
    const stored = key === undefined ? undefined : sessionKeyOf(key);
    if (key === undefined || stored === undefined) return undefined;
    const prepared: PreparedSession = { key, session: null };
    this.#prepared.set(request, prepared);
    return this.#calls.lookup(
      this.#deadlineMs,
      () => this.#store.getSession(stored),
      (record) => {
        if (record === undefined) return false;
        if (!isSessionRecord(record)) {
          // Not a placement a router wrote: the pick places the key, and its write replaces it.
          this.#calls.counters.ignored++;
          return false;
        }
        prepared.session = record;
        sharing.adopt(key, record.primary, record.secondary);
        return true;
      },
    );
  }

  /**
   * Writes the session's placement after a pick, unless the store holds it already, well within
   * its TTL.
   *
   * @returns the write (see `PartCalls.send`), or `undefined` when none is due.
   */
  write(request: SelectRequest, sharing: SessionSharing): Promise<void> | undefined {
    const prepared = this.#prepared.get(request);
    const key = prepared?.key ?? sharing.keyOf(request);
    if (key === undefined) return undefined;
    const placement = sharing.placementOf(key);
    const stored = sessionKeyOf(key);
    if (placement === undefined || stored === undefined) return undefined;
    const ttl = sharing.ttlMs;
    const known = prepared?.session;
    // Unchanged and still well within its TTL: nothing to write.
    if (
      known != null &&
      known.primary === placement.primary &&
      known.secondary === placement.secondary &&
      known.ttlLeftMs > 0.75 * ttl
    )
      return undefined;
    return this.#calls.send(() =>
      this.#store.putSession(stored, placement.primary, placement.secondary, ttl),
    );
  }
}

/** A session key as handed to the store: its hash, never the key itself (a user or session id). */
function sessionKeyOf(key: string): string | undefined {
  const hasher = loadedHasher();
  return hasher === undefined
    ? undefined
    : SESSION_PREFIX + HEX(hasher.h64(`fleetroute:session:${key}`));
}
