/**
 * `adapterAware`: a policy wrapper that sends a LoRA adapter's requests where the adapter is
 * loaded, places a new adapter on few workers that every router agrees on, and leaves the final
 * choice (prefix cache, load) to the policy it wraps.
 *
 * @module
 */
import type { KvEvent } from '../cache/kv-event-store.js';
import { hasKvKeyPath, type KvKeyTarget } from '../cache/kv-key-target.js';
import {
  callback,
  custom,
  duration,
  integer,
  OptionTable,
  orInfinity,
} from '../core/option-table.js';
import { fail } from '../core/options.js';
import { type Clock, coarseMonotonicClock } from '../resilience/clock.js';
import { viewOf } from '../workers/candidate-view.js';
import type { LoadReport } from '../workers/load-report.js';
import type { Worker } from '../workers/worker.js';
import { AdapterResidency } from './adapter-aware/adapter-residency.js';
import { type AdapterTiers, buildTiers } from './adapter-aware/adapter-tiers.js';
import {
  type PlacementSharing,
  type PrefixSharing,
  SHARING,
  sharingOf,
} from './placement-sharing.js';
import type {
  Policy,
  PolicyExplanation,
  PolicyName,
  SelectRequest,
  WorkerRestart,
} from './policy.js';
import { PREFILL_CHARGE, type PrefillCharge, prefillChargeOf } from './prefill-charge.js';
import { available } from './support/sampling.js';

/**
 * Which models `adapterAware` treats as LoRA adapters: `'reported'` — those some worker's load
 * report has listed (`LoadReport.adapters`) or the wrapper has routed as one; `'all'` — every
 * model (a fleet where the base model is never asked for by name); or a predicate.
 *
 * @public
 */
export type AdapterSelector = 'reported' | 'all' | ((model: string) => boolean);

/**
 * Options of {@link adapterAware}.
 *
 * @public
 */
export interface AdapterAwareConfig {
  /**
   * How long a worker is believed to hold an adapter after it was last sent a request for it
   * (ms): engines keep an idle adapter loaded until a newer one evicts it, and vLLM's
   * `lora_requests_info` lists only adapters with requests in flight. Longer keeps an adapter's
   * requests together through idle gaps; shorter forgets evicted adapters sooner. About the
   * load-polling interval suits: sends then bridge the time until reports show the adapter (the
   * default was tuned with the simulator at a 10 s poll).
   * @defaultValue 10000
   */
  readonly recentMs?: number;
  /**
   * Workers a new adapter may be placed on: the ones of highest rendezvous weight for it (among
   * those with a free slot first). Every router computes the same ones, so an adapter is loaded
   * on at most this many workers until load spills it further. @defaultValue 2
   */
  readonly placements?: number;
  /**
   * How many more requests in flight (`Worker.load`) the least-loaded worker of the preferred
   * tier may carry than the least-loaded candidate before the choice widens to the next tier
   * (holding it → new placements → every candidate). `Infinity`: never widen while a preferred
   * worker is available. @defaultValue 16
   */
  readonly spillLoad?: number;
  /** Which models are adapters (see {@link AdapterSelector}). @defaultValue 'reported' */
  readonly adapters?: AdapterSelector;
  /**
   * Most adapter names learnt from reports and requests; later ones are routed as base-model
   * requests. Bounds memory against hostile reports. @defaultValue 4096
   */
  readonly maxAdapters?: number;
  /**
   * Time source (ms, monotonic) for `recentMs`.
   * @defaultValue `performance.now`, read at most once per millisecond
   */
  readonly clock?: () => number;
}

/** @internal The options of {@link adapterAware}. */
export const ADAPTER_AWARE_OPTIONS = new OptionTable('adapterAware', 'AdapterAwareConfig', {
  recentMs: duration(10_000, 0),
  placements: integer(2, 1, 4_096),
  spillLoad: orInfinity(integer(16, 0, 1_000_000)),
  adapters: custom<AdapterSelector>('reported', readSelector),
  maxAdapters: integer(4_096, 1, 1_000_000),
  clock: callback<Clock>('a function returning milliseconds', undefined, '`performance.now`'),
});

function readSelector(field: string, value: unknown): AdapterSelector {
  if (value === 'reported' || value === 'all' || typeof value === 'function')
    return value as AdapterSelector;
  return fail(field, "'reported', 'all' or a function of the model", value);
}

/** Source list → adapter → its tiers. */
type TierCache = Map<string, AdapterTiers>;

/**
 * @internal The wrapper {@link adapterAware} returns. It offers what its inner policy offers —
 * `explain`, the placement-sharing port, the KV-key path, the prefill charge — so a router, shared
 * state, a KV-event subscriber and the simulator treat it as the inner policy.
 */
