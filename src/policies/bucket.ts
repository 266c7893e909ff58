/**
 * `bucket`: prompt-length buckets over prefill workers.
 *
 * @module
 */
import { IdentityMemo } from '../core/identity-memo.js';
import { custom, derived, duration, integer, number } from '../core/option-table.js';
import { readInteger } from '../core/options.js';
import type { Clock } from '../resilience/clock.js';
import { Worker, workerInternals } from '../workers/worker.js';
import { BucketIndex } from './bucket/bucket-index.js';
import { SizeWindow } from './bucket/size-window.js';
import type { Policy, SelectRequest } from './policy.js';
import { type CommonPolicyConfig, policyOptions, readPolicyConfig } from './support/config.js';
import { isImbalanced } from './support/imbalance.js';
import { isWorkerList, pick } from './support/sampling.js';

/** Options of the `bucket` policy. @public */
export interface BucketConfig extends CommonPolicyConfig {
  /**
   * Recent request sizes the boundaries are fitted to (a ring buffer, allocated once). Memory:
   * 16 bytes per entry; each refit sorts it, O(W log W).
   * @defaultValue 1000 (requests)
   */
  readonly windowSize?: number;
  /**
   * Time between refits of the boundaries (ms, on `clock`). Checked lazily by `select`: no timer
   * runs. Shorter follows shifts in the traffic faster and sorts the window more often.
   * @defaultValue 5000
   */
  readonly refitIntervalMs?: number;
  /**
   * Sizes the window must hold before a refit replaces the initial boundaries; below it, and
   * again after `reset()`, the initial boundaries stay. At most `windowSize`. Costs nothing.
   * @defaultValue 100 (requests), or `windowSize` when smaller
   */
  readonly minSamples?: number;
  /**
   * Upper end of the initial boundaries (tokens): before the first fit, k buckets split
   * `[0, initialMaxTokens]` evenly, so bucket j takes sizes from `j · initialMaxTokens / k`;
   * longer prompts go to the last bucket. Costs nothing.
   * @defaultValue 4096
   */
  readonly initialMaxTokens?: number;
  /**
   * Imbalance escape, absolute part: the request goes to the least-loaded worker when the
   * available workers' in-flight counts differ by more than this (and the relative part holds).
   * Read from the same single pass over the candidates: no extra cost.
   * @defaultValue 32 (requests)
   */
  readonly balanceAbsThreshold?: number;
  /**
   * Imbalance escape, relative part: the busiest available worker's in-flight count must also
   * exceed this many times the least busy one's. At least 1. No extra cost.
   * @defaultValue 1.5
   */
  readonly balanceRelThreshold?: number;
  /**
   * Deal bound, in requests of the recent mean size: a bucket takes the request only while the
   * tokens dealt to it (since the available workers last changed) exceed the least-dealt
   * bucket's by at most this many mean requests; otherwise the request goes to the nearest bucket
   * (in size order) within the bound. Smaller spreads work as evenly as round robin does; larger
   * keeps sizes together more strictly and lets a bucket's queue grow while its size range is
   * busy. Cost: one O(log k) search.
   * @defaultValue 0.5 (mean requests)
   */
  readonly loadSlack?: number;
}

let exposeIndex: (
  policy: BucketPolicy,
  workers: readonly Worker[],
) => { owner: Worker; dealt: number }[];

/** Requests the moving mean of the deal weights spans (an exponential mean). */
const MEAN_SPAN = 256;

/** Buckets looked at on each side for a least-loaded owner outside the imbalance escape. */
const NEAR_STEPS = 16;

/** Tie-break starts are drawn below this, then taken modulo the buckets in play. */
const TURN_RANGE = 2 ** 30;

/** Ranks by requests awaiting a first token, then in flight: prefilling × this + load. */
const PREFILL_RANK = 2 ** 26;

/** @internal The options of `bucket`. */
export const BUCKET_OPTIONS = policyOptions('bucket', 'BucketConfig', {
  windowSize: integer(1000, 1, 1_000_000),
  // At most the window; by default min(100, windowSize).
  minSamples: custom(
    derived((resolved) => Math.min(100, resolved.windowSize as number)),
    (field, value, fallback, resolved) =>
      readInteger(field, value, fallback, 1, resolved.windowSize as number),
    '100',
  ),
  initialMaxTokens: integer(4096, 1, 0x7fff_ffff),
  refitIntervalMs: duration(5000),
  balanceAbsThreshold: number(32, 0, Number.MAX_VALUE),
  balanceRelThreshold: number(1.5, 1, Number.MAX_VALUE),
  loadSlack: number(0.5, 0, Number.MAX_VALUE),
});

