/**
 * `createPolicy(name, config)`: the one entry point that builds any policy from its name.
 *
 * @module
 */
import { FleetRouteError } from '../core/errors.js';
import { describe } from '../core/options.js';
import { BUCKET_OPTIONS, type BucketConfig, BucketPolicy } from './bucket.js';
import { CACHE_AWARE_OPTIONS, type CacheAwareConfig, CacheAwarePolicy } from './cache-aware.js';
import {
  CONSISTENT_HASHING_OPTIONS,
  type ConsistentHashingConfig,
  ConsistentHashingPolicy,
} from './consistent-hashing.js';
import { LEAST_LOAD_OPTIONS, type LeastLoadConfig, LeastLoadPolicy } from './least-load.js';
import { MANUAL_OPTIONS, type ManualConfig, ManualPolicy } from './manual.js';
import { PASSTHROUGH_OPTIONS, type PassthroughConfig, PassthroughPolicy } from './passthrough.js';
import type { Policy, PolicyName } from './policy.js';
import { POWER_OF_TWO_OPTIONS, type PowerOfTwoConfig, PowerOfTwoPolicy } from './power-of-two.js';
import { PREFIX_HASH_OPTIONS, type PrefixHashConfig, PrefixHashPolicy } from './prefix-hash.js';
import { RANDOM_OPTIONS, type RandomConfig, RandomPolicy } from './random.js';
import { ROUND_ROBIN_OPTIONS, type RoundRobinConfig, RoundRobinPolicy } from './round-robin.js';

/** What the list of policies needs of a policy's option table. */
interface PolicyOptionsInfo {
  /** The config type whose TSDoc documents the options. */
  readonly documentedBy: string;
  /** Whether the policy has the option `key`. */
  has(key: string): boolean;
}

/** One entry of {@link POLICIES}: the policy's factory, and its option table. */
function policy<C, P extends Policy>(
  create: (config: C) => P,
  options: PolicyOptionsInfo,
): { readonly create: (config: C) => P; readonly options: PolicyOptionsInfo } {
  return { create, options };
}

/**
 * Every policy, by name: how to build it and its option table. The one list of policies: the
 * names, the config and class maps, and which policies read load reports all derive from it. In
 * display order (the simulator's table lists them so).
 */
const POLICIES = {
  random: policy((c: RandomConfig) => new RandomPolicy(c), RANDOM_OPTIONS),
  round_robin: policy((c: RoundRobinConfig) => new RoundRobinPolicy(c), ROUND_ROBIN_OPTIONS),
  power_of_two: policy((c: PowerOfTwoConfig) => new PowerOfTwoPolicy(c), POWER_OF_TWO_OPTIONS),
  least_load: policy((c: LeastLoadConfig) => new LeastLoadPolicy(c), LEAST_LOAD_OPTIONS),
  consistent_hashing: policy(
    (c: ConsistentHashingConfig) => new ConsistentHashingPolicy(c),
    CONSISTENT_HASHING_OPTIONS,
  ),
  prefix_hash: policy((c: PrefixHashConfig) => new PrefixHashPolicy(c), PREFIX_HASH_OPTIONS),
  manual: policy((c: ManualConfig) => new ManualPolicy(c), MANUAL_OPTIONS),
  bucket: policy((c: BucketConfig) => new BucketPolicy(c), BUCKET_OPTIONS),
  cache_aware: policy((c: CacheAwareConfig) => new CacheAwarePolicy(c), CACHE_AWARE_OPTIONS),
  passthrough: policy((c: PassthroughConfig) => new PassthroughPolicy(c), PASSTHROUGH_OPTIONS),
} as const satisfies {
  readonly [N in PolicyName]: { readonly create: (config: never) => Policy & { readonly name: N } };
};

/** The config type of each policy name. @public */
export type PolicyConfigMap = {
  readonly [N in PolicyName]: NonNullable<Parameters<(typeof POLICIES)[N]['create']>[0]>;
};

/** The class `createPolicy` returns for each name. @public */
export type PolicyClassMap = {
  readonly [N in PolicyName]: ReturnType<(typeof POLICIES)[N]['create']>;
};

/** Every policy name, in display order. @public */
export const POLICY_NAMES: readonly PolicyName[] = Object.freeze(
  Object.keys(POLICIES) as PolicyName[],
);

/**
 * @internal Whether a policy reads polled load reports: it does when its options include
 * `staleAfterMs` (how old a report may be), which a router then sets from its polling interval.
 */
export function readsLoadReports(name: PolicyName): boolean {
  return POLICIES[name].options.has('staleAfterMs');
}

/** @internal Every policy's option table (the docs test checks them against the TSDoc). */
export function policyOptionTables(): readonly { readonly documentedBy: string }[] {
  return POLICY_NAMES.map((name) => POLICIES[name].options);
}

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
export function createPolicy<N extends PolicyName>(
  name: N,
  config?: PolicyConfigMap[N],
): PolicyClassMap[N];
// No catch-all overload: an unknown option (`{ loadFactr: 2 }`) must be a type error, not a
// silent fall-through to a looser signature.
export function createPolicy(name: PolicyName, config: object = {}): Policy {
  if (typeof name !== 'string' || !Object.hasOwn(POLICIES, name)) {
    throw new FleetRouteError(
      'INVALID_ARGUMENT',
      `policy must be one of ${POLICY_NAMES.map((n) => `'${n}'`).join(', ')}, got ${describe(name)}`,
    );
  }
  return (POLICIES[name].create as (c: object) => Policy)(config);
}
