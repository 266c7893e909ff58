/**
 * `cache_aware`: route each prompt to the worker that already holds its prefix, unless the fleet
 * is imbalanced.
 *
 * @module
 */
import { PAGE_SIZE } from '../cache/block-hashes.js';
import type { KvEvent } from '../cache/kv-event-store.js';
import type { RadixTree } from '../cache/radix-tree.js';
import { custom, duration, integer, number, oneOf } from '../core/option-table.js';
import { fail, readNumber } from '../core/options.js';
import type { LoadReport } from '../workers/load-report.js';
import type { Worker } from '../workers/worker.js';
import { CandidateScan } from './cache-aware/candidate-scan.js';
import { Charges } from './cache-aware/charges.js';
import { EventMode } from './cache-aware/event-mode.js';
import { ModelCaches, TEXT, TOKENS, treeOf } from './cache-aware/model-caches.js';
import { IMBALANCED, Reasons } from './cache-aware/reasons.js';
import { ReportRounds } from './cache-aware/report-rounds.js';
import { TreeMode } from './cache-aware/tree-mode.js';
import { TtftModel } from './cache-aware/ttft-model.js';
import { type PrefixSharing, SHARING } from './placement-sharing.js';
import type { Policy, PolicyExplanation, SelectRequest, WorkerRestart } from './policy.js';
import { PREFILL_CHARGE, type PrefillCharge } from './prefill-charge.js';
import { type PrefixHashPolicy, prefixHashOwner, prefixHashPlacement } from './prefix-hash.js';
import { type CommonPolicyConfig, policyOptions, readPolicyConfig } from './support/config.js';
import { isImbalanced } from './support/imbalance.js';
import { LoadTable } from './support/load-table.js';
import { isWorkerList } from './support/sampling.js';

/** Why a selection went where it did (counted by {@link CacheAwarePolicy.stats}). @public */
export type CacheAwareReason =
  | 'cache_hit'
  | 'cache_miss'
  | 'imbalanced'
  | 'stale_match'
  | 'event_overlap'
  | 'holder_overloaded';

