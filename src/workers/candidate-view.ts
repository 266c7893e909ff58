/**
 * `CandidateView`: what a policy may know about a candidate list beyond its elements — the
 * contract between the registry, which hands the lists out, and the policies, which route over
 * them in O(1).
 *
 * @module
 * @internal
 */
import type { HashRing } from '../ring/hash-ring.js';
import type { LoadCounter } from './load-counter.js';
import { Worker, workerInternals } from './worker.js';

/**
 * @internal One candidate list and what is known about it. The registry attaches a view to the
 * arrays it hands out whose load groups it knows ({@link attachView}); any other list gets one
 * built on first use ({@link viewOf}). A list's view lives as long as the list.
 *
 * - `totalLoad()` and `loadBounds()`: the list's in-flight total and the lowest and highest
 *   in-flight count of its available workers — O(groups) for a registry array (kept by leases
 *   and status changes), O(n) for another list.
 * - `version`: moves whenever a member becomes available or unavailable, ready or not (a status
 *   change of a worker whose breaker is open), joins or leaves — for
 *   a registry array, only when that happens in the groups the array is made of (another model,
 *   another registry never moves it); for another list, when it happens in the registries its
 *   workers belong to. Values derived from "which candidates can take a request" or "which are
 *   ready" are cached against it.
 * - `indexOf(url)`, `byUrlOrId(key)`: positions and lookups, built on first use (O(n) once).
 * - `ring()`: the registry's hash ring over exactly these workers, when the list is one of the
 *   registry's; `undefined` otherwise (a policy then builds its own).
 */
export class CandidateView {
  /** The list itself (never mutated: the registry's arrays are shared). */
  readonly workers: readonly Worker[];
  readonly #groups: readonly LoadCounter[] | undefined;
  /** The groups whose versions make `version`: `#groups`, else the registries of the workers. */
  readonly #versioned: readonly LoadCounter[];
  readonly #ring: (() => HashRing | undefined) | undefined;
  #byUrl: Map<string, number> | undefined;
  #byId: Map<string, Worker> | undefined;

  /**
   * @param groups - the load groups whose union the list is (a registry array), or `undefined`
   *   (in-flight figures by walking the list; the version from its workers' registries).
   * @param ring - the registry's ring over exactly these workers, if any.
   */
  constructor(
    workers: readonly Worker[],
    groups: readonly LoadCounter[] | undefined,
    ring: (() => HashRing | undefined) | undefined,
  ) {
    this.workers = workers;
    this.#groups = groups;
    this.#versioned = groups ?? registryGroupsOf(workers);
    this.#ring = ring;
  }

  /** See the class doc. O(groups). */
  get version(): number {
    const groups = this.#versioned;
    let version = 0;
    for (let i = 0; i < groups.length; i++) version += groups[i]!.version;
    return version;
  }

  /**
   * Requests in flight across the list: O(groups) for a registry array, else one pass in which
   * entries that are not workers (holes, `undefined`, foreign objects) count 0.
   */
  totalLoad(): number {
    const groups = this.#groups;
    let sum = 0;
    if (groups !== undefined) {
      for (let i = 0; i < groups.length; i++) sum += groups[i]!.inFlight;
      return sum;
    }
    const workers = this.workers;
    for (let i = 0; i < workers.length; i++) {
      const worker = workers[i];
      if (worker instanceof Worker) sum += worker.load;
    }
    return sum;
  }

  /**
   * The lowest and highest in-flight count among the list's available workers and how many are
   * available, written to `out` as `[min, max, available]` — and, when `out` has a fourth
   * element, the lowest count awaiting a first token (`Worker.prefilling`) among them; a fifth,
   * the highest — in O(groups).
   *
   * @returns `false` for a list that is not a registry array (walk it instead).
   */
  loadBounds(out: Float64Array): boolean {
    const groups = this.#groups;
    if (groups === undefined) return false;
    let min = Number.POSITIVE_INFINITY;
    let max = Number.NEGATIVE_INFINITY;
    let least = Number.POSITIVE_INFINITY;
    let most = Number.NEGATIVE_INFINITY;
    let size = 0;
    for (let i = 0; i < groups.length; i++) {
      const group = groups[i]!;
      const h = group.histogram;
      if (h.size === 0) continue;
      size += h.size;
      if (h.min < min) min = h.min;
      if (h.max > max) max = h.max;
      const p = group.prefillHistogram;
      if (p.min < least) least = p.min;
      if (p.max > most) most = p.max;
    }
    out[0] = min;
    out[1] = max;
    out[2] = size;
    if (out.length > 3) out[3] = least;
    if (out.length > 4) out[4] = most;
    return true;
  }

  /**
   * Position of the first worker with this URL, or -1. Entries that are not workers are never
   * found, so a foreign object carrying a worker's URL cannot stand in for it. O(1) after an
   * O(n) build on first use.
   */
  indexOf(url: string): number {
    if (this.#byUrl === undefined) {
      const map = new Map<string, number>();
      const workers = this.workers;
      for (let i = workers.length - 1; i >= 0; i--) {
        const worker = workers[i];
        if (worker instanceof Worker) map.set(worker.url, i);
      }
      this.#byUrl = map;
    }
    return this.#byUrl.get(url) ?? -1;
  }

  /**
   * The first worker with this URL, else the first with this id, else `undefined` (a key is
   * never both: URLs have a scheme, ids do not). O(1) after an O(n) build on first use of each.
   */
  byUrlOrId(key: string): Worker | undefined {
    const i = this.indexOf(key);
    if (i >= 0) return this.workers[i];
    if (this.#byId === undefined) {
      const map = new Map<string, Worker>();
      const workers = this.workers;
      for (let j = workers.length - 1; j >= 0; j--) {
        const worker = workers[j];
        if (worker instanceof Worker) map.set(worker.id, worker);
      }
      this.#byId = map;
    }
    return this.#byId.get(key);
  }

  /** The registry's ring over exactly these workers (built lazily by the registry), if any. */
  ring(): HashRing | undefined {
    return this.#ring?.();
  }
}

const views = new WeakMap<readonly Worker[], CandidateView>();

/**
 * @internal The registry declares what it knows about an array it hands out: the groups whose
 * union it is (for in-flight figures; their versions make its version), and its ring.
 */
export function attachView(
  workers: readonly Worker[],
  groups: readonly LoadCounter[],
  ring?: () => HashRing | undefined,
): void {
  views.set(workers, new CandidateView(workers, groups, ring));
}

/**
 * @internal The view of `workers`: the registry's for its arrays; for any other list, one built
 * on first use and kept while the list lives. Keep it (for example in an `IdentityMemo`) rather
 * than calling this on every request: it costs a `WeakMap` read, and O(n) the first time for a
 * foreign list.
 */
export function viewOf(workers: readonly Worker[]): CandidateView {
  let view = views.get(workers);
  if (view === undefined) {
    view = new CandidateView(workers, undefined, undefined);
    views.set(workers, view);
  }
  return view;
}

/** The registry-wide group (every worker's first) of each registry the list's workers are in. */
function registryGroupsOf(workers: readonly Worker[]): readonly LoadCounter[] {
  const groups = new Set<LoadCounter>();
  for (let i = 0; i < workers.length; i++) {
    const worker = workers[i];
    if (!(worker instanceof Worker)) continue;
    const all = workerInternals.registryGroupOf(worker);
    if (all !== undefined) groups.add(all);
  }
  return [...groups];
}
