/**
 * The candidate reads of `cache_aware`, and the choices made from them: the least-loaded worker,
 * the least-loaded holder of a matched prefix, the best holder of engine KV blocks, where a miss
 * goes, and whether a holder is over the hit bound. A selection reads each candidate's state at
 * most once — in a full pass when it needs one (run at most once per selection), or only the
 * holders of a match on the cache-hit path — and stores what it read by candidate index.
 *
 * @module
 * @internal
 */
import type { BlockKeyCursor } from '../../cache/block-hashes.js';
import type { KvBlockIndex } from '../../cache/kv-event-store.js';
import { IdentityMemo } from '../../core/identity-memo.js';
import { type CandidateView, viewOf } from '../../workers/candidate-view.js';
import { Worker, workerInternals } from '../../workers/worker.js';
import type { WorkerRuntime } from '../../workers/worker-runtime.js';
import type { SelectRequest } from '../policy.js';
import { type PrefixHashPolicy, prefixHashPlace } from '../prefix-hash.js';
import { isImbalanced } from '../support/imbalance.js';
import type { LoadTable, StoredLoad } from '../support/load-table.js';

/**
 * Event mode, cost mode: the longest stride between two probes of a prompt's blocks. A holder is
 * assumed to hold every block before one it holds (an engine's prefix cache evicts a block's
 * descendants before it); a gap inside a stride goes unseen.
 */
const MAX_STRIDE = 16;

/** @internal */
export class CandidateScan {
  /** Whether either KV-usage trigger is configured. */
  readonly kvTriggers: boolean;
  readonly #spread: number;
  readonly #ceiling: number;
  /** The load reports, read by the pass when a KV-usage trigger is on. */
  readonly #loads: LoadTable;
  /** `missPlacement: 'ring'`: places misses. */
  readonly #placement: PrefixHashPolicy | undefined;
  /** Whether this selection ran the pass, and what it found. */
  #passed = false;
  #anyAvailable = false;
  #available = new Uint8Array(64);
  #load = new Float64Array(64);
  #processed = new Float64Array(64);
  #active = new Int32Array(64);
  /** Cost mode: prefill work queued on candidate i (tokens), and its prefill speed (tokens/ms). */
  #queued = new Float64Array(64);
  #speed = new Float64Array(64);
  /** Cost mode: what is left of that queue now, had the engine worked it since it last moved. */
  #left = new Float64Array(64);
  /** Cost mode: the policy's clock, read at most once per selection (`#nowAt === #epoch`). */
  readonly #clock: () => number;
  #now = 0;
  #nowAt = -1;

  /** `#readAt[i] === #epoch`: candidate i was read in this selection. */
  #readAt = new Uint32Array(64);
  #epoch = 0;
  /** Index of the least-loaded available candidate after the pass (ties: processed, position). */
  leastLoaded = -1;
  #minLoad = 0;
  #maxLoad = 0;
  #kvFired = false;
  readonly #views = new IdentityMemo<readonly Worker[], CandidateView>();
  /**
   * Cost mode (`decideBy: 'ttft'`): each read also takes the worker's queued prefill work and
   * speed. The prior speed (tokens per ms); 0 when off.
   */
  readonly #priorPerMs: number;
  /** Tokens per request awaiting a first token, on average: what other routers' count weighs. */
  meanCharge = 0;
  /** The fastest prefill speed read so far (tokens per ms): a bound on any worker not read. */
  fastest = 0;

  /**
   * @param spread - `kvUsageSpreadThreshold`, NaN when off.
   * @param ceiling - `kvUsageCeiling`, NaN when off.
   * @param placement - the ring placement of misses (`missPlacement: 'ring'`), else `undefined`.
   */
  constructor(
    spread: number,
    ceiling: number,
    loads: LoadTable,
    placement: PrefixHashPolicy | undefined,
    priorPerMs = 0,
  ) {
    this.#clock = loads.clock;
    this.#priorPerMs = priorPerMs;
    this.fastest = priorPerMs;
    this.#spread = spread;
    this.#ceiling = ceiling;
    this.kvTriggers = !Number.isNaN(spread) || !Number.isNaN(ceiling);
    this.#loads = loads;
    this.#placement = placement;
  }

