/**
 * Hash rings over candidate lists, with the candidates laid out in ring order so a ring index maps
 * to its worker without a map lookup.
 *
 * @module
 * @internal
 */

import { loadedHasher } from '../../core/hash.js';
import { IdentityMemo } from '../../core/identity-memo.js';
import {
  buildRing,
  DEFAULT_VIRTUAL_NODES,
  HashRing,
  type RingAccept,
} from '../../ring/hash-ring.js';
import { type CandidateView, viewOf } from '../../workers/candidate-view.js';
import { Worker, workerInternals } from '../../workers/worker.js';
import type { WorkerRuntime } from '../../workers/worker-runtime.js';
import { available } from './sampling.js';

/** @internal A ring over one candidate list. */
export class CandidateRing {
  readonly ring: HashRing;
  /** The list's view (lookups by URL or id). */
  readonly view: CandidateView;
  /** `aligned[i]` is the candidate whose URL is `ring.urls[i]` (undefined: not a candidate). */
  readonly aligned: readonly (Worker | undefined)[];
  /** Ring-walk predicate: the candidate at that ring index is available. Built once. */
  readonly acceptAvailable: RingAccept;
  /** `#runtimes[i]`: `aligned[i]`'s runtime, kept from its first read (it never changes). */
  readonly #runtimes: (WorkerRuntime | undefined)[];

  constructor(ring: HashRing, view: CandidateView) {
    this.ring = ring;
    this.view = view;
    const aligned = ring.urls.map((url) => {
      const i = view.indexOf(url);
      return i < 0 ? undefined : view.workers[i];
    });
    this.aligned = aligned;
    this.#runtimes = new Array<WorkerRuntime | undefined>(aligned.length).fill(undefined);
    this.acceptAvailable = (_url, index) => available(aligned[index]);
  }

  /**
   * The routing state of the candidate at ring index `index` (`undefined`: not a candidate): the
   * worker's runtime, read once and kept, so a walk touches one object per worker it visits
   * rather than the worker and its runtime. O(1).
   */
  runtimeAt(index: number): WorkerRuntime | undefined {
    const kept = this.#runtimes[index];
    if (kept !== undefined) return kept;
    const worker = this.aligned[index];
    if (worker === undefined) return undefined;
    const runtime = workerInternals.runtimeOf(worker);
    this.#runtimes[index] = runtime;
    return runtime;
  }
}

/** @internal One cache per policy instance. */
export class CandidateRings {
  readonly #memo = new IdentityMemo<readonly Worker[], CandidateRing>();
  readonly #virtualNodes: number;

  constructor(virtualNodes = DEFAULT_VIRTUAL_NODES) {
    this.#virtualNodes = virtualNodes;
  }

  /**
   * The ring for `workers`: `given` when the request carries one; else the registry's ring over
   * the list when it is a registry array with as many virtual nodes as this policy's (the same
   * placement, built once for every policy); else one built over the candidates' URLs on first use with this policy's `virtualNodes`, and
   * kept while the list object lives. Keep passing the same list object (the registry's arrays
   * are) or a ring, or every call rebuilds: O(n · virtualNodes).
   *
   * @returns `undefined` only when no ring is given and the hash function has not loaded yet.
   */
  get(workers: readonly Worker[], given: HashRing | undefined): CandidateRing | undefined {
    const cached = this.#memo.peek(workers);
    if (given instanceof HashRing) {
      if (cached?.ring === given) return cached;
      const entry = new CandidateRing(given, cached?.view ?? viewOf(workers));
      this.#memo.set(workers, entry);
      return entry;
    }
    if (cached !== undefined) return cached;
    const view = viewOf(workers);
    // The registry's ring when it places workers exactly as this policy's own would.
    let ring = view.ring();
    if (ring?.virtualNodes !== this.#virtualNodes) {
      const hasher = loadedHasher();
      if (hasher === undefined) return undefined;
      const urls: string[] = [];
      for (const worker of workers) if (worker instanceof Worker) urls.push(worker.url);
      ring = buildRing(hasher, urls, this.#virtualNodes);
    }
    const entry = new CandidateRing(ring, view);
    this.#memo.set(workers, entry);
    return entry;
  }

  /**
   * The view of `workers`: the one of the list's cached ring when there is one (no `WeakMap`
   * read), else {@link viewOf}'s. Builds no ring.
   */
  viewOf(workers: readonly Worker[]): CandidateView {
    return this.#memo.peek(workers)?.view ?? viewOf(workers);
  }

  clear(): void {
    this.#memo.clear();
  }
}
