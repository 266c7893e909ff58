/**
 * `round_robin`: each available worker in turn.
 *
 * @module
 */
import type { Worker } from '../workers/worker.js';
import type { Policy } from './policy.js';
import { type CommonPolicyConfig, policyOptions, readPolicyConfig } from './support/config.js';
import { isWorkerList, nextAvailable, pick } from './support/sampling.js';

/** Options of the `round_robin` policy (only the common ones, unused). @public */
export type RoundRobinConfig = CommonPolicyConfig;

/** @internal The options of `round_robin`: only the common ones (unused). */
export const ROUND_ROBIN_OPTIONS = policyOptions('round_robin', 'RoundRobinConfig', {});

/**
 * Visits the workers in list order, one request each, skipping unavailable ones. One counter
 * per instance: over a stable set of n available workers, every window of n consecutive requests
 * covers each worker exactly once. For prefill/decode pairs, `selectPair` uses a separate
 * instance per leg so the two counters never interfere.
 *
 * Cost: O(1) when the next worker is available; O(skipped workers) otherwise.
 * Failure behaviour: an unavailable worker is skipped and the turn passes to the next one.
 *
 * @public
 */
export class RoundRobinPolicy implements Policy {
  readonly name = 'round_robin' as const;
  #next = 0;

  /** @throws {@link FleetRouteError} `INVALID_ARGUMENT` naming an unknown option. */
  constructor(config: RoundRobinConfig = {}) {
    readPolicyConfig(ROUND_ROBIN_OPTIONS, config);
  }

  select(workers: readonly Worker[]): Worker | undefined {
    if (!isWorkerList(workers) || workers.length === 0) return undefined;
    const index = nextAvailable(workers, this.#next % workers.length);
    if (index >= 0) this.#next = index + 1 === workers.length ? 0 : index + 1;
    return pick(workers, index);
  }

  /** Restarts the rotation at the first worker. */
  reset(): void {
    this.#next = 0;
  }
}
