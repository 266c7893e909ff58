/**
 * Consistent-hash ring over worker URLs, with virtual nodes and bounded-load lookup.
 *
 * @module
 */
import { invalidArgument } from '../core/errors.js';
import { type Hasher, loadHasher } from '../core/hash.js';
import { readObject } from '../core/options.js';
import { radixSort64 } from './radix-sort.js';

/** Virtual nodes per worker unless configured otherwise. @public */
export const DEFAULT_VIRTUAL_NODES = 150;
const MAX_VIRTUAL_NODES = 10_000;
const MAX_BUCKET_BITS = 16;

/**
 * Options of {@link HashRing.create}.
 *
 * @public
 */
export interface HashRingOptions {
  /**
   * Points placed on the ring per worker. More points balance keys better and cost memory
   * (12 bytes a point) and build time (one xxh64 a point).
   *
   * @defaultValue 150
   */
  readonly virtualNodes?: number;
}

/**
 * Decides whether the walk may stop at a worker. `index` is the worker's position in
 * {@link HashRing.urls}, so a caller can keep a parallel array instead of a map.
 *
 * @public
 */
export type RingAccept = (url: string, index: number) => boolean;

/**
 * A worker's current load for {@link HashRing.findBounded}. Return a negative or non-finite value
 * to mark the worker as unable to take the request.
 *
 * @public
 */
export type RingLoadOf = (url: string, index: number) => number;

/**
 * @internal Each URL's points, `[hi0, lo0, hi1, lo1, …]`, computed once and reused by every ring
 * that contains the URL.
 */
export type PointCache = Map<string, Uint32Array>;

// Set by the class's static block; used by `buildRing`.
let newRing: (
  hasher: Hasher,
  urls: Iterable<string>,
  virtualNodes: number,
  cache?: PointCache,
) => HashRing;

/**
 * An immutable consistent-hash ring over a set of worker URLs.
 *
 * Placement (part of the public contract): worker `url` owns the points
 * `xxh64("${url}#${i}")` for `i` in `0 … virtualNodes-1`, seed 0, as unsigned 64-bit integers.
 * A key belongs to the first point at or after `xxh64(key)`, wrapping at the top. Two processes
 * that build a ring from the same URLs (in any order) route every key identically.
 *
 * Layout: the points sit in sorted parallel typed arrays (`hi`, `lo`, owner slot) with a bucket
 * index on the top bits of the hash, so a lookup is one hash, one bucket read and a binary
 * search over a handful of points. The ring's own code allocates nothing per lookup; the xxh64
 * call into `xxhash-wasm` returns a BigInt (about 70 bytes of short-lived garbage per key).
 *
 * @example
 * ```ts
 * const ring = await HashRing.create(['http://a:8000', 'http://b:8000']);
 * ring.find('session-42'); // 'http://b:8000', the same in every process
 * ring.find('session-42', (url) => url !== 'http://b:8000'); // failover, clockwise
 * ```
 * @public
 */
export class HashRing {
  readonly #hasher: Hasher;
  readonly #urls: readonly string[];
  readonly #index: ReadonlyMap<string, number>;
  readonly #virtualNodes: number;
  /** Sorted points, interleaved `[hi, lo, owner]`: a lookup's probes share cache lines. */
  readonly #points: Uint32Array;
  readonly #size: number;
  readonly #bucket: Uint32Array;
  readonly #shift: number;
  readonly #seen: Uint32Array;
  #epoch = 0;
  #walking = false;

