/**
 * `passthrough`: the first available worker, in list order.
 *
 * @module
 */
import type { Worker } from '../workers/worker.js';
import type { Policy } from './policy.js';
import { type CommonPolicyConfig, policyOptions, readPolicyConfig } from './support/config.js';
import { isWorkerList, nextAvailable, pick } from './support/sampling.js';

/** Options of the `passthrough` policy (only the common ones, unused). @public */
export type PassthroughConfig = CommonPolicyConfig;

/** @internal The options of `passthrough`: only the common ones (unused). */
export const PASSTHROUGH_OPTIONS = policyOptions('passthrough', 'PassthroughConfig', {});

/**
 * Picks the first available worker in list order: the caller's order is the preference order
 * (a primary with fallbacks, or a single-worker model).
 *
 * Cost: O(1) when the first worker is available; O(position of the first available one)
 * otherwise. Failure behaviour: falls through to the next available worker in order.
 *
 * @public
 */
export class PassthroughPolicy implements Policy {
  readonly name = 'passthrough' as const;

  /** @throws {@link FleetRouteError} `INVALID_ARGUMENT` naming an unknown option. */
  constructor(config: PassthroughConfig = {}) {
    readPolicyConfig(PASSTHROUGH_OPTIONS, config);
  }

  select(workers: readonly Worker[]): Worker | undefined {
    if (!isWorkerList(workers) || workers.length === 0) return undefined;
    return pick(workers, nextAvailable(workers, 0));
  }
}
