/**
 * `manual`: sticky routing key → worker placement with failover, idle expiry and a key bound.
 *
 * @module
 */

import { keyWithin } from '../core/content-digest.js';
import { IdentityMemo } from '../core/identity-memo.js';
import { boolean, integer, oneOf } from '../core/option-table.js';
import type { Clock } from '../resilience/clock.js';
import { type CandidateView, viewOf } from '../workers/candidate-view.js';
import { Worker } from '../workers/worker.js';
import { KeyTable, type ManualEntryInfo } from './manual/key-table.js';
import { type SessionSharing, SHARING } from './placement-sharing.js';
import type { Policy, SelectRequest } from './policy.js';
import { type CommonPolicyConfig, policyOptions, readPolicyConfig } from './support/config.js';
import { type RandomSource, randomIndex } from './support/random.js';
import { explicitKey, routingKey } from './support/routing-key.js';
import { available, isWorkerList, pick, Sampler } from './support/sampling.js';

/**
 * How `manual` places a key it has no available worker for: `random` (uniform over available
 * workers), `min_load` (fewest requests in flight) or `min_group` (fewest live keys).
 *
 * @public
 */
export type ManualMode = 'random' | 'min_load' | 'min_group';

/** Every {@link ManualMode}. @public */
export const MANUAL_MODES: readonly ManualMode[] = Object.freeze([
  'random',
  'min_load',
  'min_group',
]);

/** Options of the `manual` policy. @public */
export interface ManualConfig extends CommonPolicyConfig {
  /**
   * How a new key, or a key whose stored workers are both unavailable, is placed:
   * - `random`: uniform over the available candidates; O(1) expected for a new key. The default:
   *   the cheapest and stateless, and over many keys its spread is close to even.
   * - `min_load`: fewest requests in flight (leases); one O(n) pass. Ties: fewer `processed`,
   *   then the lower index.
   * - `min_group`: fewest keys held (as primary or secondary); one O(n) pass. Keeps key counts
   *   even when keys are few and long-lived. Ties: fewer in flight, fewer `processed`, lower index.
   *
   * Failing over costs one O(n) pass in every mode.
   *
   * @defaultValue 'random'
   */
  readonly mode?: ManualMode;
  /**
   * A key unused for longer than this is forgotten and placed afresh on its next request (ms).
   * Checked on every lookup (one subtraction); a longer TTL holds more keys (see `maxKeys`).
   *
   * @defaultValue 14400000 (4 hours)
   */
  readonly ttlMs?: number;
  /**
   * Least time between two sweeps of idle keys (ms). The sweep runs inside `select`, never on a
   * timer; it costs O(keys dropped + 1). Until it runs, an idle key still counts for `min_group`
   * and `size` (it is never routed: a lookup checks the TTL itself). 0 sweeps on every call.
   *
   * @defaultValue 60000 (1 minute)
   */
  readonly sweepIntervalMs?: number;
  /**
   * Most keys held; a new key beyond it evicts the least recently used one. Memory: about
   * 250 bytes per key of 32 characters (100,000 keys: about 25 MB). A key longer than 256
   * characters is held as its 17-character digest, so 100,000 keys cost at most about 45 MB
   * whatever their length.
   *
   * @defaultValue 100000
   */
  readonly maxKeys?: number;
  /**
   * Also key on the `authorization`, `x-forwarded-for` and `cookie` headers, as
   * `consistent_hashing` does. Off by default: those values would be held (credentials
   * included) for `ttlMs`, and cookies or proxy chains that vary per request would fill the table
   * with one-off keys. To pin users, pass a user or session id as `routingKey` instead.
   *
   * @defaultValue false
   */
  readonly identityHeaders?: boolean;
}

// Set by the class's static block; read by `manualSnapshotOf`.
let tableOf: (policy: ManualPolicy) => KeyTable;

/**
 * Longest key `manual` holds as it is (UTF-16 code units, after the leg's namespace); a longer
 * one is held as `#` and the 16 hex digits of its digest, as the OpenAI front's routing key is.
 */
const MAX_KEY_LENGTH = 256;

/** The key `select` files `request` under, bounded by {@link MAX_KEY_LENGTH}. */
function keyOfRequest(identityHeaders: boolean, request: SelectRequest | undefined) {
  const key = identityHeaders ? routingKey(request) : explicitKey(request);
  return key === undefined ? undefined : keyWithin(key, MAX_KEY_LENGTH);
}

