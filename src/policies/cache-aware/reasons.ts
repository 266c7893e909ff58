/**
 * Why `cache_aware` sent each selection where it did: a counter per reason (its `stats()`), and
 * the last selection's reason and match (its `explain()`).
 *
 * @module
 * @internal
 */

import type { Worker } from '../../workers/worker.js';
import type { PolicyExplanation, PredictedTtft } from '../policy.js';
import { pick } from '../support/sampling.js';

/**
 * @internal Every reason, by its index: the order of the counters. The public union
 * `CacheAwareReason` names the same reasons: `CacheAwarePolicy.stats` does not compile when one
 * of them is missing here.
 */
export const REASONS = [
  'cache_hit',
  'cache_miss',
  'imbalanced',
  'stale_match',
  'event_overlap',
  'holder_overloaded',
] as const;

/** @internal A reason's name (`CacheAwareReason`). */
export type ReasonName = (typeof REASONS)[number];
/** @internal */
export const HIT = 0;
/** @internal */
export const MISS = 1;
/** @internal */
export const IMBALANCED = 2;
/** @internal */
export const STALE = 3;
/** @internal */
export const OVERLAP = 4;
/** @internal */
export const OVERLOADED = 5;

/**
 * @internal The reason counters and the last selection's explanation. Cost: nothing allocated
 * per selection (the explanation is one object, reused).
 */
export class Reasons {
  readonly #counts = new Float64Array(REASONS.length);
  /** What `explain` returns: the last select's reason and match. */
  readonly #explained: {
    branch: ReasonName;
    matched: number | undefined;
    held: number | undefined;
    predicted:
      | { readonly winner: PredictedTtft; readonly runnerUp: PredictedTtft | undefined }
      | undefined;
  } = {
    branch: 'cache_miss',
    matched: undefined,
    held: undefined,
    predicted: undefined,
  };
  #explainable = false;

  /** Starts a selection: nothing to explain until it picks a worker. */
  begin(): void {
    this.#explained.matched = undefined;
    this.#explained.held = undefined;
    this.#explainable = false;
  }

  /** The selection's tree match covered `share` of the request (0 … 1). */
  matched(share: number): void {
    this.#explained.matched = share;
  }

  /** The worker the selection picks holds `share` of the request (0 … 1), as far as it knows. */
  held(share: number): void {
    this.#explained.held = share;
  }

  /**
   * The selection picks candidate `index` of `workers` (-1: none) for `reason` (an index of
   * {@link REASONS}): counts the reason, explains it, and returns the worker, its `processed`
   * counted.
   */
  chose(workers: readonly Worker[], index: number, reason: number): Worker | undefined {
    this.#counts[reason]!++;
    this.#explained.branch = REASONS[reason]!;
    this.#explainable = true;
    return pick(workers, index);
  }

  /**
   * The last selection's reason and match, with the cost model's `predicted` figures when it
   * chose; `undefined` before the first pick or after a selection that picked nothing. The object
   * is reused. O(1).
   */
  explain(predicted?: {
    readonly winner: PredictedTtft;
    readonly runnerUp: PredictedTtft | undefined;
  }): PolicyExplanation | undefined {
    if (!this.#explainable) return undefined;
    this.#explained.predicted = predicted;
    return this.#explained;
  }

  /** The counters by reason, as a plain object. O(reasons). */
  counts(): Record<ReasonName, number> {
    return Object.fromEntries(REASONS.map((r, i) => [r, this.#counts[i]!])) as Record<
      ReasonName,
      number
    >;
  }

  /** Zeroes the counters (the last explanation stays). */
  reset(): void {
    this.#counts.fill(0);
  }
}
