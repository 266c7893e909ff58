/**
 * Hash rings over candidate lists, cached per list identity, with the candidates laid out in
 * ring order so a ring index maps to its worker without a map lookup.
 *
 * @module
 * @internal
 */
import { loadedHasher } from '../../core/hash.js';
import {
  buildRing,
  DEFAULT_VIRTUAL_NODES,
  HashRing,
  type RingAccept,
} from '../../ring/hash-ring.js';
import { Worker } from '../../workers/worker.js';
import { available } from './sampling.js';

/** @internal A ring over one candidate list. */
export class CandidateRing {
  readonly ring: HashRing;
  /** `aligned[i]` is the candidate whose URL is `ring.urls[i]` (undefined: not a candidate). */
  readonly aligned: readonly (Worker | undefined)[];
  /** Ring-walk predicate: the candidate at that ring index is available. Built once. */
  readonly acceptAvailable: RingAccept;
  #byUrlOrId: Map<string, Worker> | undefined;
  readonly #workers: readonly Worker[];

  constructor(ring: HashRing, workers: readonly Worker[]) {
    this.ring = ring;
    this.#workers = workers;
    const byUrl = new Map<string, Worker>();
    for (const worker of workers) if (worker instanceof Worker) byUrl.set(worker.url, worker);
    this.aligned = ring.urls.map((url) => byUrl.get(url));
    const aligned = this.aligned;
    this.acceptAvailable = (_url, index) => available(aligned[index]);
  }

  /** The candidate with this URL or id (built on first use: O(n) once). */
  byUrlOrId(key: string): Worker | undefined {
    if (this.#byUrlOrId === undefined) {
      const map = new Map<string, Worker>();
      for (const worker of this.#workers) {
        if (!(worker instanceof Worker)) continue;
        map.set(worker.url, worker);
        map.set(worker.id, worker);
      }
      this.#byUrlOrId = map;
    }
    return this.#byUrlOrId.get(key);
  }
}

/** @internal One cache per policy instance. */
export class CandidateRings {
  #cache = new WeakMap<readonly Worker[], CandidateRing>();
  readonly #virtualNodes: number;

  constructor(virtualNodes = DEFAULT_VIRTUAL_NODES) {
    this.#virtualNodes = virtualNodes;
  }

  /**
   * The ring for `workers`: `given` when the request carries one, else one built over the
   * candidates' URLs on first use and kept while the list object lives. Keep passing the same
   * list object (the registry's arrays are) or a ring, or every call rebuilds: O(n · virtualNodes).
   *
   * @returns `undefined` only when no ring is given and the hash function has not loaded yet.
   */
  get(workers: readonly Worker[], given: HashRing | undefined): CandidateRing | undefined {
    const cached = this.#cache.get(workers);
    if (given instanceof HashRing) {
      if (cached?.ring === given) return cached;
      const entry = new CandidateRing(given, workers);
      this.#cache.set(workers, entry);
      return entry;
    }
    if (cached !== undefined) return cached;
    const hasher = loadedHasher();
    if (hasher === undefined) return undefined;
    const urls: string[] = [];
    for (const worker of workers) if (worker instanceof Worker) urls.push(worker.url);
    const entry = new CandidateRing(buildRing(hasher, urls, this.#virtualNodes), workers);
    this.#cache.set(workers, entry);
    return entry;
  }

  clear(): void {
    this.#cache = new WeakMap();
  }
}