/** Options of the `cache_aware` policy. @public */
export interface CacheAwareConfig extends CommonPolicyConfig {
  /**
   * Share of the request the longest match must exceed to follow it (0 … 1).
   * @defaultValue 0.3
   */
  readonly cacheThreshold?: number;
  /** Imbalance: in-flight difference between the busiest and idlest worker. @defaultValue 64 */
  readonly balanceAbsThreshold?: number;
  /** Imbalance: the busiest worker's in-flight count over the idlest's (≥ 1). @defaultValue 1.5 */
  readonly balanceRelThreshold?: number;
  /**
   * Bound on a cache hit (≥ 1, or `Infinity` for none): the match is followed only while the
   * holder's in-flight count, counting this request, stays within
   * `ceil(loadFactor × (total in flight + 1) / workers) + loadSlack`; otherwise the request goes
   * to the least-loaded worker (`holder_overloaded`), which then holds the prefix too, so a hot
   * prefix spreads over as many workers as its traffic needs. @defaultValue 1.5
   */
  readonly loadFactor?: number;
  /**
   * The same bound in event mode (≥ 1, or `Infinity` for none): a worker the engines report
   * holding the prompt keeps it while its in-flight count stays within
   * `ceil(eventLoadFactor × (total in flight + 1) / workers) + loadSlack`. Looser than
   * `loadFactor`: the holders are known, not guessed, and a router sees only its own share of
   * the load when several route over one fleet. @defaultValue 3
   */
  readonly eventLoadFactor?: number;
  /**
   * Requests a holder may run above the `loadFactor` bound: more keeps prefixes on fewer workers
   * when the fleet is lightly loaded (more hits, less spread). @defaultValue 0
   */
  readonly loadSlack?: number;
  /**
   * Size budget per worker per tree, in characters (text trees) or tokens (token trees).
   * At most 8 bytes per cached character, 2,097,152 keeps 64 workers with nothing shared under
   * 1 GiB per tree; `maxTotalSize` bounds all trees together. @defaultValue 2097152
   */
  readonly maxTreeSize?: number;
  /**
   * Size budget of all trees of the policy together (every model, both key kinds), in the same
   * units as `maxTreeSize` summed over workers (a prefix held by k workers counts k times). Each
   * tree also counts 512 units plus the length of its model string, so a client sending many
   * distinct `model` values cannot grow the policy past it either.
   *
   * When an insert takes the total over the budget, trees are evicted down to 7/8 of it: first
   * the trees of models no candidate worker lists explicitly (a wildcard worker lists none; the
   * tree of requests without a model counts as listed), whole and least recently used first;
   * then every worker's entries in the remaining trees, by the same share, least recently used
   * first. Emptied trees are dropped, and a budget below one tree's charge keeps no tree at all.
   *
   * Cost: memory stays under about 8 bytes per unit of the budget (1 GiB at the default). The
   * check is O(1) per request; an eviction runs at most once per eighth of the budget inserted
   * and costs O(trees dropped), or O(workers and entries of the listed models' trees).
   *
   * @defaultValue 134217728 (64 × the default `maxTreeSize`)
   */
  readonly maxTotalSize?: number;
  /** How often every tree is evicted down to `maxTreeSize` (ms; an `unref`'d timer). @defaultValue 120000 */
  readonly evictionIntervalMs?: number;
  /** Tokens per page of token trees and KV-event blocks. @defaultValue 16 */
  readonly pageSize?: number;
  /**
   * KV-usage trigger (off by default): imbalanced when the reported KV-cache usage of the
   * available workers spreads by more than this (0 … 1).
   */
  readonly kvUsageSpreadThreshold?: number;
  /** KV-usage trigger (off by default): imbalanced when any available worker reports more usage (0 … 1). */
  readonly kvUsageCeiling?: number;
  /** Load reports older than this are ignored by the KV-usage triggers (ms). @defaultValue 30000 */
  readonly staleAfterMs?: number;
  /** Most blocks of a request scored in event mode. @defaultValue 4096 */
  readonly maxEventBlocks?: number;
  /**
   * Where a miss goes (`cache_miss`: no worker holds enough of the prompt, in tree or event
   * mode). `'least_load'`: the least-loaded worker as this router sees it. `'ring'`: the
   * prompt's owner on the hash ring, walking clockwise past workers over the bounded-load cap,
   * exactly as `prefix_hash` with its defaults places it — the same worker in every router that
   * routes over the same workers, so several routers that each see a share of the traffic put a
   * new prefix in one place instead of up to one per router. @defaultValue 'ring'
   */
  readonly missPlacement?: 'least_load' | 'ring';
  /**
   * How a request's worker is chosen. `'ttft'`: by predicted time to first token — per
   * candidate, the prefill work queued ahead of the request there plus the prompt's tokens it
   * does not hold, at the worker's prefill speed learned from first tokens — the lowest winning,
   * near-ties going to the worker holding the most of the prompt, then to the prompt's
   * rendezvous order; a worker far past the fleet (`balanceAbsThreshold`,
   * `balanceRelThreshold`) cannot win. `cacheThreshold`, `loadFactor`, `eventLoadFactor` and
   * `loadSlack` do not apply. `'load'`: the fixed load bounds of earlier versions (the imbalance
   * escape, then a match followed while its holder stays within `loadFactor` or
   * `eventLoadFactor`). @defaultValue 'ttft'
   */
  readonly decideBy?: 'ttft' | 'load';
  /**
   * `decideBy: 'ttft'`: the prefill speed assumed of a worker before its first tokens are seen
   * (tokens of prompt per second not found in its cache), and what its learned speed is blended
   * with. A `Router` learns each worker's speed from the first tokens its leases mark
   * (`WorkerLease.firstToken`); without them every worker keeps this one. @defaultValue 10000
   */
  readonly prefillTokensPerSecond?: number;
  /**
   * Event mode: how long a miss this router placed counts as held by its worker before the
   * engine's events say so (ms; 0: never). Engines report blocks once their prefill is done, so
   * without it a second request for a new prefix, routed while the first is still prefilling,
   * is a miss again and may be placed elsewhere. A request whose first 4 blocks match such a
   * placement goes to the same worker (`cache_hit`) while it is available. @defaultValue 10000
   */
  readonly pendingTtlMs?: number;
}

