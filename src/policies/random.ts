/**
 * `random`: a uniformly random available worker.
 *
 * @module
 */
import type { Worker } from '../workers/worker.js';
import type { Policy } from './policy.js';
import { type CommonPolicyConfig, policyOptions, readPolicyConfig } from './support/config.js';
import type { RandomSource } from './support/random.js';
import { isWorkerList, pick, Sampler } from './support/sampling.js';

/** Options of the `random` policy (only the common ones). @public */
export type RandomConfig = CommonPolicyConfig;

/** @internal The options of `random`: only the common ones. */
export const RANDOM_OPTIONS = policyOptions('random', 'RandomConfig', {});

/**
 * Picks a uniformly random available worker. Stateless; the right default when requests share
 * nothing and workers are alike.
 *
 * Cost: O(1) expected (a random walk without repeats that stops at the first available
 * candidate; O(n / available) in general). Failure behaviour: unavailable workers are skipped;
 * `undefined` only when none is available.
 *
 * @public
 */
export class RandomPolicy implements Policy {
  readonly name = 'random' as const;
  readonly #random: RandomSource;
  readonly #sampler = new Sampler();

  /** @throws {@link FleetRouteError} `INVALID_ARGUMENT` naming a bad or unknown option. */
  constructor(config: RandomConfig = {}) {
    this.#random = readPolicyConfig(RANDOM_OPTIONS, config).random;
  }

  select(workers: readonly Worker[]): Worker | undefined {
    if (!isWorkerList(workers)) return undefined;
    return pick(workers, this.#sampler.randomAvailable(workers, this.#random));
  }
}