  /** Rings come from {@link HashRing.create}, and from a registry. */
  private constructor(
    hasher: Hasher,
    urls: Iterable<string>,
    virtualNodes: number,
    cache?: PointCache,
  ) {
    const sorted = uniqueSortedUrls(urls);
    const vn = readVirtualNodes(virtualNodes);
    this.#hasher = hasher;
    this.#urls = Object.freeze(sorted);
    this.#index = new Map(sorted.map((url, i) => [url, i]));
    this.#virtualNodes = vn;
    const total = sorted.length * vn;
    const hi = new Uint32Array(total);
    const lo = new Uint32Array(total);
    const slot = sorted.length <= 0xffff ? new Uint16Array(total) : new Uint32Array(total);
    for (let w = 0, at = 0; w < sorted.length; w++) {
      const points = pointsOf(hasher, sorted[w]!, vn, cache);
      for (let i = 0; i < vn; i++, at++) {
        hi[at] = points[2 * i]!;
        lo[at] = points[2 * i + 1]!;
        slot[at] = w;
      }
    }
    radixSort64(hi, lo, slot);
    const interleaved = new Uint32Array(3 * total);
    for (let i = 0; i < total; i++) {
      interleaved[3 * i] = hi[i]!;
      interleaved[3 * i + 1] = lo[i]!;
      interleaved[3 * i + 2] = slot[i]!;
    }
    this.#points = interleaved;
    this.#size = total;
    const bits = Math.min(MAX_BUCKET_BITS, Math.max(1, Math.ceil(Math.log2(Math.max(2, total)))));
    this.#shift = 32 - bits;
    this.#bucket = bucketIndex(hi, bits);
    this.#seen = new Uint32Array(sorted.length);
  }

  /**
   * Builds a ring over `urls` (duplicates ignored, order irrelevant).
   *
   * Cost: O(n · virtualNodes) hashes plus a linear-time radix sort of the points.
   *
   * @throws {@link FleetRouteError} `INVALID_ARGUMENT` when a URL is not a non-empty string or
   *   `virtualNodes` is not an integer in 1 … 10,000.
   */
  static async create(urls: Iterable<string>, options: HashRingOptions = {}): Promise<HashRing> {
    const o = readObject('HashRing.create options', options);
    const virtualNodes = readVirtualNodes(o.virtualNodes ?? DEFAULT_VIRTUAL_NODES);
    const list = uniqueSortedUrls(urls); // validate before awaiting the hasher
    return new HashRing(await loadHasher(), list, virtualNodes);
  }

  /** The distinct worker URLs on the ring, sorted. The same array on every call. */
  get urls(): readonly string[] {
    return this.#urls;
  }

  /** Number of distinct workers on the ring. */
  get workerCount(): number {
    return this.#urls.length;
  }

  /** Virtual nodes per worker. */
  get virtualNodes(): number {
    return this.#virtualNodes;
  }

  /** Number of points on the ring (`workerCount × virtualNodes`). */
  get size(): number {
    return this.#size;
  }

  /** Whether `url` is on the ring. O(1). */
  has(url: string): boolean {
    return this.#index.has(url);
  }

  /** Position of `url` in {@link HashRing.urls}, or -1. O(1). */
  indexOf(url: string): number {
    return this.#index.get(url) ?? -1;
  }

  /**
   * The worker that owns `key`: the first point at or after `xxh64(key)`, walking clockwise past
   * workers that `accept` rejects. Each physical worker is offered to `accept` at most once.
   *
   * `accept` must not look up this same ring re-entrantly for correctness of the dedupe; it may,
   * at the cost of an allocation.
   *
   * @returns the URL, or `undefined` when the ring is empty or every worker was rejected.
   * @throws {@link FleetRouteError} `INVALID_ARGUMENT` when `key` is not a string or `accept` is
   *   neither a function nor `undefined`.
   * Cost: one xxh64 of the key, O(1) bucket read, O(log(points per bucket)) search, plus the walk.
   * No allocation beyond the BigInt the hash function returns.
   */
  find(key: string, accept?: RingAccept): string | undefined {
    const i = this.findIndex(key, accept);
    return i < 0 ? undefined : this.#urls[i];
  }

