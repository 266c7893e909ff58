/**
 * `manual` (placeholder until implemented).
 *
 * @module
 */
import type { Worker } from '../workers/worker.js';
import type { Policy } from './policy.js';
import { type CommonPolicyConfig, readConfig } from './support/config.js';
import { isWorkerList, leastLoaded, pick } from './support/sampling.js';

/** Options of the `manual` policy. @public */
export type ManualConfig = CommonPolicyConfig;

/** Placeholder. @public */
export class ManualPolicy implements Policy {
  readonly name = 'manual' as const;

  constructor(config: ManualConfig = {}) {
    readConfig('manual', config, []);
  }

  select(workers: readonly Worker[]): Worker | undefined {
    if (!isWorkerList(workers)) return undefined;
    return pick(workers, leastLoaded(workers));
  }
}