/** What {@link CacheAwarePolicy.stats} reports. @public */
export interface CacheAwareStats {
  /** Selections by reason since creation or `reset()`. */
  readonly reasons: Readonly<Record<CacheAwareReason, number>>;
  /**
   * Units counted against `maxTotalSize`: every tree's size plus its fixed charge (512 units and
   * the length of its model string).
   */
  readonly totalSize: number;
  /** Every tree: its model (`''` for requests without one), kind, nodes, tenants and total size. */
  readonly trees: readonly {
    readonly model: string;
    readonly kind: 'text' | 'tokens';
    readonly nodes: number;
    readonly tenants: number;
    readonly size: number;
  }[];
  /** Models scored from engine KV events. */
  readonly eventModels: readonly string[];
}

// Set by the class's static block; read by the test hooks below.
let cachesOf: (policy: CacheAwarePolicy) => ModelCaches;

/** An optional share in [0, 1] (absent: off). */
const optionalShare = custom<number | undefined>(undefined, (field, value) =>
  readNumber(field, value, 0, 0, 1),
);

/** @internal The options of `cache_aware`. */
export const CACHE_AWARE_OPTIONS = policyOptions('cache_aware', 'CacheAwareConfig', {
  cacheThreshold: number(0.3, 0, 1),
  balanceAbsThreshold: number(64, 0, Number.MAX_VALUE),
  balanceRelThreshold: number(1.5, 1, Number.MAX_VALUE),
  // `Infinity` turns the hit bound off.
  loadFactor: custom(1.5, (field, value, fallback) =>
    value === Number.POSITIVE_INFINITY
      ? Number.POSITIVE_INFINITY
      : readNumber(field, value, fallback, 1, 1e6),
  ),
  eventLoadFactor: custom(3, (field, value, fallback) =>
    value === Number.POSITIVE_INFINITY
      ? Number.POSITIVE_INFINITY
      : readNumber(field, value, fallback, 1, 1e6),
  ),
  loadSlack: integer(0, 0, 1e6),
  maxTreeSize: integer(2_097_152, 1, 2 ** 40),
  maxTotalSize: integer(134_217_728, 1, 2 ** 50),
  evictionIntervalMs: duration(120_000),
  pageSize: PAGE_SIZE,
  kvUsageSpreadThreshold: optionalShare,
  kvUsageCeiling: optionalShare,
  staleAfterMs: duration(30_000),
  maxEventBlocks: integer(4096, 1, 1_048_576),
  missPlacement: oneOf(['least_load', 'ring'] as const, 'ring'),
  pendingTtlMs: duration(10_000, 0),
  decideBy: oneOf(['ttft', 'load'] as const, 'ttft'),
  prefillTokensPerSecond: number(10_000, 1, 1e9),
});