/**
 * Sends prompts of similar length to the same prefill worker, so each worker batches prompts of
 * similar length and a long prompt does not stall a batch of short ones (prefill cost grows with
 * prompt length). Choose it as the prefill policy of a disaggregated fleet
 * (`selectPair(…, { prefill: createPolicy('bucket'), decode })`) when prompt lengths vary widely;
 * with uniform lengths it degrades to spreading requests evenly.
 *
 * A request's size is `tokens.length` when it has tokens, else `ceil(text.length / 4)`
 * (about four characters per token), else 0. The available candidates, in URL order (the same in
 * every process, whatever the list order), own one bucket each: with k available workers, bucket
 * j takes sizes from boundary j up to boundary j + 1 (bucket 0 from 0, bucket k − 1 without an
 * upper end). The boundaries are the k-quantiles of the last `windowSize` routed sizes
 * (requests without a prompt count as 0), fitted as soon as the window holds `minSamples` sizes
 * and refitted every `refitIntervalMs`; before that (and again after `reset()`) they are evenly
 * spaced over `[0, initialMaxTokens]`. A size on several equal boundaries goes to the bucket of
 * that range dealt the fewest tokens; among equally dealt ones, to the first at or after this
 * instance's own turn in the range (drawn once from `random`, else `seed` — the same seed deals
 * alike —, else `Math.random`), so several routers dealing alike sizes do not take the buckets
 * in lockstep. The deal bound's nearest bucket breaks its ties the same way.
 *
 * Two bounds keep a bucket from queueing ahead of the others (without them a size range that is
 * busy for a while — a burst of long prompts, conversations growing past the fitted quantiles —
 * sends its whole share to one worker): the home bucket takes the request only while the tokens
 * dealt to it (size + 1 per request, since the available workers last changed) are within
 * `loadSlack` mean requests of the least-dealt bucket's, else the nearest bucket within that
 * bound does; and when that worker has more requests awaiting their first token
 * ({@link Worker.prefilling}) than the available worker with the fewest, the request goes to the
 * nearest bucket (at most 16 on each side) whose owner has no more than that, if any (at equal
 * distance: fewer awaiting, then fewer in flight). A caller that never marks first tokens has
 * every request in flight awaiting one, so this bound then compares in-flight counts. So under
 * the same boundaries and equal loads a longer prompt goes to a bucket at or above a shorter
 * one's whenever neither bound moves it.
 *
 * Imbalance escape: when the in-flight counts of the available workers satisfy
 * `max − min > balanceAbsThreshold` and `max > balanceRelThreshold × min`, the request goes to
 * the least-loaded available worker nearest its bucket (ties: fewer `processed`, then the lower).
 *
 * Cost per call, for a registry array (`getByModel`, `getAll`) whose availability did not change:
 * O(log k) for the bucket searches and the deal bound, O(groups) for the loads' bounds, and at
 * most 33 routing-state reads (usually 1–3); no allocation. The owners are rebuilt by one pass
 * over the list, O(n), after any of its workers became available or unavailable, on every call
 * while one of them is ready with a breaker that is not closed, and on every call for any other
 * list (its load bounds are unknown). The URL order is built once per list, O(n log n). The
 * imbalance escape walks up to k owners, only while the loads are imbalanced. A refit sorts the
 * window, O(W log W), at most once per `refitIntervalMs` (plus the first fit).
 *
 * Failure behaviour: an unavailable worker owns no bucket (its share is split among the others
 * by the boundaries for k − 1 buckets) and is never chosen; when it recovers it gets its range
 * back, and every deal count starts again from 0. With no available worker, `undefined`.
 *
 * @public
 */