export class AdapterAwarePolicy implements Policy {
  readonly name: PolicyName;
  readonly inner: Policy;
  readonly #residency: AdapterResidency;
  readonly #clock: Clock;
  readonly #placements: number;
  readonly #spillLoad: number;
  readonly #selector: AdapterSelector;
  readonly #maxAdapters: number;
  #tiers = new WeakMap<readonly Worker[], TierCache>();
  /** The last source list seen and its tiers (most calls see the same list). */
  #lastSource: readonly Worker[] | undefined;
  #lastCache: TierCache | undefined;
  readonly #bounds = new Float64Array(3);
  #port: PlacementSharing | undefined;

  /** @throws {@link FleetRouteError} `INVALID_ARGUMENT` for a non-policy or a bad option. */
  constructor(inner: Policy, config: AdapterAwareConfig = {}) {
    if (typeof inner !== 'object' || inner === null || typeof inner.select !== 'function')
      fail('adapterAware.inner', 'a policy', inner);
    const o = ADAPTER_AWARE_OPTIONS.read(config);
    this.inner = inner;
    this.name = inner.name;
    this.#clock = o.clock ?? coarseMonotonicClock;
    this.#placements = o.placements;
    this.#spillLoad = o.spillLoad;
    this.#selector = o.adapters;
    this.#maxAdapters = o.maxAdapters;
    this.#residency = new AdapterResidency(o.maxAdapters, o.recentMs);
    this.#offerInnerPorts(inner);
  }

  /**
   * Routes a request for an adapter within its narrowest tier that is not overloaded (see
   * {@link adapterAware}); any other request goes to the inner policy untouched.
   *
   * @returns the inner policy's pick, or `undefined` when it picks nothing even among all
   *   candidates. Cost: the inner policy's, plus O(1) for a base-model request; for an adapter,
   *   O(preferred tier) — and O(groups) (a registry's list; else O(n)) when that tier's least
   *   load reaches `spillLoad` — plus, when a report or a placement changed its tiers, one
   *   rebuild of O(n log n). The preferred tier's workers are read twice (here, for their
   *   availability and load, then by the inner policy).
   */
  select(workers: readonly Worker[], request?: SelectRequest): Worker | undefined {
    const inner = this.inner;
    const model = request?.model;
    if (typeof model !== 'string' || !Array.isArray(workers) || !this.#isAdapter(model))
      return inner.select(workers, request);
    const now = this.#clock();
    const list = this.#narrow(this.#tiersOf(workers, model, now).levels, workers);
    let worker = inner.select(list, request);
    if (worker === undefined && list !== workers) worker = inner.select(workers, request);
    if (worker !== undefined) {
      const residency = this.#residency;
      if (!residency.isKnown(model)) residency.learn(model);
      residency.sent(worker.url, model, now);
    }
    return worker;
  }

  explain(): PolicyExplanation | undefined {
    return this.inner.explain?.();
  }

  /** Reads each report's `adapters`, then hands the reports to the inner policy. */
  updateLoads(reports: ReadonlyMap<string, LoadReport>): void {
    if (reports instanceof Map) this.#residency.update(reports);
    this.inner.updateLoads?.(reports);
  }

  removeWorker(url: string): void {
    this.#residency.remove(url);
    this.inner.removeWorker?.(url);
  }

  /** The engine restarted: its adapters are gone. */
  workerRestarted(url: string, restart: WorkerRestart): void {
    this.#residency.remove(url);
    this.inner.workerRestarted?.(url, restart);
  }

  reset(): void {
    this.#residency.clear();
    this.#tiers = new WeakMap();
    this.#lastSource = undefined;
    this.#lastCache = undefined;
    this.inner.reset?.();
  }

  close(): void {
    this.inner.close?.();
  }

  /** @internal The residency beliefs (tests read them). */
  get residency(): AdapterResidency {
    return this.#residency;
  }

  #isAdapter(model: string): boolean {
    const selector = this.#selector;
    if (selector === 'reported') return this.#residency.isKnown(model);
    if (selector === 'all') return true;
    try {
      return selector(model) === true;
    } catch {
      return false;
    }
  }

  #tiersOf(workers: readonly Worker[], adapter: string, now: number): AdapterTiers {
    let cache = workers === this.#lastSource ? this.#lastCache : this.#tiers.get(workers);
    if (cache === undefined) {
      cache = new Map();
      this.#tiers.set(workers, cache);
    }
    this.#lastSource = workers;
    this.#lastCache = cache;
    const cached = cache.get(adapter);
    const residency = this.#residency;
    if (cached !== undefined && cached.epoch === residency.epoch && now < cached.expiresAt)
      return cached;
    if (cached === undefined && cache.size >= this.#maxAdapters) cache.clear();
    const tiers = buildTiers(workers, adapter, residency, this.#placements, now);
    cache.set(adapter, tiers);
    return tiers;
  }

  /** The narrowest level whose least-loaded available worker is within `spillLoad` of all's. */
  #narrow(levels: readonly (readonly Worker[])[], workers: readonly Worker[]): readonly Worker[] {
    const last = levels.length - 1;
    if (last === 0) return levels[0]!;
    const spill = this.#spillLoad;
    let floor = -1;
    for (let i = 0; i < last; i++) {
      const least = leastLoadOf(levels[i]!);
      // Loads are ≥ 0: under `spillLoad`, the level is taken without reading every candidate.
      if (least < spill) return levels[i]!;
      if (floor < 0) floor = this.#leastLoad(workers);
      if (least < floor + spill) return levels[i]!;
    }
    return levels[last]!;
  }