/**
 * Keeps each conversation's prefix on the worker that already holds it in its KV cache, without
 * piling load onto one worker.
 *
 * **`decideBy: 'ttft'` (the default).** Each candidate's time to first token is predicted as
 * (prefill tokens queued ahead there + the prompt's tokens it does not hold) / its prefill speed:
 * the queue from the uncached tokens a `Router` charged this router's leases awaiting a first
 * token (a load report younger than 1 s when it says more), what a worker holds from the tree's match path or
 * the engines' events (`event_overlap`), the speed learned from first tokens
 * (`prefillTokensPerSecond` before any). The lowest wins; near-ties (within max(5 ms, 10 %)) go
 * to the worker holding the most, then the fewest in flight, then the prompt's rendezvous order;
 * a miss's ties to the prompt's owner on the hash ring (`missPlacement: 'ring'`). A worker more
 * than `balanceAbsThreshold` requests above the fleet's idlest, and `balanceRelThreshold` times
 * it, cannot win. Only the credited workers are read, unless the best of them is slower than the
 * whole prompt at the fastest speed seen (then every candidate, one pass). `explain()` gives the
 * winner's and the runner-up's predicted figures.
 *
 * **`decideBy: 'load'`.** Per request:
 *
 * 1. One pass over the candidates reads each one's state once: availability, in-flight load,
 *    the least-loaded available worker (ties: fewer `processed`, then list position), and, when
 *    the KV-usage triggers are on, the spread and peak of reported usage.
 * 2. **Imbalanced** — `max − min > balanceAbsThreshold` and `max > balanceRelThreshold × min`, or
 *    a KV-usage trigger fires — the least-loaded worker.
 * 3. **Event mode** — when engines sent KV events for the request's model: the worker holding
 *    the most consecutive prefix blocks of the request (ties: lower load, then fewer blocks held),
 *    within the `eventLoadFactor` bound (`holder_overloaded` otherwise); no overlap → a miss this
 *    router placed in the last `pendingTtlMs` for the same first blocks (`cache_hit`), else
 *    `missPlacement`.
 * 4. **Tree mode** — otherwise the model's approximate radix tree (tokens when the request has
 *    any, else text): if the longest match covers more than `cacheThreshold` of the request, the
 *    least-loaded available worker among those holding it (`cache_hit`); if none of them is
 *    available or a candidate, the least-loaded worker (`stale_match`); if that holder would
 *    exceed `ceil(loadFactor × (total in flight + 1) / workers) + loadSlack`, the least-loaded
 *    worker (`holder_overloaded`: a hot prefix gains another holder); below the threshold, a miss
 *    (`cache_miss`), placed by `missPlacement`: for the registry's arrays, by default, the
 *    prompt's owner on the hash ring as `prefix_hash` places it (the same worker in every router),
 *    passing over workers above the bounded-load cap or above the fewest awaiting a first token;
 *    otherwise the least-loaded worker. The request is then inserted for the chosen worker,
 *    continuing the same descent.
 *
 * Trees are kept per `request.model`, all of them together within `maxTotalSize` (trees of models
 * no candidate lists explicitly go first; an emptied tree is dropped). A worker leaving
 * (`removeWorker(url)`) is removed from every tree and block index, and so is a worker whose engine
 * restarted (`workerRestarted(url, restart)`), which stays a candidate — all of it when the
 * health loop saw the restart, only what was learned before the worker's previous load report
 * when its start time showed it (trees only; the engines' events own the block index). An
 * `unref`'d timer evicts every tree to `maxTreeSize` per worker every `evictionIntervalMs`, and
 * a worker that reaches twice the budget between two runs is evicted at once; `close()` stops
 * the timer.
 *
 * Cost: the credited holders' reads, or one pass over the candidates (≈ 3–4 ns per worker), plus
 * one descent of the tree, which compares whole edge labels natively and copies only the new
 * part of the prompt. Event mode: one xxh64 per request block, up to 16 blocks past the deepest
 * holder, and a block-index lookup per probe. `stats()` counts reasons without allocating per
 * request.
 *
 * @public
 */
export class CacheAwarePolicy implements Policy {
  readonly name = 'cache_aware' as const;
  readonly #absThreshold: number;
  readonly #relThreshold: number;
  readonly #loads: LoadTable;
  /** The candidate reads of a selection, and the choices made from them. */
  readonly #scan: CandidateScan;
  readonly #caches: ModelCaches;
  /** The reason counters and the last selection's explanation. */
  readonly #reasons = new Reasons();
  /** The engines' KV events, and the selections scored from them. */
  readonly #eventMode: EventMode;
  /** The selections scored from the trees, the inserts, and the eviction timer. */
  readonly #treeMode: TreeMode;
  readonly #bounds = new Float64Array(3);
  #closed = false;
  readonly #clock: () => number;
  /** `missPlacement: 'ring'`: places misses. */
  readonly #placement: PrefixHashPolicy | undefined;
  /** The load rounds delivered and each worker's start time: what a late restart forgets up to. */
  readonly #rounds = new ReportRounds();
  /** What shared state reads and writes of the prefix placements, built on first use. */
  #sharing: PrefixSharing | undefined;

  readonly #pageSize: number;
  /** `decideBy: 'ttft'`: the cost model; `undefined` for `'load'`. */
  readonly #ttft: TtftModel | undefined;
  /** `decideBy: 'ttft'`: what the last pick's lease is charged. */
  readonly #charges: Charges | undefined;

