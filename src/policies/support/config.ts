/**
 * Policy options: each policy declares its options once, in an option table; the options every
 * policy accepts (`random`, `seed`, `clock`) are read here, so errors read
 * `"<policy>.<field> must be …"` everywhere and unknown fields are rejected (typos fail fast).
 *
 * @module
 * @internal
 */
import {
  callback,
  custom,
  type OptionSpec,
  OptionTable,
  type Resolved,
} from '../../core/option-table.js';
import { readInteger } from '../../core/options.js';
import { type Clock, coarseMonotonicClock } from '../../resilience/clock.js';
import type { PolicyName } from '../policy.js';
import { functionRandom, mathRandom, type RandomSource, seededRandom } from './random.js';

/** Options every policy accepts. @public */
export interface CommonPolicyConfig {
  /** Random source in [0, 1); wins over `seed`. @defaultValue `Math.random` */
  readonly random?: () => number;
  /** Seed for a deterministic random sequence (replayable runs). */
  readonly seed?: number;
  /**
   * Time source (ms, monotonic) for staleness, TTLs and refits.
   * @defaultValue `performance.now`, read at most once per millisecond
   */
  readonly clock?: () => number;
}

/**
 * @internal The options every policy accepts. Read from the policy's whole config, so it ignores
 * other keys: the policy's own table has already rejected the unknown ones.
 */
export const COMMON_OPTIONS = new OptionTable(
  'policy',
  'CommonPolicyConfig',
  {
    random: callback<() => number>('a function returning [0, 1)', undefined, '`Math.random`'),
    seed: custom<number | undefined>(undefined, (field, value) =>
      readInteger(field, value, 0, 0, 0xffff_ffff),
    ),
    clock: callback<Clock>('a function returning milliseconds', undefined, '`performance.now`'),
  },
  'any',
);

/** @internal A policy's own options, in its table, besides the common ones. */
export function policyOptions<S extends Record<string, OptionSpec<unknown>>>(
  policy: PolicyName,
  documentedBy: string,
  specs: S,
): OptionTable<S> {
  return new OptionTable(policy, documentedBy, specs, COMMON_OPTIONS.keys);
}

/** @internal A policy's config, read: its own options, and the random source and clock. */
export interface PolicyConfigRead<S extends Record<string, OptionSpec<unknown>>> {
  readonly options: Resolved<S>;
  /** From `random`, else `seed`, else `Math.random`. */
  readonly random: RandomSource;
  /** From `clock`, else `performance.now` read at most once per ms. */
  readonly clock: Clock;
}

/**
 * @internal Reads a policy's whole config: its own options by its table, and the common ones
 * (checked even by policies that use neither randomness nor time).
 *
 * @throws {@link FleetRouteError} `INVALID_ARGUMENT` naming a bad or unknown option.
 */
export function readPolicyConfig<S extends Record<string, OptionSpec<unknown>>>(
  table: OptionTable<S>,
  config: unknown,
): PolicyConfigRead<S> {
  const options = table.read(config);
  const c = COMMON_OPTIONS.read(config, undefined, table.component);
  const random =
    c.random !== undefined
      ? functionRandom(c.random)
      : c.seed !== undefined
        ? seededRandom(c.seed)
        : mathRandom();
  return { options, random, clock: c.clock ?? coarseMonotonicClock };
}
