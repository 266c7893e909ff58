/**
 * `cache_aware`'s event mode: the engines' KV events, kept in each model's block index, and the
 * selections scored from them. A request with tokens, for a model whose engines sent events, goes
 * to the candidate holding the most consecutive prefix blocks of it (ties: lower load, then fewer
 * blocks held) while that holder stays within the `eventLoadFactor` bound (`event_overlap`), else
 * to the least-loaded worker (`holder_overloaded`). When no candidate holds its first block, a
 * miss this router placed in the last `pendingTtlMs` for the same first blocks keeps it
 * (`cache_hit`); otherwise the miss placement picks a worker (`cache_miss`), remembered for that
 * long: engines report blocks only once their prefill is done.
 *
 * **Bounds.** At most {@link MAX_PENDING} placements are remembered, the oldest dropped first;
 * at most `maxEventBlocks` blocks of a request are hashed.
 *
 * @module
 * @internal
 */
import { BlockKeyCursor } from '../../cache/block-hashes.js';
import { KvBlockIndex, type KvEvent, readKvEvent } from '../../cache/kv-event-store.js';
import type { Worker } from '../../workers/worker.js';
import type { SelectRequest } from '../policy.js';
import type { CandidateScan } from './candidate-scan.js';
import type { ModelCaches } from './model-caches.js';
import { HIT, MISS, OVERLAP, OVERLOADED, type Reasons } from './reasons.js';
import { MAX_CREDITED, type TtftModel } from './ttft-model.js';

/** @internal Most event-mode placements remembered while their events are due (the oldest go first). */
export const MAX_PENDING = 65_536;

/** Blocks that name a prompt's start (`BlockKeyCursor.prefixKey`). */
const PREFIX_BLOCKS = 4;

/** @internal The options of `cache_aware` that event mode reads (resolved). */
export interface EventModeSettings {
  readonly pageSize: number;
  readonly maxEventBlocks: number;
  readonly eventLoadFactor: number;
  readonly loadSlack: number;
  readonly pendingTtlMs: number;
}

/** A miss this router placed: its worker, and when (the policy's clock). */
interface Placed {
  readonly url: string;
  readonly at: number;
}

/**
 * @internal Event mode of one `cache_aware` policy (see the module comment). It shares the
 * policy's caches, candidate scan and reason counters. Cost per selection: one xxh64 per block
 * hashed, the holders of the first block read once each, one map lookup for the placements.
 */
export class EventMode {
  readonly #caches: ModelCaches;
  readonly #scan: CandidateScan;
  readonly #reasons: Reasons;
  readonly #blockKeys: BlockKeyCursor;
  readonly #maxEventBlocks: number;
  readonly #loadFactor: number;
  readonly #loadSlack: number;
  readonly #pendingTtlMs: number;
  readonly #clock: () => number;
  /** The key of a placed miss's first blocks → its worker and when (oldest first). */
  readonly #pending = new Map<number, Placed>();
  /** `decideBy: 'ttft'`: the cost model; `undefined` for `'load'`. */
  readonly #ttft: TtftModel | undefined;
  readonly #pageSize: number;
  /** Cost mode: the holders of a selection and how many blocks each holds. */
  readonly #holders = new Int32Array(MAX_CREDITED);
  readonly #depths = new Float64Array(MAX_CREDITED);
  /** Cost mode: the fleet's lowest in-flight count, for the hard guard (set per selection). */
  minLoad = 0;

  constructor(
    caches: ModelCaches,
    scan: CandidateScan,
    reasons: Reasons,
    settings: EventModeSettings,
    clock: () => number,
    ttft?: TtftModel,
  ) {
    this.#ttft = ttft;
    this.#pageSize = settings.pageSize;
    this.#caches = caches;
    this.#scan = scan;
    this.#reasons = reasons;
    this.#blockKeys = new BlockKeyCursor(settings.pageSize);
    this.#maxEventBlocks = settings.maxEventBlocks;
    this.#loadFactor = settings.eventLoadFactor;
    this.#loadSlack = settings.loadSlack;
    this.#pendingTtlMs = settings.pendingTtlMs;
    this.#clock = clock;
  }

  /**
   * Applies one worker's KV events, every one validated before any is applied: blocks stored or
   * removed, or everything cleared (a `cleared` without a model clears every model).
   * @throws {@link FleetRouteError} `INVALID_ARGUMENT` for a bad event or hash.
   */
  apply(workerUrl: string, events: readonly KvEvent[]): void {
    const parsed = events.map(readKvEvent);
    const caches = this.#caches;
    for (const event of parsed) {
      if (event.type === 'cleared') {
        for (const cache of caches.entries()) {
          if (event.model !== undefined && event.model !== cache.model) continue;
          cache.events?.clear(workerUrl);
          caches.settle(cache);
        }
        continue;
      }
      this.applyKeys(workerUrl, event.type, event.model, event.keys);
    }
  }

  /** Blocks of one worker stored or removed, by their index keys. O(keys). */
  applyKeys(
    workerUrl: string,
    type: 'stored' | 'removed',
    model: string | undefined,
    keys: readonly number[],
  ): void {
    const cache = this.#caches.entryOf(model ?? '');
    cache.events ??= new KvBlockIndex();
    if (type === 'stored') cache.events.store(workerUrl, keys);
    else cache.events.remove(workerUrl, keys);
    this.#caches.settle(cache);
  }

