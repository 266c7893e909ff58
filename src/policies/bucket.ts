/**
 * `bucket` (placeholder until implemented).
 *
 * @module
 */
import type { Worker } from '../workers/worker.js';
import type { Policy } from './policy.js';
import { type CommonPolicyConfig, readConfig } from './support/config.js';
import { isWorkerList, leastLoaded, pick } from './support/sampling.js';

/** Options of the `bucket` policy. @public */
export type BucketConfig = CommonPolicyConfig;

/** Placeholder. @public */
export class BucketPolicy implements Policy {
  readonly name = 'bucket' as const;

  constructor(config: BucketConfig = {}) {
    readConfig('bucket', config, []);
  }

  select(workers: readonly Worker[]): Worker | undefined {
    if (!isWorkerList(workers)) return undefined;
    return pick(workers, leastLoaded(workers));
  }
}
