/**
 * Shared readers for policy configs: each policy resolves its config through these, so errors
 * read `"<policy>.<field> must be …"` everywhere and unknown fields are rejected (typos fail fast).
 *
 * @module
 * @internal
 */
import { invalidArgument } from '../../core/errors.js';
import { fail, readInteger, readObject } from '../../core/options.js';
import { type Clock, coarseMonotonicClock } from '../../resilience/clock.js';
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

/** @internal Field names every policy accepts. */
export const COMMON_FIELDS = ['random', 'seed', 'clock'] as const;

/**
 * @internal Reads `config` as an object and rejects fields outside `allowed`.
 */
export function readConfig(
  policy: string,
  config: unknown,
  allowed: readonly string[],
): Record<string, unknown> {
  const o = readObject(policy, config);
  for (const key of Object.keys(o)) {
    if (!allowed.includes(key) && !(COMMON_FIELDS as readonly string[]).includes(key)) {
      throw invalidArgument(
        `${policy}.${key} is not an option of ${policy} (options: ${[...allowed, ...COMMON_FIELDS].join(', ')})`,
      );
    }
  }
  // The common options are checked even by policies that do not use them.
  readRandom(policy, o);
  readClock(policy, o);
  return o;
}

/** @internal The random source from `random` or `seed`. */
export function readRandom(policy: string, o: Record<string, unknown>): RandomSource {
  if (o.random !== undefined) {
    if (typeof o.random !== 'function')
      fail(`${policy}.random`, 'a function returning [0, 1)', o.random);
    return functionRandom(o.random as () => number);
  }
  if (o.seed !== undefined)
    return seededRandom(readInteger(`${policy}.seed`, o.seed, 0, 0, 0xffff_ffff));
  return mathRandom();
}

/** @internal The clock from `clock`. */
export function readClock(policy: string, o: Record<string, unknown>): Clock {
  if (o.clock === undefined) return coarseMonotonicClock;
  if (typeof o.clock !== 'function')
    fail(`${policy}.clock`, 'a function returning milliseconds', o.clock);
  return o.clock as Clock;
}
