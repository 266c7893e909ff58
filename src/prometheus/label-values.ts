/**
 * Where metric label values come from: the worker registry and fixed sets only, never request
 * content, so the series of a metric stay bounded by the fleet whatever the traffic.
 *
 * @module
 * @internal
 */
import type { CacheAwareReason } from '../policies/cache-aware.js';
import type { PolicyName } from '../policies/policy.js';
import type { WorkerRegistry } from '../registry/worker-registry.js';

/** @internal The label value of a model the registry does not name. */
export const OTHER = 'other';

/** Every built-in policy (a missing or unknown one fails to type-check; no policy code is loaded). */
const POLICY_RECORD: Readonly<Record<PolicyName, true>> = {
  random: true,
  round_robin: true,
  power_of_two: true,
  least_load: true,
  consistent_hashing: true,
  prefix_hash: true,
  manual: true,
  bucket: true,
  cache_aware: true,
  passthrough: true,
};
const POLICIES: ReadonlySet<string> = new Set(Object.keys(POLICY_RECORD));
/** Every `cache_aware` reason (a missing or unknown one fails to type-check). */
const REASONS: Readonly<Record<CacheAwareReason, true>> = {
  cache_hit: true,
  cache_miss: true,
  imbalanced: true,
  stale_match: true,
  event_overlap: true,
  holder_overloaded: true,
};
const BRANCHES: ReadonlySet<string> = new Set(Object.keys(REASONS));

/** @internal Reads label values from the worker registry. */
export class LabelValues {
  readonly #workers: WorkerRegistry;
  /** `workers.getModels()` as of the last read (the registry's array is the same until it changes). */
  #models: readonly string[] | undefined;
  #modelSet: ReadonlySet<string> = new Set();

  constructor(workers: WorkerRegistry) {
    this.#workers = workers;
  }

  /**
   * `model` when the registry names it; `''` for none (or `''` / `'*'`, which route like none);
   * else {@link OTHER}. O(1) while the registry's model list is unchanged; O(models) once after
   * it changes.
   */
  model(model: string | undefined): string {
    if (model === undefined || model === '' || model === '*') return '';
    return this.models().has(model) ? model : OTHER;
  }

  /** The models the registry names (cached on the identity of its list). */
  models(): ReadonlySet<string> {
    const models = this.#workers.getModels();
    if (models !== this.#models) {
      this.#models = models;
      this.#modelSet = new Set(models);
    }
    return this.#modelSet;
  }

  /** The URL of the registry's live worker with this id, or `undefined`. O(1). */
  worker(id: string): string | undefined {
    return this.#workers.get(id)?.url;
  }
}

/** @internal A built-in policy's name, else {@link OTHER}. */
export function policyLabel(name: string): string {
  return POLICIES.has(name) ? name : OTHER;
}

/** @internal A `cache_aware` reason, `''` for none, else {@link OTHER}. */
export function branchLabel(branch: string | undefined): string {
  if (branch === undefined) return '';
  return BRANCHES.has(branch) ? branch : OTHER;
}

/** @internal A metric whose label sets can be dropped. */
export interface Removable {
  remove(labels: Record<string, string>): void;
}

/**
 * @internal The label sets used so far of prom-client metrics labelled by model, so those of a
 * model no longer served can be dropped. Cost per `note`: one key string and one
 * map lookup; memory: one entry per series.
 */
export class SeriesTracker {
  readonly #series = new Map<string, { metric: Removable; labels: Record<string, string> }>();

  /** Remembers `labels` of `metric` (named `name`) the first time they are seen. */
  note(name: string, metric: Removable, labels: Record<string, string>): void {
    let key = name;
    for (const value of Object.values(labels)) key += `\u0000${value}`;
    if (!this.#series.has(key)) this.#series.set(key, { metric, labels });
  }

  /** Drops every series `doomed` picks. O(series). */
  dropWhere(doomed: (labels: Readonly<Record<string, string>>) => boolean): void {
    for (const [key, { metric, labels }] of this.#series) {
      if (!doomed(labels)) continue;
      metric.remove(labels);
      this.#series.delete(key);
    }
  }

  /** Series remembered. */
  get size(): number {
    return this.#series.size;
  }
}