export class BucketPolicy implements Policy {
  readonly name = 'bucket' as const;
  readonly #window: SizeWindow;
  readonly #clock: Clock;
  readonly #refitIntervalMs: number;
  readonly #absThreshold: number;
  readonly #relThreshold: number;
  readonly #slack: number;
  #nextFitAt = Number.NaN;
  readonly #indices = new IdentityMemo<readonly Worker[], BucketIndex>();
  /** The index built last, reused for a new list with the same members. */
  #lastIndex: BucketIndex | undefined;
  /** Lowest and highest in flight, available count, lowest awaiting a first token. */
  readonly #bounds = new Float64Array(4);
  /** Moving mean of the deal weights (size + 1), the unit of `loadSlack`. */
  #meanWeight = 1;
  /**
   * Where this instance's ties between equally dealt buckets start (taken modulo the range),
   * drawn once: several routers dealing alike sizes do not walk the buckets in lockstep.
   */
  readonly #turn: number;
  // Per-call reads, by list index: valid where `#readAt` equals `#call`, so no worker is read
  // twice in one call and nothing needs clearing between calls.
  #call = 0;
  #readAt = new Float64Array(16);
  #ok = new Uint8Array(16);
  #load = new Float64Array(16);
  #prefill = new Float64Array(16);
  #processed = new Float64Array(16);

  /** @throws {@link FleetRouteError} `INVALID_ARGUMENT` naming a bad or unknown option. */
  constructor(config: BucketConfig = {}) {
    const { options, clock, random } = readPolicyConfig(BUCKET_OPTIONS, config);
    this.#turn = random.index(TURN_RANGE);
    this.#window = new SizeWindow(options.windowSize, options.minSamples, options.initialMaxTokens);
    this.#refitIntervalMs = options.refitIntervalMs;
    this.#absThreshold = options.balanceAbsThreshold;
    this.#relThreshold = options.balanceRelThreshold;
    this.#slack = options.loadSlack;
    this.#clock = clock;
  }

