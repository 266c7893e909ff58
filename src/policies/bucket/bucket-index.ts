/**
 * The per-list index of the `bucket` policy: the list's distinct workers in URL order, and the
 * available ones among them (the bucket owners, bucket j being the j-th), kept against the list's
 * {@link CandidateView} version so a `select` on an unchanged list reads only the workers it
 * considers.
 *
 * @module
 * @internal
 */
import { type CandidateView, viewOf } from '../../workers/candidate-view.js';
import { Worker } from '../../workers/worker.js';
import { DealTree } from './deal-tree.js';

/**
 * @internal The URL order of one candidate list and its current bucket owners.
 *
 * - `rankOf` / `indices`: built once per list, O(n log n) (distinct workers by URL, then list
 *   position; entries that are not workers are left out).
 * - `owners`: list indices of the available workers in URL order (`size` valid), rebuilt by the
 *   caller's pass over the list ({@link BucketIndex.beginPass} … {@link BucketIndex.endPass}),
 *   which it runs when {@link BucketIndex.current} is `false`: after any member became available
 *   or unavailable (the view's version moved), while a member is ready but its breaker is not
 *   closed (it may admit a trial at any moment without moving the version), and for a list the
 *   registry did not hand out (its load bounds are unknown, so every call walks it).
 */
export class BucketIndex {
  /** A copy of the list the order was built for, to notice a different or changed list. */
  readonly members: readonly unknown[];
  /** List indices of the distinct workers, by URL (code-unit order), then list position. */
  readonly indices: Int32Array;
  /** For each list index, its rank in `indices`, or -1 when left out. */
  readonly rankOf: Int32Array;
  /** The list's view: its availability version and, for a registry array, its load bounds. */
  readonly view: CandidateView;
  /** List indices of the bucket owners, in URL order; `size` are valid. */
  readonly owners: Int32Array;
  /** Requests dealt to each owner since the owners last changed (bucket j is `owners[j]`). */
  readonly deals = new DealTree();
  #size = 0;
  /** Whether the pass under way found other owners than the previous one. */
  #changed = false;
  /** The view version `owners` was built at; NaN before the first pass. */
  #version = Number.NaN;
  /** Whether the last pass met a ready worker whose breaker was not closed. */
  #unsettled = false;
  /** Whether the list is a registry array (its view knows its load bounds). */
  readonly #registry: boolean;

  constructor(workers: readonly Worker[]) {
    const members: unknown[] = Array.from(workers);
    const seen = new Set<Worker>();
    const order: number[] = [];
    for (let i = 0; i < members.length; i++) {
      const entry = members[i];
      if (entry instanceof Worker && !seen.has(entry)) {
        seen.add(entry);
        order.push(i);
      }
    }
    order.sort((a, b) => {
      const ua = (members[a] as Worker).url;
      const ub = (members[b] as Worker).url;
      return ua < ub ? -1 : ua > ub ? 1 : a - b;
    });
    const rankOf = new Int32Array(members.length).fill(-1);
    for (let rank = 0; rank < order.length; rank++) rankOf[order[rank]!] = rank;
    this.members = members;
    this.indices = Int32Array.from(order);
    this.rankOf = rankOf;
    this.view = viewOf(workers);
    this.#registry = this.view.loadBounds(new Float64Array(3));
    this.owners = new Int32Array(order.length);
  }

  /** Bucket owners (available distinct workers) as of the last pass. */
  get size(): number {
    return this.#size;
  }

  /**
   * Whether `owners` still holds: a pass ran since the view's version last moved, and no member
   * was ready with a breaker that is not closed. Always `false` for a list the registry did not
   * hand out. O(groups).
   */
  current(): boolean {
    return this.#registry && !this.#unsettled && this.#version === this.view.version;
  }

  /** Forces a pass on the next call (a pick turned out unavailable). */
  invalidate(): void {
    this.#version = Number.NaN;
  }

  /**
   * Starts a pass: the caller then calls {@link BucketIndex.add} per available rank, in order,
   * and {@link BucketIndex.endPass}.
   */
  beginPass(): void {
    this.#changed = this.deals.size !== this.#size;
    this.#size = 0;
    this.#unsettled = false;
    this.#version = this.view.version;
  }

  /** Appends the owner at list index `index` (ranks ascending). */
  add(index: number): void {
    const size = this.#size++;
    if (this.owners[size] !== index) this.#changed = true;
    this.owners[size] = index;
  }

  /**
   * Ends a pass. When the owners differ from the previous pass's, every deal count starts again
   * from 0 (a bucket j is then another worker, or another size range), O(k); otherwise they are
   * kept, O(1).
   */
  endPass(): void {
    if (this.#changed || this.deals.size !== this.#size) this.deals.reset(this.#size);
  }

  /** Notes a member that is ready but whose breaker is not closed: the next call passes again. */
  unsettle(): void {
    this.#unsettled = true;
  }

  /** Whether the list has the same members in the same order as the one this was built for. */
  sameMembers(workers: readonly Worker[]): boolean {
    const members = this.members;
    if (members.length !== workers.length) return false;
    for (let i = 0; i < members.length; i++) if (members[i] !== workers[i]) return false;
    return true;
  }

  /**
   * The lowest and highest in-flight count among the list's available workers, from the
   * registry's load histograms, O(groups), into `out[0]`, `out[1]`.
   *
   * @returns `false` when the list is not a registry array or none is available.
   */
  loadBounds(out: Float64Array): boolean {
    return this.view.loadBounds(out) && out[2]! > 0;
  }
}