  /** @throws {@link FleetRouteError} `INVALID_ARGUMENT` naming a bad or unknown option. */
  constructor(config: CacheAwareConfig = {}) {
    const { options: o, clock } = readPolicyConfig(CACHE_AWARE_OPTIONS, config);
    this.#absThreshold = o.balanceAbsThreshold;
    this.#relThreshold = o.balanceRelThreshold;
    const spread = o.kvUsageSpreadThreshold ?? Number.NaN;
    const ceiling = o.kvUsageCeiling ?? Number.NaN;
    this.#loads = new LoadTable(clock, o.staleAfterMs);
    this.#placement = o.missPlacement === 'ring' ? prefixHashPlacement() : undefined;
    const priorPerMs = o.decideBy === 'ttft' ? o.prefillTokensPerSecond / 1000 : 0;
    this.#scan = new CandidateScan(spread, ceiling, this.#loads, this.#placement, priorPerMs);
    this.#clock = clock;
    this.#caches = new ModelCaches(o.maxTreeSize, o.maxTotalSize, o.pageSize);
    this.#pageSize = o.pageSize;
    const ttft =
      priorPerMs > 0
        ? new TtftModel(
            this.#scan,
            this.#loads,
            priorPerMs,
            this.#absThreshold,
            this.#relThreshold,
            this.#placement === undefined
              ? undefined
              : (list, req) => prefixHashOwner(this.#placement!, list, req),
          )
        : undefined;
    this.#ttft = ttft;
    this.#charges = ttft === undefined ? undefined : new Charges(ttft, this.#scan, clock);
    this.#eventMode = new EventMode(this.#caches, this.#scan, this.#reasons, o, clock, ttft);
    this.#treeMode = new TreeMode(
      this.#caches,
      this.#scan,
      this.#reasons,
      o,
      () => this.evict(),
      ttft,
    );
  }

