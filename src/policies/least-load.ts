/**
 * `least_load` (placeholder until implemented).
 *
 * @module
 */
import type { Worker } from '../workers/worker.js';
import type { Policy } from './policy.js';
import { type CommonPolicyConfig, readConfig } from './support/config.js';
import { isWorkerList, leastLoaded, pick } from './support/sampling.js';

/** Options of the `least_load` policy. @public */
export type LeastLoadConfig = CommonPolicyConfig;

/** Placeholder. @public */
export class LeastLoadPolicy implements Policy {
  readonly name = 'least_load' as const;

  constructor(config: LeastLoadConfig = {}) {
    readConfig('least_load', config, []);
  }

  select(workers: readonly Worker[]): Worker | undefined {
    if (!isWorkerList(workers)) return undefined;
    return pick(workers, leastLoaded(workers));
  }
}
