/**
 * `createPolicy(name, config)`: the one entry point that builds any policy from its name.
 *
 * @module
 */
import { FleetRouteError } from '../core/errors.js';
import { describe } from '../core/options.js';
import { type BucketConfig, BucketPolicy } from './bucket.js';
import { type CacheAwareConfig, CacheAwarePolicy } from './cache-aware.js';
import { type ConsistentHashingConfig, ConsistentHashingPolicy } from './consistent-hashing.js';
import { type LeastLoadConfig, LeastLoadPolicy } from './least-load.js';
import { type ManualConfig, ManualPolicy } from './manual.js';
import { type PassthroughConfig, PassthroughPolicy } from './passthrough.js';
import { POLICY_NAMES, type Policy, type PolicyName } from './policy.js';
import { type PowerOfTwoConfig, PowerOfTwoPolicy } from './power-of-two.js';
import { type PrefixHashConfig, PrefixHashPolicy } from './prefix-hash.js';
import { type RandomConfig, RandomPolicy } from './random.js';
import { type RoundRobinConfig, RoundRobinPolicy } from './round-robin.js';

/** The config type of each policy name. @public */
export interface PolicyConfigMap {
  random: RandomConfig;
  round_robin: RoundRobinConfig;
  power_of_two: PowerOfTwoConfig;
  least_load: LeastLoadConfig;
  consistent_hashing: ConsistentHashingConfig;
  prefix_hash: PrefixHashConfig;
  bucket: BucketConfig;
  cache_aware: CacheAwareConfig;
  manual: ManualConfig;
  passthrough: PassthroughConfig;
}

/** The class `createPolicy` returns for each name. @public */
export interface PolicyClassMap {
  random: RandomPolicy;
  round_robin: RoundRobinPolicy;
  power_of_two: PowerOfTwoPolicy;
  least_load: LeastLoadPolicy;
  consistent_hashing: ConsistentHashingPolicy;
  prefix_hash: PrefixHashPolicy;
  bucket: BucketPolicy;
  cache_aware: CacheAwarePolicy;
  manual: ManualPolicy;
  passthrough: PassthroughPolicy;
}

const FACTORIES: {
  readonly [N in keyof PolicyConfigMap]: (config: PolicyConfigMap[N]) => PolicyClassMap[N];
} = {
  random: (c) => new RandomPolicy(c),
  round_robin: (c) => new RoundRobinPolicy(c),
  power_of_two: (c) => new PowerOfTwoPolicy(c),
  least_load: (c) => new LeastLoadPolicy(c),
  consistent_hashing: (c) => new ConsistentHashingPolicy(c),
  prefix_hash: (c) => new PrefixHashPolicy(c),
  bucket: (c) => new BucketPolicy(c),
  cache_aware: (c) => new CacheAwarePolicy(c),
  manual: (c) => new ManualPolicy(c),
  passthrough: (c) => new PassthroughPolicy(c),
};

/**
 * Builds a policy from its name, validating its config completely: an unknown name, an unknown
 * option or a bad value fails with `INVALID_ARGUMENT` naming it (`least_load.lambda must be …`;
 * `prefix_hash.loadFactr is not an option of prefix_hash …`). Under TypeScript an unknown option
 * in an object literal is also a compile-time error.
 * Each call returns a new, independent instance.
 *
 * @example
 * ```ts
 * const policy = createPolicy('prefix_hash', { prefixTokens: 128 });
 * const worker = policy.select(registry.getByModel('llama-3.1-8b'), { tokens });
 * ```
 * @throws {@link FleetRouteError} `INVALID_ARGUMENT`.
 * @public
 */
export function createPolicy<N extends keyof PolicyConfigMap>(
  name: N,
  config?: PolicyConfigMap[N],
): PolicyClassMap[N];
// No catch-all overload: an unknown option (`{ loadFactr: 2 }`) must be a type error, not a
// silent fall-through to a looser signature.
export function createPolicy(name: PolicyName, config: object = {}): Policy {
  const factory = (FACTORIES as Record<string, ((c: object) => Policy) | undefined>)[name];
  if (typeof name !== 'string' || factory === undefined || !Object.hasOwn(FACTORIES, name)) {
    const known = POLICY_NAMES.filter((n) => Object.hasOwn(FACTORIES, n));
    throw new FleetRouteError(
      'INVALID_ARGUMENT',
      `policy must be one of ${known.map((n) => `'${n}'`).join(', ')}, got ${describe(name)}`,
    );
  }
  return factory(config);
}