  select(workers: readonly Worker[], request?: SelectRequest): Worker | undefined {
    const charges = this.#charges;
    charges?.clear();
    if (!isWorkerList(workers) || workers.length === 0 || this.#closed) return undefined;
    const picked = this.#select(workers, request);
    if (picked !== undefined) charges?.record(picked, request);
    return picked;
  }

  #select(workers: readonly Worker[], request: SelectRequest | undefined): Worker | undefined {
    const scan = this.#scan;
    this.#ttft?.clear();
    scan.begin(workers.length);
    this.#reasons.begin();
    const req = typeof request === 'object' && request !== null ? request : undefined;
    const tokens = readTokens(req?.tokens);
    const text =
      tokens === undefined && typeof req?.text === 'string' && req.text.length > 0
        ? req.text
        : undefined;
    const model = typeof req?.model === 'string' ? req.model : '';
    const kind = tokens !== undefined ? TOKENS : TEXT;
    const key = tokens ?? text;
    // Read once: nothing below changes the caches before the insert (the pass reads workers only).
    const cache = this.#caches.get(model);

    // The imbalance check: O(1) from the registry's load histograms for its own arrays (when no
    // KV-usage trigger needs the reports); otherwise from the pass over the candidates.
    const bounds = this.#bounds;
    let imbalanced: boolean;
    const byTtft = this.#ttft !== undefined;
    if (!scan.kvTriggers && scan.viewOf(workers).loadBounds(bounds) && bounds[2]! > 0) {
      // Cost mode: no fleet-wide escape; the lowest in flight is the hard guard's reference.
      imbalanced =
        !byTtft && isImbalanced(bounds[0]!, bounds[1]!, this.#absThreshold, this.#relThreshold);
      this.#setMinLoad(bounds[0]!);
    } else {
      if (!scan.pass(workers)) return undefined;
      imbalanced = byTtft ? scan.kvFired : scan.imbalanced(this.#absThreshold, this.#relThreshold);
      this.#setMinLoad(scan.minLoad);
    }
    const trees = this.#treeMode;
    if (imbalanced) return trees.leastLoaded(workers, IMBALANCED, model, cache, kind, key, req);

    const events = cache?.events;
    if (events !== undefined && !events.empty && tokens !== undefined)
      return this.#eventMode.select(workers, events, tokens, req);
    return trees.select(workers, model, cache, kind, key, req);
  }

  #setMinLoad(min: number): void {
    this.#treeMode.setMinLoad(min);
    this.#eventMode.minLoad = min;
  }

  /**
   * Feeds engine KV-cache events for one worker: blocks stored or removed (by
   * {@link blockHashes}), or everything cleared. A model with event data is scored from it
   * instead of the approximate tree. Events without a model belong to requests without one; a
   * `cleared` event without a model clears every model. All events are validated before any is
   * applied.
   *
   * @throws {@link FleetRouteError} `INVALID_ARGUMENT` for a bad URL, event or hash.
   */
  applyKvEvents(workerUrl: string, events: readonly KvEvent[]): void {
    if (typeof workerUrl !== 'string' || workerUrl.length === 0)
      fail('applyKvEvents.workerUrl', 'a worker URL', workerUrl);
    if (!Array.isArray(events)) fail('applyKvEvents.events', 'an array of KV events', events);
    this.#eventMode.apply(workerUrl, events);
  }

  /**
   * @internal The tokens per block of the keys event mode matches (`pageSize`): a KV-event feeder
   * with another page size is refused, since none of its keys would match.
   */
  get kvPageSize(): number {
    return this.#pageSize;
  }

  /**
   * @internal Blocks stored or removed by their index keys (`blockKey(hi, lo)`, the 53-bit numbers
   * `applyKvEvents` derives from each hash), for callers that hold the halves already: the
   * KV-event feed and the simulator. No validation beyond the URL: keys come from our own code.
   */
  applyKvKeys(
    workerUrl: string,
    type: 'stored' | 'removed',
    model: string | undefined,
    keys: readonly number[],
  ): void {
    if (keys.length === 0) return;
    this.#eventMode.applyKeys(workerUrl, type, model, keys);
  }

  /**
   * The last `select`'s reason (`branch`, one of {@link CacheAwareReason}) and, when a tree
   * match was scored, the share of the request it covered (`matched`); `undefined` before the
   * first pick or after a `select` that picked nothing. The object is reused: read it at once.
   * O(1).
   */
  explain(): PolicyExplanation | undefined {
    const model = this.#ttft;
    return this.#reasons.explain(model?.scoredNow === true ? model.predicted : undefined);
  }

  /**
   * Load reports, read by the KV-usage triggers when they are on. Each round also marks every
   * tree's logical clock and reads each report's `startedAt`, which a restart seen by its start
   * time is measured against (see {@link CacheAwarePolicy.workerRestarted}). Cost: O(reports +
   * trees), no per-request cost.
   */
  updateLoads(reports: ReadonlyMap<string, LoadReport>): void {
    this.#loads.update(reports);
    if (!(reports instanceof Map)) return;
    this.#caches.mark(this.#rounds.deliver(reports, this.#clock()));
  }

  /**
   * Removes the worker from every tree, block index and report; trees left empty are dropped.
   * O(models + its entries).
   */
  removeWorker(url: string): void {
    if (typeof url !== 'string') return;
    this.#caches.removeTenant(url);
    this.#loads.remove(url);
    this.#rounds.forget(url);
  }

  /**
   * The engine behind `url` restarted, so its prefix cache was emptied; the policy forgets what
   * it learned of that cache before the restart. The worker stays a candidate, and its load
   * report is kept.
   *
   * - `detectedBy: 'health'` (or `restart` missing): the worker was out of `ready` until now, so
   *   nothing was routed to it since the restart. Removes it from every tree and block index, as
   *   {@link CacheAwarePolicy.removeWorker} does, and drops the event-mode placements of misses
   *   on it whose events were still due.
   * - `detectedBy: 'start_time'`: the restart happened after the worker's last report that still
   *   showed the old start time, and the worker kept taking requests. Forgets, in every tree, its
   *   entries last touched at or before that report's round (each tree's logical clock is marked
   *   at every `updateLoads`), and its pending placements made by then; what it was sent since
   *   stays: the restarted engine may hold it. The block index stays as it is: a KV-event feed
   *   clears the worker at the restart itself, and what the engine reported since it holds. The
   *   same round is found whether the router calls this before or after delivering the reports
   *   that show the change. Before any round, or for a worker whose last report is older than
   *   8 rounds, forgets up to the earliest round it knows (everything, before any).
   *
   * Cost: O(models + its entries + pending placements).
   */
  workerRestarted(url: string, restart?: WorkerRestart): void {
    if (typeof url !== 'string') return;
    if (restart?.detectedBy !== 'start_time') {
      this.#rounds.forget(url); // as the router: the next start time seen is a first value
      this.#caches.removeTenant(url);
      this.#eventMode.forget(url);
      return;
    }
    const round = this.#rounds.restartRound(url);
    this.#caches.forgetBefore(url, round === 0 ? -1 : ReportRounds.slotOf(round));
    const before = round === 0 ? Number.POSITIVE_INFINITY : this.#rounds.timeOf(round);
    this.#eventMode.forget(url, before);
  }

  /**
   * Evicts every tree down to `maxTreeSize` per worker now (what the timer runs); trees left
   * empty are dropped. O(trees + tenants + evicted leaves). @returns units evicted.
   */
  evict(): number {
    return this.#caches.evictAll();
  }

  /** Reason counters and tree sizes. Builds a plain object: O(trees). */
  stats(): CacheAwareStats {
    // Typed here: a reason of the public union missing from the counters does not compile.
    const reasons: Record<CacheAwareReason, number> = this.#reasons.counts();
    const { trees, eventModels } = this.#caches.summary();
    return { reasons, totalSize: this.#caches.total, trees, eventModels };
  }

  /** Forgets every tree, block index, report and counter, and the miss placement's prefixes. */
  reset(): void {
    this.#caches.clear();
    this.#loads.clear();
    this.#rounds.clear();
    this.#reasons.reset();
    this.#placement?.reset();
  }

  /** Stops the eviction timer and forgets everything; `select` returns `undefined` afterwards. */
  close(): void {
    this.#closed = true;
    this.#treeMode.close();
    this.reset();
  }

  /**
   * @internal The prefix placements, for shared state: whether a model is scored from engine
   * events, and another router's placements taken as this policy's own. The same object on
   * every call.
   */
  [SHARING](): PrefixSharing {
    this.#sharing ??= {
      kind: 'prefixes',
      usesEvents: (model) => {
        const events = this.#caches.get(model)?.events;
        return events !== undefined && !events.empty;
      },
      remember: (workers, model, prefix, url) => this.#remember(workers, model, prefix, url),
    };
    return this.#sharing;
  }

  /**
   * @internal What the last `select` predicts for its pick (`decideBy: 'ttft'`): the uncached
   * tokens and work ahead its lease is charged. `undefined` in `'load'` mode or when the last
   * `select` picked nothing. The object is reused.
   */
  [PREFILL_CHARGE](): PrefillCharge | undefined {
    return this.#charges?.read();
  }

  static {
    cachesOf = (policy) => policy.#caches;
  }

  /** Inserts `prefix` for `url` into `model`'s tree, as if this policy had routed it there. */
  #remember(
    workers: readonly Worker[],
    model: string,
    prefix: string | ArrayLike<number>,
    url: string,
  ): void {
    if (this.#closed) return;
    const kind = typeof prefix === 'string' ? TEXT : TOKENS;
    const cache = this.#caches.get(model);
    // The insert continues the match's descent (ModelCaches.insert).
    treeOf(cache, kind)?.match(prefix);
    this.#treeMode.insert(workers, model, cache, kind, prefix, url);
  }
}

function readTokens(tokens: unknown): ArrayLike<number> | undefined {
  if (typeof tokens !== 'object' || tokens === null) return undefined;
  const length = (tokens as ArrayLike<number>).length;
  return typeof length === 'number' && length > 0 ? (tokens as ArrayLike<number>) : undefined;
}

/** @internal The tree of a model and kind (tests check its invariants). */
export function cacheAwareTreeOf(
  policy: CacheAwarePolicy,
  model: string,
  kind: 'text' | 'tokens',
): RadixTree<unknown, unknown> | undefined {
  return treeOf(cachesOf(policy).get(model), kind === 'text' ? TEXT : TOKENS);
}

/** @internal The number of models with a tree or engine blocks (tests check the bound). */
export function cacheAwareModelCount(policy: CacheAwarePolicy): number {
  return cachesOf(policy).size;
}