  /**
   * A selection scored from `events` (the model's block index, not empty) for a request with
   * `tokens`, after the imbalance check (see the module comment).
   */
  select(
    workers: readonly Worker[],
    events: KvBlockIndex,
    tokens: ArrayLike<number>,
    request: SelectRequest | undefined,
  ): Worker | undefined {
    const scan = this.#scan;
    this.#blockKeys.reset(tokens, this.#maxEventBlocks);
    const model = this.#ttft;
    if (model !== undefined) {
      const found = scan.holderDepths(
        workers,
        this.#blockKeys,
        events,
        this.#holders,
        this.#depths,
        MAX_CREDITED,
      );
      if (found < 0) return this.#miss(workers, request, found === -2, tokens);
      model.begin(workers.length, tokens, tokens.length, 1, this.minLoad, request);
      for (let j = 0; j < found; j++)
        model.add(this.#holders[j]!, this.#depths[j]! * this.#pageSize);
      const index = model.choose(workers);
      if (index < 0) return undefined;
      return this.#reasons.chose(workers, index, model.winnerUnits > 0 ? OVERLAP : OVERLOADED);
    }
    const best = scan.bestHolders(workers, this.#blockKeys, events);
    if (best >= 0) {
      if (!scan.overBound(workers, scan.loadOf(best), this.#loadFactor, this.#loadSlack))
        return this.#reasons.chose(workers, best, OVERLAP);
      // A hot prefix gains another holder.
      return scan.pass(workers)
        ? this.#reasons.chose(workers, scan.leastLoaded, OVERLOADED)
        : undefined;
    }
    return this.#miss(workers, request, best === -2, tokens);
  }

  /**
   * Cost mode: a miss whose first blocks this router placed on candidate `placed` in the last
   * `pendingTtlMs`: that worker is credited with those blocks and every candidate scored, so a
   * placement whose worker got busy does not draw every request for the prefix (the placement
   * itself stays).
   */
  #scorePlaced(
    workers: readonly Worker[],
    req: SelectRequest | undefined,
    tokens: ArrayLike<number>,
    placed: number,
  ): Worker | undefined {
    const model = this.#ttft!;
    model.begin(workers.length, tokens, tokens.length, 1, this.minLoad, req);
    model.add(placed, Math.min(PREFIX_BLOCKS, this.#blockKeys.length) * this.#pageSize);
    const chosen = model.choose(workers);
    if (chosen < 0) return undefined;
    return this.#reasons.chose(workers, chosen, chosen === placed ? HIT : MISS);
  }

  /**
   * Where a miss goes: with the cost model, the candidate with the lowest predicted time to first
   * token for the whole prompt (one pass); else the miss placement, or the pass's least-loaded
   * worker when holders were read.
   */
  #missIndex(
    workers: readonly Worker[],
    req: SelectRequest | undefined,
    read: boolean,
    tokens: ArrayLike<number>,
  ): number {
    const scan = this.#scan;
    const model = this.#ttft;
    if (model !== undefined) {
      model.begin(workers.length, tokens, tokens.length, 1, this.minLoad, req);
      return model.choose(workers);
    }
    return read ? (scan.pass(workers) ? scan.leastLoaded : -1) : scan.missIndex(workers, req);
  }

  /**
   * Forgets the placements on `url` whose events were still due: all of them, or those made at
   * or before `before` (the policy's clock). O(placements).
   */
  forget(url: string, before?: number): void {
    const pending = this.#pending;
    for (const [key, placed] of pending) {
      if (placed.url === url && (before === undefined || placed.at <= before)) pending.delete(key);
    }
  }

  /**
   * No worker was reported holding the prompt's first block: a placement of this router's whose
   * events are still due (`pendingTtlMs`), else the miss placement, remembered. `read`: holders
   * were read (all unavailable), so the ring walk, which would read them again, gives way to the
   * pass.
   */
  #miss(
    workers: readonly Worker[],
    req: SelectRequest | undefined,
    read: boolean,
    tokens: ArrayLike<number>,
  ): Worker | undefined {
    const scan = this.#scan;
    const key = this.#pendingTtlMs > 0 ? this.#blockKeys.prefixKey() : -1;
    const now = key < 0 ? 0 : this.#clock();
    if (key >= 0) {
      const placed = this.#pending.get(key);
      if (placed !== undefined && now - placed.at <= this.#pendingTtlMs) {
        const i = scan.leastLoadedOf(workers, [placed.url]);
        if (i >= 0 && this.#ttft === undefined) return this.#reasons.chose(workers, i, HIT);
        // Cost mode: the placement is credited with the blocks that name it, and scored.
        if (i >= 0) return this.#scorePlaced(workers, req, tokens, i);
      }
    }
    const miss = this.#missIndex(workers, req, read, tokens);
    if (miss < 0) return undefined;
    if (key >= 0) {
      const pending = this.#pending;
      pending.delete(key);
      pending.set(key, { url: workers[miss]!.url, at: now });
      if (pending.size > MAX_PENDING) pending.delete(pending.keys().next().value!);
    }
    return this.#reasons.chose(workers, miss, MISS);
  }
}