  /**
   * Like {@link HashRing.find} but returns the worker's position in {@link HashRing.urls}, or -1.
   */
  findIndex(key: string, accept?: RingAccept): number {
    if (typeof key !== 'string') throw invalidArgument('HashRing.find: key must be a string');
    checkAccept('HashRing.find', accept);
    if (this.#size === 0) return -1;
    this.#hasher.hashString(key);
    return this.#walk(this.#locate(this.#hasher.hi | 0, this.#hasher.lo | 0), accept);
  }

  /**
   * Lookup by a precomputed unsigned 64-bit hash (for callers that hash tokens or bytes).
   *
   * @returns the owning URL, or `undefined` when the ring is empty or every worker was rejected.
   * @throws {@link FleetRouteError} `INVALID_ARGUMENT` for a hash outside 0 … 2⁶⁴−1 or an
   *   `accept` that is not a function.
   */
  findByHash(hash: bigint, accept?: RingAccept): string | undefined {
    if (typeof hash !== 'bigint' || hash < 0n || hash > 0xffff_ffff_ffff_ffffn) {
      throw invalidArgument('HashRing.findByHash: hash must be an unsigned 64-bit bigint');
    }
    checkAccept('HashRing.findByHash', accept);
    if (this.#size === 0) return undefined;
    const i = this.#walk(
      this.#locate(Number(hash >> 32n) | 0, Number(hash & 0xffff_ffffn) | 0),
      accept,
    );
    return i < 0 ? undefined : this.#urls[i];
  }

  /**
   * Consistent hashing with bounded loads. Walks clockwise from the key's point and returns the
   * first worker whose load, counting the incoming request, stays within
   * `ceil(factor × (totalLoad + 1) / eligibleWorkers)`. Such a worker always exists when
   * `factor ≥ 1` and the loads add up to `totalLoad`; if none qualifies (stale totals), the
   * least-loaded eligible worker met on the walk is returned.
   *
   * @param loadOf - current load of a worker; negative or non-finite marks it ineligible.
   * @param factor - the bound, ≥ 1 (1.25 is a common choice).
   * @param totalLoad - the sum of all eligible workers' loads, when the caller tracks it; omitted,
   *   it is computed by calling `loadOf` once per worker (O(n)).
   * @returns the URL, or `undefined` when the ring is empty or no worker is eligible.
   * @throws {@link FleetRouteError} `INVALID_ARGUMENT` when `factor` is not a finite number ≥ 1.
   */
  findBounded(
    key: string,
    loadOf: RingLoadOf,
    factor: number,
    totalLoad?: number,
  ): string | undefined {
    if (!(typeof factor === 'number' && Number.isFinite(factor) && factor >= 1)) {
      throw invalidArgument(
        `HashRing.findBounded: factor must be a finite number >= 1, got ${String(factor)}`,
      );
    }
    if (typeof loadOf !== 'function')
      throw invalidArgument('HashRing.findBounded: loadOf must be a function');
    const n = this.#urls.length;
    if (n === 0) return undefined;
    let total = 0;
    let eligible = n;
    if (totalLoad === undefined || !Number.isFinite(totalLoad) || totalLoad < 0) {
      eligible = 0;
      for (let w = 0; w < n; w++) {
        const load = loadOf(this.#urls[w]!, w);
        if (load >= 0 && Number.isFinite(load)) {
          total += load;
          eligible++;
        }
      }
      if (eligible === 0) return undefined;
    } else {
      total = totalLoad;
    }
    const cap = Math.ceil((factor * (total + 1)) / eligible);
    let best = -1;
    let bestLoad = Number.POSITIVE_INFINITY;
    const found = this.findIndex(key, (url, index) => {
      const load = loadOf(url, index);
      if (!(load >= 0 && Number.isFinite(load))) return false;
      if (load + 1 <= cap) return true;
      if (load < bestLoad) {
        best = index;
        bestLoad = load;
      }
      return false;
    });
    const pick = found >= 0 ? found : best;
    return pick < 0 ? undefined : this.#urls[pick];
  }

  /**
   * @internal Lookup by a hash already split into 32-bit halves, signed or unsigned alike
   * (policies that hash token prefixes). Same walk as {@link HashRing.findIndex}; no allocation.
   */
  indexAt(hi: number, lo: number, accept?: RingAccept): number {
    if (this.#size === 0) return -1;
    return this.#walk(this.#locate(hi | 0, lo | 0), accept);
  }

  static {
    newRing = (hasher, urls, virtualNodes, cache) =>
      new HashRing(hasher, urls, virtualNodes, cache);
  }

  /**
   * First point index at or after (hi, lo), wrapping to 0. The halves come signed (values V8
   * passes without boxing them, where an unsigned half above 2³¹ is a heap number) and are
   * compared unsigned.
   */
  #locate(hiBits: number, loBits: number): number {
    const hi = hiBits >>> 0;
    const lo = loBits >>> 0;
    const P = this.#points;
    const b = hi >>> this.#shift;
    let left = this.#bucket[b]!;
    let right = this.#bucket[b + 1]!;
    while (left < right) {
      const mid = (left + right) >>> 1;
      const h = P[3 * mid]!;
      if (h < hi || (h === hi && P[3 * mid + 1]! < lo)) left = mid + 1;
      else right = mid;
    }
    return left === this.#size ? 0 : left;
  }

  /** From point `start`, offer each distinct worker to `accept` once, clockwise. */
  #walk(start: number, accept: RingAccept | undefined): number {
    const P = this.#points;
    if (accept === undefined) return P[3 * start + 2]!;
    const n = this.#urls.length;
    const total = this.#size;
    if (this.#walking) return this.#walkAllocating(start, accept);
    this.#walking = true;
    try {
      const seen = this.#seen;
      // Epochs stay below 2³⁰ so the counter is always a small integer.
      if (++this.#epoch === 0x4000_0000) {
        seen.fill(0);
        this.#epoch = 1;
      }
      const epoch = this.#epoch;
      let tested = 0;
      for (let k = 0, i = start; k < total; k++, i = i + 1 === total ? 0 : i + 1) {
        const s = P[3 * i + 2]!;
        if (seen[s] === epoch) continue;
        seen[s] = epoch;
        if (accept(this.#urls[s]!, s)) return s;
        if (++tested === n) break;
      }
      return -1;
    } finally {
      this.#walking = false;
    }
  }

  #walkAllocating(start: number, accept: RingAccept): number {
    const P = this.#points;
    const total = this.#size;
    const seen = new Uint8Array(this.#urls.length);
    let tested = 0;
    for (let k = 0, i = start; k < total; k++, i = i + 1 === total ? 0 : i + 1) {
      const s = P[3 * i + 2]!;
      if (seen[s] === 1) continue;
      seen[s] = 1;
      if (accept(this.#urls[s]!, s)) return s;
      if (++tested === this.#urls.length) break;
    }
    return -1;
  }
}

function readVirtualNodes(value: unknown): number {
  if (
    typeof value !== 'number' ||
    !Number.isInteger(value) ||
    value < 1 ||
    value > MAX_VIRTUAL_NODES
  ) {
    throw invalidArgument(
      `virtualNodes must be an integer between 1 and ${MAX_VIRTUAL_NODES}, got ${String(value)}`,
    );
  }
  return value;
}

function uniqueSortedUrls(urls: Iterable<string>): string[] {
  if (urls === null || typeof urls !== 'object' || !(Symbol.iterator in urls)) {
    throw invalidArgument('HashRing: urls must be an iterable of strings');
  }
  const set = new Set<string>();
  for (const url of urls) {
    if (typeof url !== 'string' || url.length === 0) {
      throw invalidArgument('HashRing: every URL must be a non-empty string');
    }
    set.add(url);
  }
  const list = [...set];
  // Code-unit order, independent of locale: the same in every process.
  list.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return list;
}

function pointsOf(hasher: Hasher, url: string, vn: number, cache?: PointCache): Uint32Array {
  const cached = cache?.get(url);
  if (cached !== undefined && cached.length === 2 * vn) return cached;
  const points = new Uint32Array(2 * vn);
  for (let i = 0; i < vn; i++) {
    hasher.hashString(`${url}#${i}`);
    points[2 * i] = hasher.hi;
    points[2 * i + 1] = hasher.lo;
  }
  cache?.set(url, points);
  return points;
}

/** `bucket[b]` = first point whose top `bits` bits are ≥ b; `bucket[2^bits]` = point count. */
function bucketIndex(hi: Uint32Array, bits: number): Uint32Array {
  const size = 1 << bits;
  const shift = 32 - bits;
  const bucket = new Uint32Array(size + 1);
  for (let i = 0; i < hi.length; i++) bucket[(hi[i]! >>> shift) + 1]!++;
  for (let b = 1; b <= size; b++) bucket[b]! += bucket[b - 1]!;
  return bucket;
}

/** @internal Builds a ring synchronously with an already-loaded hasher (registry use). */
export function buildRing(
  hasher: Hasher,
  urls: Iterable<string>,
  virtualNodes: number,
  cache?: PointCache,
): HashRing {
  return newRing(hasher, urls, virtualNodes, cache);
}

/** Rejects an `accept` predicate that cannot be called (before any lookup state is touched). */
function checkAccept(where: string, accept: unknown): void {
  if (accept !== undefined && typeof accept !== 'function') {
    throw invalidArgument(`${where}: accept must be a function or undefined`);
  }
}
