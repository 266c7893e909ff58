/**
 * `cache_aware`'s tree mode: selections scored from the model's approximate radix tree (tokens
 * when the request has any, else text), and the insert that records each pick in it. If the
 * longest match covers more than `cacheThreshold` of the request, the least-loaded available
 * holder of it (`cache_hit`); if none of them is available or a candidate, the least-loaded
 * worker (`stale_match`); if that holder would exceed the `loadFactor` bound, the least-loaded
 * worker (`holder_overloaded`: a hot prefix gains another holder); below the threshold, a miss
 * (`cache_miss`) placed by `missPlacement`. The request is then inserted for the chosen worker,
 * continuing the same descent — so is a request the imbalance check sent to the least-loaded
 * worker.
 *
 * The first insert starts an `unref`'d timer that evicts every tree to `maxTreeSize` per worker
 * every `evictionIntervalMs`; {@link TreeMode.close} stops it.
 *
 * @module
 * @internal
 */
import type { CandidateView } from '../../workers/candidate-view.js';
import type { Worker } from '../../workers/worker.js';
import type { SelectRequest } from '../policy.js';
import type { CandidateScan } from './candidate-scan.js';
import { type ModelCache, type ModelCaches, TEXT, type TreeKind, treeOf } from './model-caches.js';
import { HIT, MISS, OVERLOADED, type Reasons, STALE } from './reasons.js';
import { CHARS_PER_TOKEN, MAX_CREDITED, type TtftModel } from './ttft-model.js';

/** @internal The options of `cache_aware` that tree mode reads (resolved). */
export interface TreeModeSettings {
  readonly cacheThreshold: number;
  readonly loadFactor: number;
  readonly loadSlack: number;
  readonly evictionIntervalMs: number;
}

/**
 * @internal Tree mode of one `cache_aware` policy (see the module comment). It shares the
 * policy's caches, candidate scan and reason counters. Cost per selection: one descent of the
 * tree, continued by the insert; the holders of a match read once each.
 */
export class TreeMode {
  readonly #caches: ModelCaches;
  readonly #scan: CandidateScan;
  readonly #reasons: Reasons;
  readonly #threshold: number;
  readonly #loadFactor: number;
  readonly #loadSlack: number;
  readonly #evictionIntervalMs: number;
  /** What the eviction timer runs (the policy's `evict`). */
  readonly #evict: () => void;
  #timer: ReturnType<typeof setInterval> | undefined;
  #closed = false;
  /** `decideBy: 'ttft'`: the cost model; `undefined` for `'load'`. */
  readonly #ttft: TtftModel | undefined;
  /** The candidate view of the selection whose path holders are being credited. */
  #view: CandidateView | undefined;
  /**
   * A hint per tree tenant id: the candidate index in `#idView` found for it before (-1: none),
   * used only while that candidate's URL is still the tenant's name (an id passes to another
   * worker once its holder leaves the tree). Holders are then found by an array read and a string
   * comparison, not a lookup of their URL.
   */
  #idIndex = new Int32Array(64).fill(-1);
  #idTree: object | undefined;
  #idView: CandidateView | undefined;
  readonly #credit = (name: string, units: number, id: number): void => {
    const view = this.#view!;
    if (id >= this.#idIndex.length) this.#growIds(id);
    let i = this.#idIndex[id]!;
    if (i < 0 || view.workers[i]?.url !== name) {
      i = view.indexOf(name);
      this.#idIndex[id] = i;
    }
    if (i >= 0) this.#ttft!.add(i, units);
  };

  #growIds(id: number): void {
    let size = this.#idIndex.length;
    while (size <= id) size *= 2;
    const grown = new Int32Array(size).fill(-1);
    grown.set(this.#idIndex);
    this.#idIndex = grown;
  }

  constructor(
    caches: ModelCaches,
    scan: CandidateScan,
    reasons: Reasons,
    settings: TreeModeSettings,
    evict: () => void,
    ttft?: TtftModel,
  ) {
    this.#ttft = ttft;
    this.#caches = caches;
    this.#scan = scan;
    this.#reasons = reasons;
    this.#threshold = settings.cacheThreshold;
    this.#loadFactor = settings.loadFactor;
    this.#loadSlack = settings.loadSlack;
    this.#evictionIntervalMs = settings.evictionIntervalMs;
    this.#evict = evict;
  }