  /**
   * Picks the owner of the request's size bucket, or the nearest owner within the load bound
   * (see the class doc), and records the size in the window.
   *
   * @returns an available member of `workers`, or `undefined` when none is available.
   */
  select(workers: readonly Worker[], request?: SelectRequest): Worker | undefined {
    if (!isWorkerList(workers) || workers.length === 0) return undefined;
    const index = this.#indexOf(workers);
    if (workers.length > this.#readAt.length) this.#grow(workers.length);
    this.#call++;
    this.#unsettled = false;
    const size = requestSize(request);
    this.#refitIfDue();
    const bounds = this.#bounds;
    let chosen = -1;
    if (index.current() && index.loadBounds(bounds)) {
      chosen = this.#route(workers, index, size, bounds);
    }
    if (chosen < 0) {
      // A list the registry did not hand out, a changed availability, or a pick that turned out
      // unavailable: one pass over the list rebuilds the owners (reads made above are reused).
      if (!this.#pass(workers, index, bounds)) return undefined;
      chosen = this.#route(workers, index, size, bounds);
      if (chosen < 0) return undefined;
    }
    this.#window.record(size);
    return pick(workers, chosen);
  }

  /**
   * Drops the cached indices (the only state that holds workers); the next call rebuilds its
   * list's, O(n log n). The window holds sizes only, so it is kept.
   */
  removeWorker(_url: string): void {
    this.#forgetIndices();
  }

  /**
   * Empties the window and returns to the initial boundaries; the refit clock and every deal
   * count restart.
   */
  reset(): void {
    this.#window.clear();
    this.#nextFitAt = Number.NaN;
    this.#meanWeight = 1;
    this.#forgetIndices();
  }

  /** Same as {@link BucketPolicy.reset}: the policy runs no timer. */
  close(): void {
    this.reset();
  }

  /**
   * The list index of the worker for `size` among the index's owners (see the class doc), given
   * the lowest and highest in-flight count of the available workers and their lowest count
   * awaiting a first token (`bounds[0]`, `[1]`, `[3]`), counted as dealt; -1 when the owner
   * chosen turned out unavailable (the index is then stale and the caller passes).
   */
  #route(
    workers: readonly Worker[],
    index: BucketIndex,
    size: number,
    bounds: Float64Array,
  ): number {
    const min = bounds[0]!;
    const max = bounds[1]!;
    const k = index.size;
    if (k === 0) return -1;
    const window = this.#window;
    const deals = index.deals;
    const turn = this.#turn;
    const home = deals.leastIn(window.firstBucket(size, k), window.lastBucket(size, k), turn);
    let j: number;
    if (isImbalanced(min, max, this.#absThreshold, this.#relThreshold)) {
      j = this.#nearestLeastLoaded(workers, index, home, min, index.size, false);
    } else {
      const limit = deals.lowest() + this.#slack * this.#meanWeight;
      j = deals.count(home) <= limit ? home : deals.nearestAtMost(home, limit, turn);
      // A worker with more requests awaiting their first token than the least such one (a new
      // request would queue behind their prefill) yields to the nearest one within a few
      // buckets that has no more.
      const least = bounds[3]!;
      if (
        j >= 0 &&
        this.#read(workers, index.owners[j]!) &&
        this.#prefill[index.owners[j]!]! > least
      ) {
        j = this.#nearestLeastLoaded(workers, index, j, least, NEAR_STEPS, true);
      }
    }
    if (j < 0 || !this.#read(workers, index.owners[j]!)) {
      index.invalidate();
      return -1;
    }
    const weight = size + 1;
    this.#meanWeight += (weight - this.#meanWeight) / MEAN_SPAN;
    deals.add(j, weight);
    return index.owners[j]!;
  }

  /**
   * The bucket nearest to `home`, at most `steps` buckets away, whose owner has at most `min`
   * requests in flight — or, `byPrefill`, at most `min` awaiting a first token — (at equal
   * distance: the lighter, see {@link BucketPolicy.#lighter}, then the lower bucket), stepping
   * outward and reading one owner per bucket; else the lightest owner read; -1 when none read is
   * available. O(steps) reads.
   */
  #nearestLeastLoaded(
    workers: readonly Worker[],
    index: BucketIndex,
    home: number,
    min: number,
    steps: number,
    byPrefill: boolean,
  ): number {
    const k = index.size;
    const owners = index.owners;
    const level = byPrefill ? this.#prefill : this.#load;
    let best = this.#lighter(workers, index, -1, home, byPrefill);
    if (best >= 0 && level[owners[best]!]! <= min) return best;
    for (let d = 1; d <= steps && (home - d >= 0 || home + d < k); d++) {
      let step = -1;
      if (home - d >= 0) step = this.#lighter(workers, index, step, home - d, byPrefill);
      if (home + d < k) step = this.#lighter(workers, index, step, home + d, byPrefill);
      if (step < 0) continue;
      if (level[owners[step]!]! <= min) return step;
      best = this.#lighter(workers, index, best, step, byPrefill);
    }
    return best;
  }

  /**
   * `a` or bucket `b`, whichever owner is available and has less in flight — `byPrefill`, fewer
   * awaiting a first token, then less in flight — (ties: fewer picks, then `a`); `a` when `b` is
   * unavailable.
   */
  #lighter(
    workers: readonly Worker[],
    index: BucketIndex,
    a: number,
    b: number,
    byPrefill: boolean,
  ): number {
    const owners = index.owners;
    const ib = owners[b]!;
    if (!this.#read(workers, ib)) return a;
    if (a < 0) return b;
    const ia = owners[a]!;
    const load = this.#load;
    const prefill = this.#prefill;
    const rb = byPrefill ? prefill[ib]! * PREFILL_RANK + load[ib]! : load[ib]!;
    const ra = byPrefill ? prefill[ia]! * PREFILL_RANK + load[ia]! : load[ia]!;
    const processed = this.#processed;
    return rb < ra || (rb === ra && processed[ib]! < processed[ia]!) ? b : a;
  }

  /**
   * Reads list entry `i` once per call into the scratch arrays. @returns whether it is available.
   */
  #read(workers: readonly Worker[], i: number): boolean {
    if (this.#readAt[i] === this.#call) return this.#ok[i] === 1;
    this.#readAt[i] = this.#call;
    const entry = workers[i];
    if (!(entry instanceof Worker)) {
      this.#ok[i] = 0;
      return false;
    }
    const rt = workerInternals.runtimeOf(entry);
    const ok = rt.routable && rt.canExecute();
    this.#ok[i] = ok ? 1 : 0;
    this.#load[i] = rt.load;
    this.#prefill[i] = rt.prefilling;
    this.#processed[i] = rt.processed;
    // Ready, but the breaker is not closed: it may admit a trial at any moment, unseen by the
    // view's version, so the owners are rebuilt on every call until it closes.
    if (rt.routable && !rt.breakerClosed) this.#unsettled = true;
    return ok;
  }

  #unsettled = false;

  /**
   * One pass over the list's distinct workers in URL order: rebuilds the owners and writes the
   * lowest and highest load among them to `bounds`. @returns whether any is available. O(n).
   */
  #pass(workers: readonly Worker[], index: BucketIndex, bounds: Float64Array): boolean {
    const indices = index.indices;
    const load = this.#load;
    const prefill = this.#prefill;
    let min = 0;
    let max = 0;
    let least = 0;
    index.beginPass();
    for (let r = 0; r < indices.length; r++) {
      const i = indices[r]!;
      // A worker read earlier in this call is not read again.
      if (!this.#read(workers, i)) continue;
      const l = load[i]!;
      const p = prefill[i]!;
      if (index.size === 0 || l < min) min = l;
      if (index.size === 0 || l > max) max = l;
      if (index.size === 0 || p < least) least = p;
      index.add(i);
    }
    if (this.#unsettled) index.unsettle();
    index.endPass();
    bounds[0] = min;
    bounds[1] = max;
    bounds[3] = least;
    return index.size > 0;
  }

  /**
   * Refits the boundaries when `refitIntervalMs` has passed since the last attempt, and fits
   * them as soon as the window first holds `minSamples` sizes (the initial boundaries know
   * nothing of the traffic: prompts all longer than `initialMaxTokens` would share one bucket
   * until the first interval ends). O(1) unless it fits.
   */
  #refitIfDue(): void {
    const now = this.#clock();
    const next = this.#nextFitAt;
    if (now >= next) {
      this.#nextFitAt = now + this.#refitIntervalMs;
      this.#window.fit();
      return;
    }
    if (Number.isNaN(next) || now < next - this.#refitIntervalMs) {
      // First call since construction or reset, or the clock went back: start the interval now.
      this.#nextFitAt = now + this.#refitIntervalMs;
    }
    if (!this.#window.fitted) this.#window.fit();
  }

  /** The cached index for `workers`, or one built now (O(n log n), once per list). */
  #indexOf(workers: readonly Worker[]): BucketIndex {
    // Lists are cached by identity, like every per-list cache of the policies: the registry never
    // changes an array it handed out, and callers must not mutate a list they routed with.
    const cached = this.#indices.peek(workers);
    if (cached !== undefined) return cached;
    const last = this.#lastIndex;
    // A new array with the same members (a caller copying or filtering each time): reuse.
    const index = last?.sameMembers(workers) ? last : new BucketIndex(workers);
    this.#indices.set(workers, index);
    this.#lastIndex = index;
    return index;
  }

  #forgetIndices(): void {
    this.#indices.clear();
    this.#lastIndex = undefined;
  }