  /** Starts a selection over `n` candidates: none read yet, no pass run. */
  begin(n: number): void {
    this.#passed = false;
    if (n > this.#available.length) this.#grow(n);
    if (++this.#epoch === 0x4000_0000) {
      this.#readAt.fill(0);
      this.#epoch = 1;
      this.#nowAt = -1;
    }
  }

  /**
   * The pass over every candidate, once per selection: the first call runs it (with the load
   * reports when a KV-usage trigger is on), later ones answer what it found.
   * @returns whether any candidate is available.
   */
  pass(workers: readonly Worker[]): boolean {
    if (!this.#passed) {
      const loads = this.#loads;
      const reports = this.kvTriggers && loads.size > 0 ? loads.alignedTo(workers) : undefined;
      this.#anyAvailable = this.#run(workers, reports, loads);
      this.#passed = true;
    }
    return this.#anyAvailable;
  }

  /**
   * The candidate a miss goes to (see `missPlacement`): the prompt's owner on the ring, without a
   * pass over the candidates, or the least-loaded worker the pass found; -1 when none is
   * available.
   */
  missIndex(workers: readonly Worker[], request: SelectRequest | undefined): number {
    const placement = this.#placement;
    // The ring walk reads the workers it passes; after the pass (a list the registry did not
    // hand out, event mode, the KV-usage triggers) that would read them twice: use the pass.
    if (placement === undefined || this.#passed) {
      return this.pass(workers) ? this.leastLoaded : -1;
    }
    const worker = prefixHashPlace(placement, workers, request);
    return worker === undefined ? -1 : this.viewOf(workers).indexOf(worker.url);
  }

  /**
   * Whether a holder with `load` in flight is over the hit bound, counting this request:
   * `ceil(factor × (total in flight + 1) / workers) + slack` (`factor` `Infinity`: never).
   */
  overBound(workers: readonly Worker[], load: number, factor: number, slack: number): boolean {
    if (factor === Number.POSITIVE_INFINITY) return false;
    const total = this.viewOf(workers).totalLoad();
    const cap = Math.ceil((factor * (total + 1)) / workers.length) + slack;
    return load + 1 > cap;
  }

  /**
   * The pass over every candidate (one already read in this selection is not read again).
   * @returns whether any candidate is available.
   */
  #run(
    workers: readonly Worker[],
    reports: readonly (StoredLoad | undefined)[] | undefined,
    table: LoadTable,
  ): boolean {
    const n = workers.length;
    const load = this.#load;
    const processed = this.#processed;
    const now = reports === undefined ? 0 : table.now();
    let best = -1;
    let min = 0;
    let max = 0;
    let usageMin = Number.POSITIVE_INFINITY;
    let usageMax = Number.NEGATIVE_INFINITY;
    const available = this.#available;
    const readAt = this.#readAt;
    const epoch = this.#epoch;
    for (let i = 0; i < n; i++) {
      let l: number;
      let p: number;
      if (readAt[i] === epoch) {
        if (available[i] === 0) continue;
        l = load[i]!;
        p = processed[i]!;
      } else {
        // Inlined read (the pass is the hot loop): the worker's runtime, once.
        readAt[i] = epoch;
        const worker = workers[i];
        if (!(worker instanceof Worker)) {
          available[i] = 0;
          continue;
        }
        const rt = workerInternals.runtimeOf(worker);
        if (!rt.routable || !rt.canExecute()) {
          available[i] = 0;
          continue;
        }
        available[i] = 1;
        l = rt.load;
        p = rt.processed;
        load[i] = l;
        processed[i] = p;
        if (this.#priorPerMs > 0) this.#readCost(rt, i);
      }
      if (best < 0) {
        best = i;
        min = l;
        max = l;
      } else {
        if (l > max) max = l;
        if (l < min || (l === min && p < processed[best]!)) {
          best = i;
          min = l;
        }
      }
      if (reports !== undefined) {
        const report = reports[i];
        if (table.isFresh(report, now) && !Number.isNaN(report.tokenUsage)) {
          if (report.tokenUsage < usageMin) usageMin = report.tokenUsage;
          if (report.tokenUsage > usageMax) usageMax = report.tokenUsage;
        }
      }
    }
    this.leastLoaded = best;
    this.#minLoad = min;
    this.#maxLoad = max;
    this.#kvFired =
      usageMax >= usageMin &&
      ((!Number.isNaN(this.#spread) && usageMax - usageMin > this.#spread) ||
        (!Number.isNaN(this.#ceiling) && usageMax > this.#ceiling));
    return best >= 0;
  }

  /** After the pass: the fleet is imbalanced (in-flight counts), or a KV-usage trigger fired. */
  imbalanced(abs: number, rel: number): boolean {
    return isImbalanced(this.#minLoad, this.#maxLoad, abs, rel) || this.#kvFired;
  }

  /** The in-flight load of candidate `i`, as read by the pass, `leastLoadedOf` or `bestHolders`. */
  loadOf(i: number): number {
    return this.#load[i]!;
  }

  /**
   * The least-loaded available candidate among `holders` (worker URLs: the holders of a matched
   * prefix; ties: processed, then position), or -1 when none of them is an available candidate.
   * Reads only those candidates.
   */
  leastLoadedOf(workers: readonly Worker[], holders: readonly string[]): number {
    const view = this.viewOf(workers);
    const load = this.#load;
    const processed = this.#processed;
    let best = -1;
    for (let h = 0; h < holders.length; h++) {
      const i = view.indexOf(holders[h]!);
      if (i < 0 || !this.#read(workers, i)) continue;
      if (
        best < 0 ||
        load[i]! < load[best]! ||
        (load[i] === load[best] &&
          (processed[i]! < processed[best]! || (processed[i] === processed[best] && i < best)))
      ) {
        best = i;
      }
    }
    return best;
  }

  /**
   * Reads the candidates among `first` (the holders of a prompt's first block) into `#active`,
   * at most `max` of the available ones. Each holder is read once.
   *
   * @returns how many are available; -2 when only unavailable candidates hold the block (they
   *   were read), -1 when no candidate does.
   */
  #firstHolders(workers: readonly Worker[], first: Iterable<string>, max: number): number {
    const view = this.viewOf(workers);
    const active = this.#active;
    let count = 0;
    let read = false;
    for (const url of first) {
      const i = view.indexOf(url);
      if (i < 0) continue;
      read = true;
      if (this.#read(workers, i)) {
        active[count++] = i;
        if (count >= max) break;
      }
    }
    return count > 0 ? count : read ? -2 : -1;
  }

  /**
   * The available candidate holding the most consecutive prefix blocks (`keys`, hashed only as
   * far as two candidates still tie), ties to the lower load, then fewer blocks held, then
   * position; -1 when no candidate holds the first block, -2 when only unavailable ones do (they
   * were read). Reads only the holders of the first block, each once.
   */
  bestHolders(workers: readonly Worker[], keys: BlockKeyCursor, events: KvBlockIndex): number {
    const key0 = keys.next();
    if (key0 < 0) return -1;
    const first = events.holders(key0);
    if (first === undefined) return -1;
    const active = this.#active;
    let count = this.#firstHolders(workers, first, Number.POSITIVE_INFINITY);
    if (count < 0) return count;
    while (count > 1) {
      const key = keys.next();
      if (key < 0) break;
      const holders = events.holders(key);
      if (holders === undefined) break;
      let kept = 0;
      for (let j = 0; j < count; j++) {
        const i = active[j]!;
        if (holders.has(workers[i]!.url)) active[kept++] = i;
      }
      if (kept === 0) break;
      count = kept;
    }
    let best = -1;
    let bestSize = 0;
    const load = this.#load;
    for (let j = 0; j < count; j++) {
      const i = active[j]!;
      const size = events.sizeOf(workers[i]!.url);
      if (
        best < 0 ||
        load[i]! < load[best]! ||
        (load[i] === load[best] && (size < bestSize || (size === bestSize && i < best)))
      ) {
        best = i;
        bestSize = size;
      }
    }
    return best;
  }

  /** Candidate i's availability, reading its state on first use in this selection. */
  #read(workers: readonly Worker[], i: number): boolean {
    if (this.#readAt[i] === this.#epoch) return this.#available[i] === 1;
    this.#readAt[i] = this.#epoch;
    const worker = workers[i];
    if (!(worker instanceof Worker)) {
      this.#available[i] = 0;
      return false;
    }
    const rt = workerInternals.runtimeOf(worker);
    if (!rt.routable || !rt.canExecute()) {
      this.#available[i] = 0;
      return false;
    }
    this.#available[i] = 1;
    this.#load[i] = rt.load;
    this.#processed[i] = rt.processed;
    if (this.#priorPerMs > 0) this.#readCost(rt, i);
    return true;
  }

  /** Cost mode: candidate i's queued prefill work and speed, from its runtime. */
  #readCost(rt: WorkerRuntime, i: number): void {
    // This router's charges only: other routers' requests awaiting a first token (shared state)
    // weigh in the hard guard through the in-flight count, not here (see docs/cache-aware.md).
    // What is left of them orders near-ties only: as a prediction it is too hopeful (an engine's
    // steps also cost its decoding, and other routers' requests may be ahead).
    const speed = rt.prefillSpeed(this.#priorPerMs);
    if (rt.prefillTokens > 0) {
      if (this.#nowAt !== this.#epoch) {
        this.#now = this.#clock();
        this.#nowAt = this.#epoch;
      }
      this.#queued[i] = rt.prefillTokens;
      this.#left[i] = rt.queuedPrefillTokens(this.#now, speed);
    } else {
      this.#queued[i] = 0;
      this.#left[i] = 0;
    }
    this.#speed[i] = speed;
    if (speed > this.fastest) this.fastest = speed;
  }

  /** Whether candidate i is available, reading it on first use in this selection. */
  read(workers: readonly Worker[], i: number): boolean {
    return this.#read(workers, i);
  }

  /** Cost mode: the prefill work queued on candidate i (tokens), as read. */
  queuedOf(i: number): number {
    return this.#queued[i]!;
  }

  /**
   * Cost mode: what is left of candidate i's queued prefill work (tokens) had its engine worked
   * it at the speed read since its last first token (or since the charge that found it empty).
   */
  leftOf(i: number): number {
    return this.#left[i]!;
  }

  /** Cost mode: candidate i's prefill speed (tokens per ms), as read. */
  speedOf(i: number): number {
    return this.#speed[i]!;
  }

  /** After the pass: whether a KV-usage trigger fired. */
  get kvFired(): boolean {
    return this.#kvFired;
  }

  /** After the pass: the lowest in-flight count of the available candidates. */
  get minLoad(): number {
    return this.#minLoad;
  }

  /** Whether candidate i was read in this selection and found available. */
  isReadAvailable(i: number): boolean {
    return this.#readAt[i] === this.#epoch && this.#available[i] === 1;
  }

  /**
   * Event mode, cost mode: every available candidate holding the request's first block, with how
   * many consecutive blocks of `keys` it holds (hashed until no candidate holds the next one, or
   * the keys end). Fills `out` (candidate indexes) and `depths`, at most `max` of them, deepest
   * not guaranteed first; returns how many, -1 when no candidate holds the first block, -2 when
   * only unavailable ones do (they were read).
   */
  holderDepths(
    workers: readonly Worker[],
    keys: BlockKeyCursor,
    events: KvBlockIndex,
    out: Int32Array,
    depths: Float64Array,
    max: number,
  ): number {
    const key0 = keys.next();
    if (key0 < 0) return -1;
    const first = events.holders(key0);
    if (first === undefined) return -1;
    const active = this.#active;
    let count = this.#firstHolders(workers, first, max);
    if (count < 0) return count;
    // Every active candidate holds block `lo`. Probe ahead by a growing stride (at most
    // MAX_STRIDE blocks, so the hashing overshoots the deepest holder by little); a candidate that
    // does not hold the probed block is placed by a binary search over the blocks in between.
    this.#keyCount = 1;
    this.#keys[0] = key0;
    let found = 0;
    let lo = 0;
    let stride = 1;
    while (count > 0) {
      const probe = this.#keyAt(keys, lo + stride);
      const holders = probe < 0 ? undefined : events.holders(probe);
      const at = probe < 0 ? this.#keyCount : lo + stride;
      let kept = 0;
      for (let j = 0; j < count; j++) {
        const i = active[j]!;
        const url = workers[i]!.url;
        if (holders?.has(url)) {
          active[kept++] = i;
          continue;
        }
        // Holds `lo`, not `at`: the first block it lacks is in (lo, at].
        let a = lo;
        let b = at;
        while (b - a > 1) {
          const mid = (a + b) >>> 1;
          if (events.holders(this.#keys[mid]!)?.has(url)) a = mid;
          else b = mid;
        }
        out[found] = i;
        depths[found++] = b;
      }
      count = kept;
      lo = at;
      if (stride < MAX_STRIDE) stride *= 2;
    }
    return found;
  }

  /** Blocks hashed so far in this selection's scan, in `#keys`. */
  #keyCount = 0;
  #keys = new Float64Array(256);

  /** The key of block `b` (hashing the blocks up to it), or -1 past the last. */
  #keyAt(cursor: BlockKeyCursor, b: number): number {
    while (this.#keyCount <= b) {
      const key = cursor.next();
      if (key < 0) return -1;
      if (this.#keyCount === this.#keys.length) {
        const grown = new Float64Array(this.#keys.length * 2);
        grown.set(this.#keys);
        this.#keys = grown;
      }
      this.#keys[this.#keyCount++] = key;
    }
    return this.#keys[b]!;
  }

  /** The candidate view of `workers` (URL → position, in-flight figures), kept per list. */
  viewOf(workers: readonly Worker[]): CandidateView {
    return this.#views.get(workers, viewOf);
  }

  #grow(n: number): void {
    let size = this.#available.length;
    while (size < n) size *= 2;
    this.#available = new Uint8Array(size);
    this.#load = new Float64Array(size);
    this.#processed = new Float64Array(size);
    this.#active = new Int32Array(size);
    this.#queued = new Float64Array(size);
    this.#speed = new Float64Array(size);
    this.#left = new Float64Array(size);

    this.#readAt = new Uint32Array(size);
    this.#epoch = 0;
    this.#nowAt = -1;
  }
}
