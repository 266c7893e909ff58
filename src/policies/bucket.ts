/**
 * `bucket`: prompt-length buckets over prefill workers.
 *
 * @module
 */
import { IdentityMemo } from '../core/identity-memo.js';
import { custom, derived, duration, integer, number } from '../core/option-table.js';
import { readInteger } from '../core/options.js';
import type { Clock } from '../resilience/clock.js';
import { Worker } from '../workers/worker.js';
import { SizeWindow } from './bucket/size-window.js';
import type { Policy, SelectRequest } from './policy.js';
import { type CommonPolicyConfig, policyOptions, readPolicyConfig } from './support/config.js';
import { isImbalanced } from './support/imbalance.js';
import { isWorkerList, pick, Sampler } from './support/sampling.js';

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
}

/** Candidates in bucket order, built once per candidate list. */
interface BucketOrder {
  /** A copy of the list the order was built for, to notice a different or changed list. */
  readonly members: readonly unknown[];
  /** List indices of the distinct workers, by URL (code-unit order), then list position. */
  readonly indices: Int32Array;
  /** For each list index, its rank in `indices` (its bucket order), or -1 when left out. */
  readonly rankOf: Int32Array;
}

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
 * (requests without a prompt count as 0), refitted every `refitIntervalMs`, so each worker
 * receives about the same share of requests; until a refit has seen `minSamples` sizes (and again after `reset()`) they are evenly spaced over
 * `[0, initialMaxTokens]`. A size exactly on a boundary may go to either bucket it touches, and
 * one on several equal boundaries (many identical recent sizes) to any bucket they bound: the
 * least loaded of them (then fewer `processed`, then the lower bucket), so identical prompts
 * spread instead of piling onto one worker. Either way a longer prompt never goes to a lower
 * bucket than a shorter one under the same boundaries.
 *
 * Imbalance escape: when the in-flight counts of the available workers satisfy
 * `max − min > balanceAbsThreshold` and `max > balanceRelThreshold × min`, the request goes to
 * the least-loaded available worker instead (ties: fewer `processed`, then URL order).
 *
 * Cost per call: one pass over the candidates (one routing-state read each), two O(log k)
 * searches and no allocation once the list's order is cached; the order is built once per
 * candidate list, O(n log n), and reused for a list with the same members in the same order
 * (the registry's arrays keep their identity). A refit sorts the window, O(W log W), at most
 * once per `refitIntervalMs`.
 *
 * Failure behaviour: buckets are recomputed over the available workers on every call, so an
 * unavailable worker owns no bucket (its share is split among the others by the boundaries for
 * k − 1 buckets) and is never chosen; when it recovers it gets its range back. With no
 * available worker, `undefined`.
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
  #nextFitAt = Number.NaN;
  readonly #orders = new IdentityMemo<readonly Worker[], BucketOrder>();
  /** The order built last, reused for a new list with the same members. */
  #lastOrder: BucketOrder | undefined;
  readonly #sampler = new Sampler();
  // Per-call scratch, indexed by bucket: the candidate's list index, its load and processed;
  // `#byRank*` hold the same by URL rank before the unavailable ranks are squeezed out.
  #slots = new Int32Array(16);
  #loads = new Float64Array(16);
  #processed = new Float64Array(16);
  #byRankLoad = new Float64Array(16);
  #byRankProcessed = new Float64Array(16);
  #byRankOk = new Uint8Array(16);

  /** @throws {@link FleetRouteError} `INVALID_ARGUMENT` naming a bad or unknown option. */
  constructor(config: BucketConfig = {}) {
    const { options, clock } = readPolicyConfig(BUCKET_OPTIONS, config);
    this.#window = new SizeWindow(options.windowSize, options.minSamples, options.initialMaxTokens);
    this.#refitIntervalMs = options.refitIntervalMs;
    this.#absThreshold = options.balanceAbsThreshold;
    this.#relThreshold = options.balanceRelThreshold;
    this.#clock = clock;
  }

  select(workers: readonly Worker[], request?: SelectRequest): Worker | undefined {
    if (!isWorkerList(workers) || workers.length === 0) return undefined;
    const { indices, rankOf } = this.#orderOf(workers);
    const ranks = indices.length;
    if (ranks > this.#slots.length) this.#grow(ranks);
    const slots = this.#slots;
    const loads = this.#loads;
    const processed = this.#processed;
    const rankLoad = this.#byRankLoad;
    const rankProcessed = this.#byRankProcessed;
    const rankOk = this.#byRankOk;
    const sampler = this.#sampler;
    const state = sampler.state;
    // The one pass over the candidates, in list order (sequential memory): each distinct worker's
    // routing state is read once and stored by its URL rank.
    for (let i = 0; i < rankOf.length; i++) {
      const r = rankOf[i]!;
      if (r < 0) continue;
      const ok = sampler.read(workers[i]);
      rankOk[r] = ok ? 1 : 0;
      rankLoad[r] = state.load;
      rankProcessed[r] = state.processed;
    }
    // Then the available ones in bucket order, from the scratch arrays only.
    let k = 0;
    let minLoad = 0;
    let maxLoad = 0;
    for (let r = 0; r < ranks; r++) {
      if (rankOk[r] === 0) continue;
      const load = rankLoad[r]!;
      if (k === 0 || load < minLoad) minLoad = load;
      if (k === 0 || load > maxLoad) maxLoad = load;
      slots[k] = indices[r]!;
      loads[k] = load;
      processed[k] = rankProcessed[r]!;
      k++;
    }
    if (k === 0) return undefined;
    const size = requestSize(request);
    this.#refitIfDue();
    const imbalanced = isImbalanced(minLoad, maxLoad, this.#absThreshold, this.#relThreshold);
    const window = this.#window;
    const chosen = imbalanced
      ? this.#lightest(0, k - 1)
      : this.#lightest(window.firstBucket(size, k), window.lastBucket(size, k));
    window.record(size);
    return pick(workers, slots[chosen]!);
  }

  /**
   * Drops the cached bucket orders (the only state that holds workers); the next call rebuilds
   * its list's order, O(n log n). The window holds sizes only, so it is kept.
   */
  removeWorker(_url: string): void {
    this.#forgetOrders();
  }

  /** Empties the window and returns to the initial boundaries; the refit clock restarts. */
  reset(): void {
    this.#window.clear();
    this.#nextFitAt = Number.NaN;
    this.#forgetOrders();
  }

  /** Same as {@link BucketPolicy.reset}: the policy runs no timer. */
  close(): void {
    this.reset();
  }

  /** The bucket in `from … to` (inclusive) whose owner has the least load, then fewer picks. */
  #lightest(from: number, to: number): number {
    const loads = this.#loads;
    const processed = this.#processed;
    let best = from;
    for (let j = from + 1; j <= to; j++) {
      if (
        loads[j]! < loads[best]! ||
        (loads[j] === loads[best] && processed[j]! < processed[best]!)
      ) {
        best = j;
      }
    }
    return best;
  }

  /** Refits the boundaries when `refitIntervalMs` has passed since the last attempt. */
  #refitIfDue(): void {
    const now = this.#clock();
    const next = this.#nextFitAt;
    if (now >= next) {
      this.#nextFitAt = now + this.#refitIntervalMs;
      this.#window.fit();
    } else if (Number.isNaN(next) || now < next - this.#refitIntervalMs) {
      // First call since construction or reset, or the clock went back: start the interval now.
      this.#nextFitAt = now + this.#refitIntervalMs;
    }
  }

  /** The cached order for `workers`, or one built now (O(n log n), once per list). */
  #orderOf(workers: readonly Worker[]): BucketOrder {
    // Lists are cached by identity, like every per-list cache of the policies: the registry never
    // changes an array it handed out, and callers must not mutate a list they routed with.
    const cached = this.#orders.peek(workers);
    if (cached !== undefined) return cached;
    const last = this.#lastOrder;
    // A new array with the same members (a caller copying or filtering each time): reuse.
    const order = last !== undefined && sameMembers(last, workers) ? last : buildOrder(workers);
    this.#orders.set(workers, order);
    this.#lastOrder = order;
    return order;
  }

  #forgetOrders(): void {
    this.#orders.clear();
    this.#lastOrder = undefined;
  }

  #grow(n: number): void {
    let size = this.#slots.length;
    while (size < n) size *= 2;
    this.#slots = new Int32Array(size);
    this.#loads = new Float64Array(size);
    this.#processed = new Float64Array(size);
    this.#byRankLoad = new Float64Array(size);
    this.#byRankProcessed = new Float64Array(size);
    this.#byRankOk = new Uint8Array(size);
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

function sameMembers(order: BucketOrder, workers: readonly Worker[]): boolean {
  const members = order.members;
  if (members.length !== workers.length) return false;
  for (let i = 0; i < members.length; i++) if (members[i] !== workers[i]) return false;
  return true;
}

/** Distinct workers of the list by URL, then list position; other entries are left out. */
function buildOrder(workers: readonly Worker[]): BucketOrder {
  const members: unknown[] = Array.from(workers);
  const seen = new Set<Worker>();
  const indices: number[] = [];
  for (let i = 0; i < members.length; i++) {
    const entry = members[i];
    if (entry instanceof Worker && !seen.has(entry)) {
      seen.add(entry);
      indices.push(i);
    }
  }
  indices.sort((a, b) => {
    const ua = (members[a] as Worker).url;
    const ub = (members[b] as Worker).url;
    return ua < ub ? -1 : ua > ub ? 1 : a - b;
  });
  const rankOf = new Int32Array(members.length).fill(-1);
  indices.forEach((index, rank) => {
    rankOf[index] = rank;
  });
  return { members, indices: Int32Array.from(indices), rankOf };
}