  static {
    exposeIndex = (policy, workers) => {
      const index = policy.#indices.peek(workers);
      if (index === undefined) return [];
      return Array.from({ length: index.size }, (_, j) => ({
        owner: workers[index.owners[j]!]!,
        dealt: index.deals.count(j),
      }));
    };
  }

  #grow(n: number): void {
    let size = this.#readAt.length;
    while (size < n) size *= 2;
    this.#readAt = new Float64Array(size);
    this.#ok = new Uint8Array(size);
    this.#load = new Float64Array(size);
    this.#prefill = new Float64Array(size);
    this.#processed = new Float64Array(size);
  }
}

/**
 * A request's size in tokens: `tokens.length` when it has tokens, else `ceil(text.length / 4)`,
 * else 0. An empty token list counts as absent. Not `least_load`'s `requestTokens` with a
 * fallback of 0: a positive finite `length` that is not a safe integer (an odd array-like) is
 * floored here — `0.5` gives 0, not the text's size — where `requestTokens` skips it.
 */
function requestSize(request: SelectRequest | undefined): number {
  if (typeof request !== 'object' || request === null) return 0;
  const tokens = request.tokens;
  if (typeof tokens === 'object' && tokens !== null) {
    const length = tokens.length;
    if (typeof length === 'number' && length > 0 && Number.isFinite(length)) {
      return Math.floor(length);
    }
  }
  const text = request.text;
  return typeof text === 'string' && text.length > 0 ? Math.ceil(text.length / 4) : 0;
}

/**
 * @internal Test access to a policy's per-list index: the bucket owners of `workers` as of the
 * last call on that list (in bucket order), and the tokens dealt to each.
 */
export const bucketInternals = {
  ownersOf(policy: BucketPolicy, workers: readonly Worker[]): { owner: Worker; dealt: number }[] {
    return exposeIndex(policy, workers);
  },
};
