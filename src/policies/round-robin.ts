/**
 * `round_robin`: each available worker in turn.
 *
 * @module
 */
import type { Worker } from '../workers/worker.js';
import type { Policy } from './policy.js';
import { type CommonPolicyConfig, policyOptions, readPolicyConfig } from './support/config.js';
import { isWorkerList, nextAvailable, pick } from './support/sampling.js';

/**
 * Options of the `round_robin` policy: only the common ones; `random` or `seed` places its
 * start. @public
 */
export type RoundRobinConfig = CommonPolicyConfig;

/** @internal The options of `round_robin`: only the common ones. */
export const ROUND_ROBIN_OPTIONS = policyOptions('round_robin', 'RoundRobinConfig', {});

/** Starting positions are drawn below this, then taken modulo the list's length. */
const START_RANGE = 2 ** 30;

/**
 * Visits the workers in list order, one request each, skipping unavailable ones. One counter
 * per instance: over a stable set of n available workers, every window of n consecutive requests
 * covers each worker exactly once. For prefill/decode pairs, `selectPair` uses a separate
 * instance per leg so the two counters never interfere.
 *
 * Each instance starts at its own position in the list, drawn once when it is built: from
 * `random` when given, else from `seed` (the same seed, the same start and picks), else from
 * `Math.random`. So several routers over one fleet do not send their first requests — and every
 * request after, in lockstep — to the same worker. Replicas built with the same `seed` start
 * together; give each its own.
 *
 * Cost: O(1) when the next worker is available; O(skipped workers) otherwise.
 * Failure behaviour: an unavailable worker is skipped and the turn passes to the next one.
 *
 * @public
 */
export class RoundRobinPolicy implements Policy {
  readonly name = 'round_robin' as const;
  /** Where the rotation starts, below {@link START_RANGE}; read modulo the list's length. */
  readonly #start: number;
  #next: number;

  /** @throws {@link FleetRouteError} `INVALID_ARGUMENT` naming a bad or unknown option. */
  constructor(config: RoundRobinConfig = {}) {
    this.#start = readPolicyConfig(ROUND_ROBIN_OPTIONS, config).random.index(START_RANGE);
    this.#next = this.#start;
  }

  select(workers: readonly Worker[]): Worker | undefined {
    if (!isWorkerList(workers) || workers.length === 0) return undefined;
    const index = nextAvailable(workers, this.#next % workers.length);
    if (index >= 0) this.#next = index + 1 === workers.length ? 0 : index + 1;
    return pick(workers, index);
  }

  /** Restarts the rotation where this instance started. */
  reset(): void {
    this.#next = this.#start;
  }
}