  /** The lowest `load` among the available workers of `list` (`Infinity`: none). */
  #leastLoad(list: readonly Worker[]): number {
    const bounds = this.#bounds;
    if (viewOf(list).loadBounds(bounds)) return bounds[2]! > 0 ? bounds[0]! : Infinity;
    return leastLoadOf(list);
  }

  /**
   * Offers what `inner` offers, under the same keys: the sharing port (wrapped, so placements
   * other routers made of an adapter count as sends), the prefill charge, the KV-key path.
   */
  #offerInnerPorts(inner: Policy): void {
    const self = this as unknown as Record<PropertyKey, unknown>;
    if (sharingOf(inner) !== undefined) {
      self[SHARING] = (): PlacementSharing => {
        this.#port ??= this.#wrapPort(sharingOf(inner)!);
        return this.#port;
      };
    }
    if (typeof (inner as unknown as Record<PropertyKey, unknown>)[PREFILL_CHARGE] === 'function')
      self[PREFILL_CHARGE] = (): PrefillCharge | undefined => prefillChargeOf(inner);
    if (hasKvKeyPath(inner)) {
      const target: KvKeyTarget = inner;
      self.applyKvKeys = (
        url: string,
        type: 'stored' | 'removed',
        model: string | undefined,
        keys: readonly number[],
      ): void => target.applyKvKeys(url, type, model, keys);
      self.applyKvEvents = (url: string, events: readonly KvEvent[]): void =>
        target.applyKvEvents(url, events);
      Object.defineProperty(this, 'kvPageSize', { get: () => target.kvPageSize, enumerable: true });
    }
  }

  #wrapPort(port: PlacementSharing): PlacementSharing {
    if (port.kind !== 'prefixes') return port;
    const residency = this.#residency;
    const wrapped: PrefixSharing = {
      kind: 'prefixes',
      usesEvents: (model) => port.usesEvents(model),
      remember: (workers, model, prefix, url) => {
        if (this.#isAdapter(model)) residency.sent(url, model, this.#clock());
        port.remember(workers, model, prefix, url);
      },
    };
    return wrapped;
  }
}

/** The lowest `load` among the available workers of `list`, by a walk (`Infinity`: none). */
function leastLoadOf(list: readonly Worker[]): number {
  let least = Number.POSITIVE_INFINITY;
  for (let i = 0; i < list.length; i++) {
    const worker = list[i];
    if (available(worker) && worker!.load < least) least = worker!.load;
  }
  return least;
}

/**
 * Wraps `inner` so that requests for a LoRA adapter (a `model` that names one; see
 * {@link AdapterAwareConfig.adapters}) go where the adapter is loaded. The candidates are
 * narrowed, in order of preference, to:
 *
 * 1. the workers holding the adapter — listed by their last load report (`adapters.resident`,
 *    else `running`/`waiting`), or sent a request for it within `recentMs`;
 * 2. plus its new placements: of the other workers, the `placements` of highest rendezvous
 *    weight for the adapter among those with a free slot (a report's `maxAdapters` above what
 *    they hold), else among the rest — the same workers on every router;
 * 3. every candidate.
 *
 * A level is taken unless its least-loaded available worker carries `spillLoad` or more requests
 * in flight than the least-loaded candidate; then the next one. The inner policy (normally
 * `cache_aware`) picks within the level by prefix cache and load. Requests for the base model,
 * and any without `model`, go to the inner policy untouched. The narrowed lists are kept per
 * candidate list and adapter and rebuilt only when a report or a placement changes them, so an
 * inner policy's per-list state is kept.
 *
 * The wrapper forwards `explain`, `updateLoads` (after reading the reports' adapters),
 * `removeWorker`, `workerRestarted` (forgetting the worker's adapters), `reset` and `close`, and
 * offers what the inner policy offers to routers, shared state and KV-event feeds (its name too).
 *
 * @param inner - the policy choosing within the narrowed list; closed with the wrapper.
 * @param config - see {@link AdapterAwareConfig}.
 * @returns a policy.
 * @throws {@link FleetRouteError} `INVALID_ARGUMENT` when `inner` is not a policy or an option
 *   is invalid (the message names it).
 * Emits: nothing (a router's `decision` events carry the inner policy's name and branch).
 * Cost: see {@link AdapterAwarePolicy.select}. Memory: O(workers × recent adapters, at most 256
 * each) plus the tiers of each (candidate list, adapter) routed, at most `maxAdapters` per list.
 *
 * @example
 * ```ts
 * const router = new Router({
 *   registry,
 *   transport: httpTransport(),
 *   policy: adapterAware(createPolicy('cache_aware')),
 * });
 * ```
 * @public
 */
export function adapterAware(inner: Policy, config: AdapterAwareConfig = {}): Policy {
  return new AdapterAwarePolicy(inner, config);
}