  /**
   * A selection scored from the model's tree of `kind`, after the imbalance check; a request
   * without a `key` (no text, no tokens) goes to the least-loaded worker. `cache` is the model's
   * entry as the policy's `select` read it.
   */
  select(
    workers: readonly Worker[],
    model: string,
    cache: ModelCache | undefined,
    kind: TreeKind,
    key: string | ArrayLike<number> | undefined,
    request: SelectRequest | undefined,
  ): Worker | undefined {
    if (key === undefined) {
      return this.leastLoaded(workers, MISS, model, cache, kind, undefined, request);
    }
    const scan = this.#scan;
    const tree = treeOf(cache, kind);
    // The model's first request of this kind: a miss, and the insert creates the tree.
    if (tree === undefined)
      return this.leastLoaded(workers, MISS, model, cache, kind, key, request);
    const match = tree.match(key);
    if (match.length > 0) this.#reasons.matched(match.matched / match.length);
    if (match.length === 0) {
      return this.leastLoaded(workers, MISS, model, cache, kind, undefined, request);
    }
    if (this.#ttft !== undefined) {
      const chosen = this.#byTtft(workers, this.#ttft, tree, match, kind, key, request);
      if (chosen === undefined) return undefined;
      this.#reasons.held(Math.min(this.#ttft.winnerUnits / match.length, 1));
      this.insert(workers, model, cache, kind, key, workers[chosen.index]!.url);
      return this.#reasons.chose(workers, chosen.index, chosen.reason);
    }
    let chosen = -1;
    let reason = MISS;
    if (match.matched / match.length > this.#threshold) {
      // The cache-hit path reads only the holders of the match.
      chosen = scan.leastLoadedOf(workers, tree.holdersOf(match));
      reason = chosen >= 0 ? HIT : STALE;
      if (
        chosen >= 0 &&
        scan.overBound(workers, scan.loadOf(chosen), this.#loadFactor, this.#loadSlack)
      ) {
        chosen = -1;
        reason = OVERLOADED;
      }
    }
    if (chosen < 0) {
      if (reason === MISS) {
        chosen = scan.missIndex(workers, request);
        if (chosen < 0) return undefined;
      } else {
        if (!scan.pass(workers)) return undefined;
        chosen = scan.leastLoaded;
      }
    }
    // A hit's worker holds the whole match; any other pick is credited with nothing.
    this.#reasons.held(reason === HIT ? match.matched / match.length : 0);
    this.insert(workers, model, cache, kind, key, workers[chosen]!.url);
    return this.#reasons.chose(workers, chosen, reason);
  }

  /** What {@link TreeMode.#byTtft} chose (reused). */
  readonly #choice = { index: -1, reason: MISS };

  /**
   * Cost mode: the path's holders scored by predicted time to first token (with every candidate
   * when none of them can beat an idle worker); no holder that is a candidate → the miss
   * placement. `undefined` when no candidate is available.
   */
  #byTtft(
    workers: readonly Worker[],
    model: TtftModel,
    tree: NonNullable<ReturnType<typeof treeOf>>,
    match: ReturnType<NonNullable<ReturnType<typeof treeOf>>['match']>,
    kind: TreeKind,
    key: string | ArrayLike<number>,
    request: SelectRequest | undefined,
  ): { index: number; reason: number } | undefined {
    const scan = this.#scan;
    const choice = this.#choice;
    const view = scan.viewOf(workers);
    this.#view = view;
    if (tree !== this.#idTree || view !== this.#idView) {
      this.#idIndex.fill(-1);
      this.#idTree = tree;
      this.#idView = view;
    }
    const units = kind === TEXT ? CHARS_PER_TOKEN : 1;
    model.begin(workers.length, key, match.length, units, this.#minLoad, request);
    // No holder at all: a miss, scored over every candidate. Holders none of which is a
    // candidate or available: a stale match, the same.
    const visited = tree.pathHolders(match, MAX_CREDITED, this.#credit);
    this.#view = undefined;
    const index = model.choose(workers);
    if (index < 0) return undefined;
    choice.index = index;
    choice.reason =
      visited === 0
        ? MISS
        : model.winnerUnits > 0
          ? HIT
          : model.anyCreditedAvailable
            ? OVERLOADED
            : STALE;
    return choice;
  }

  /** Cost mode: the fleet's lowest in-flight count, for the hard guard (set per selection). */
  #minLoad = 0;

  /** Sets the fleet's lowest in-flight count for this selection's hard guard. */
  setMinLoad(min: number): void {
    this.#minLoad = min;
  }

  /**
   * The least-loaded worker — for a miss, the worker {@link CandidateScan.missIndex} gives —
   * with the request inserted for it (when it has a key). `cache` is the model's entry as
   * the policy's `select` read it.
   */
  leastLoaded(
    workers: readonly Worker[],
    reason: number,
    model: string,
    cache: ModelCache | undefined,
    kind: TreeKind,
    key: string | ArrayLike<number> | undefined,
    request: SelectRequest | undefined,
  ): Worker | undefined {
    const scan = this.#scan;
    let index: number;
    if (reason === MISS && key !== undefined) index = scan.missIndex(workers, request);
    else index = scan.pass(workers) ? scan.leastLoaded : -1;
    if (index < 0) return undefined;
    if (key !== undefined) {
      // The insert continues a match of the key; a tree that does not exist yet needs none.
      const tree = treeOf(cache, kind);
      if (tree === undefined || tree.match(key).length > 0)
        this.insert(workers, model, cache, kind, key, workers[index]!.url);
    }
    return this.#reasons.chose(workers, index, reason);
  }

  /**
   * Records `key` for `url` in the model's tree of `kind` ({@link ModelCaches.insert}: call
   * `match(key)` on an existing tree first), and starts the eviction timer on the first insert.
   */
  insert(
    workers: readonly Worker[],
    model: string,
    cache: ModelCache | undefined,
    kind: TreeKind,
    key: string | ArrayLike<number>,
    url: string,
  ): void {
    this.#caches.insert(workers, model, cache, kind, key, url);
    if (this.#timer === undefined && !this.#closed) {
      this.#timer = setInterval(this.#evict, this.#evictionIntervalMs);
      this.#timer.unref();
    }
  }

  /** Stops the eviction timer for good. Idempotent. */
  close(): void {
    this.#closed = true;
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
  }
}