/** @internal The options of `manual`. */
export const MANUAL_OPTIONS = policyOptions('manual', 'ManualConfig', {
  mode: oneOf(MANUAL_MODES, 'random'),
  ttlMs: integer(14_400_000, 1, Number.MAX_SAFE_INTEGER),
  sweepIntervalMs: integer(60_000, 0, Number.MAX_SAFE_INTEGER),
  maxKeys: integer(100_000, 1, 2 ** 31 - 1),
  identityHeaders: boolean(false),
});

/**
 * Keeps each routing key on the worker it was first placed on, so a session's KV cache (or any
 * per-worker state: LoRA adapters, tool sandboxes) is reused on every turn. Choose it over
 * `consistent_hashing` when a new key should be placed by load or by key counts rather than by a
 * hash, and when keys must stay put as workers join (a ring moves about 1/n of the keys on every
 * join; here a new worker only receives new keys). It costs memory per key, which a ring does not.
 *
 * The key is `request.routingKey`, else the `x-fleetroute-routing-key` header (identity headers
 * only with `identityHeaders`), namespaced `prefill:` / `decode:` on those legs; a key longer
 * than 256 characters is held as `#` and the 16 hex digits of its digest. A request
 * without a key gets the mode's choice and stores nothing. A key with no entry is placed by the
 * mode and stored. A key holds up to two workers, and every use refreshes it:
 * - primary available → primary (a recovered primary wins its key back);
 * - else secondary available → secondary;
 * - else a worker picked by the mode (never the primary or secondary) becomes the secondary; the
 *   primary stays. `undefined` only when no candidate is available (the key is kept).
 *
 * Memory: keys idle longer than `ttlMs` are dropped by a sweep run inside `select` at most once per
 * `sweepIntervalMs` (no timers: `close()` only clears state), and at most `maxKeys` are held
 * (least recently used evicted first). `removeWorker(url)` drops the URL from every key. Keys are
 * not namespaced by model: share one instance across models only if a key never spans them, or
 * put the model in the key.
 *
 * Cost per call: for a known key whose primary is available, one clock read, a few map
 * operations (lookup, move to most recent, URL → candidate) and one availability read, with no
 * allocation for a `single`-leg request carrying `routingKey` (the URL → candidate map is built
 * once per candidate list and cached by the list's identity). Placing a key costs the mode's
 * choice (O(1) expected for `random`, one O(n) pass otherwise); failing over costs one O(n)
 * pass. Each candidate's routing state is read at most once per call.
 *
 * @example
 * ```ts
 * const policy = createPolicy('manual', { mode: 'min_group', ttlMs: 30 * 60_000 });
 * const worker = policy.select(registry.getByModel(model), { routingKey: sessionId });
 * ```
 * @public
 */
export class ManualPolicy implements Policy {
  readonly name = 'manual' as const;
  readonly #mode: ManualMode;
  readonly #sweepIntervalMs: number;
  readonly #ttlMs: number;
  readonly #identityHeaders: boolean;
  readonly #random: RandomSource;
  readonly #clock: Clock;
  readonly #table: KeyTable;
  readonly #views = new IdentityMemo<readonly Worker[], CandidateView>();
  readonly #sampler = new Sampler();
  #lastSweep = Number.NEGATIVE_INFINITY;
  /** What shared state reads and writes of the sessions, built on first use. */
  #sharing: SessionSharing | undefined;

  /** @throws {@link FleetRouteError} `INVALID_ARGUMENT` naming a bad or unknown option. */
  constructor(config: ManualConfig = {}) {
    const { options, random, clock } = readPolicyConfig(MANUAL_OPTIONS, config);
    this.#mode = options.mode;
    this.#sweepIntervalMs = options.sweepIntervalMs;
    this.#ttlMs = options.ttlMs;
    this.#identityHeaders = options.identityHeaders;
    this.#random = random;
    this.#clock = clock;
    this.#table = new KeyTable(options.maxKeys, options.ttlMs);
  }

  /** Keys held, including idle ones the next sweep will drop. O(1). */
  get size(): number {
    return this.#table.size;
  }

  /**
   * Keys naming `url` as primary or secondary: what `min_group` compares (idle keys count until
   * the sweep drops them). O(1).
   */
  keyCount(url: string): number {
    return this.#table.keyCount(url);
  }

  select(workers: readonly Worker[], request?: SelectRequest): Worker | undefined {
    if (!isWorkerList(workers) || workers.length === 0) return undefined;
    const now = this.#clock();
    if (now - this.#lastSweep >= this.#sweepIntervalMs) {
      this.#lastSweep = now;
      this.#table.sweep(now);
    }
    const key = this.#keyOf(request);
    if (key === undefined) return pick(workers, this.#place(workers, undefined, undefined));
    const table = this.#table;
    const entry = table.get(key, now);
    if (entry === undefined) {
      const index = this.#place(workers, undefined, undefined);
      if (index >= 0) table.insert(key, workers[index]!.url, now);
      return pick(workers, index);
    }
    table.touch(key, entry, now);
    const candidates = this.#views.get(workers, viewOf);
    const primary = indexIn(workers, candidates, entry.primary);
    if (primary >= 0 && available(workers[primary])) return pick(workers, primary);
    const secondary = entry.secondary;
    if (secondary !== undefined) {
      const index = indexIn(workers, candidates, secondary);
      if (index >= 0 && available(workers[index])) return pick(workers, index);
    }
    // Both were read (or are not candidates): the pass below skips them by URL.
    const index = this.#place(workers, entry.primary, secondary);
    if (index >= 0) table.setSecondary(key, entry, workers[index]!.url);
    return pick(workers, index);
  }

  /** Drops `url` from every key (a key left with no worker is forgotten). O(keys naming it). */
  removeWorker(url: string): void {
    if (typeof url === 'string') this.#table.removeUrl(url);
  }

  /** Forgets every key. */
  reset(): void {
    this.#table.clear();
    this.#views.clear();
    this.#lastSweep = Number.NEGATIVE_INFINITY;
  }

  /** Forgets every key; there are no timers to stop. */
  close(): void {
    this.reset();
  }

  /**
   * @internal The sessions, for shared state: the key of a request, a key's placement, and the
   * adoption of another router's. The same object on every call.
   */
  [SHARING](): SessionSharing {
    this.#sharing ??= {
      kind: 'sessions',
      ttlMs: this.#ttlMs,
      keyOf: (request) => this.#keyOf(request),
      placementOf: (key) => this.#table.peek(key),
      adopt: (key, primary, secondary) => this.#table.adopt(key, primary, secondary, this.#clock()),
    };
    return this.#sharing;
  }

  static {
    tableOf = (policy) => policy.#table;
  }

  /** The routing key of `request` (explicit only, or identity headers too), bounded. */
  #keyOf(request: SelectRequest | undefined): string | undefined {
    return keyOfRequest(this.#identityHeaders, request);
  }

  /**
   * The mode's choice among available candidates whose URL is neither `skipA` nor `skipB`, or -1.
   * Reads each visited candidate once.
   */
  #place(workers: readonly Worker[], skipA: string | undefined, skipB: string | undefined): number {
    const mode = this.#mode;
    if (skipA === undefined) {
      if (mode === 'random') return this.#sampler.randomAvailable(workers, this.#random);
      if (mode === 'min_load') return this.#sampler.leastLoaded(workers);
    }
    const table = this.#table;
    const sampler = this.#sampler;
    const state = sampler.state;
    let best = -1;
    let bestKeys = 0;
    let bestLoad = 0;
    let bestProcessed = 0;
    let seen = 0;
    for (let i = 0; i < workers.length; i++) {
      const worker = workers[i];
      if (worker instanceof Worker && (worker.url === skipA || worker.url === skipB)) continue;
      if (!sampler.read(worker)) continue;
      if (mode === 'random') {
        // Reservoir sampling: the k-th available candidate replaces the choice with chance 1/k.
        if (randomIndex(this.#random, ++seen) === 0) best = i;
        continue;
      }
      const keys = mode === 'min_group' ? table.keyCount(worker!.url) : 0;
      if (
        best < 0 ||
        keys < bestKeys ||
        (keys === bestKeys &&
          (state.load < bestLoad || (state.load === bestLoad && state.processed < bestProcessed)))
      ) {
        best = i;
        bestKeys = keys;
        bestLoad = state.load;
        bestProcessed = state.processed;
      }
    }
    return best;
  }
}

/** Index of the candidate with `url`, or -1. O(1). */
function indexIn(workers: readonly Worker[], candidates: CandidateView, url: string): number {
  const index = candidates.indexOf(url);
  if (index < 0) return -1;
  const worker = workers[index];
  // A list mutated after it was indexed (registry lists never are): fall back to a scan.
  if (worker instanceof Worker && worker.url === url) return index;
  return workers.findIndex((w) => w instanceof Worker && w.url === url);
}

/** @internal The entries (least recently used first) and per-URL key counts, as plain data. */
export function manualSnapshotOf(policy: ManualPolicy): {
  entries: ManualEntryInfo[];
  counts: Record<string, number>;
} {
  return tableOf(policy).snapshot();
}
