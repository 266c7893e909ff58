/**
 * Retry options and their defaults.
 *
 * @module
 */
import { custom, derived, integer, number, OptionTable } from '../core/option-table.js';
import { readInteger } from '../core/options.js';

/**
 * How a failed request is retried on another worker (durations in milliseconds). The delay
 * before attempt `n` (n ≥ 1) is `min(maxBackoffMs, initialBackoffMs × multiplier^(n-1))`, then
 * scaled by a random factor in `[1 − jitter, 1 + jitter]`.
 *
 * @public
 */
export interface RetryConfig {
  /** Attempts in all, the first one included. @defaultValue 3 */
  readonly maxAttempts?: number;
  /** Delay before the first retry (ms). @defaultValue 50 */
  readonly initialBackoffMs?: number;
  /** Upper bound of the delay (ms). @defaultValue 5000 */
  readonly maxBackoffMs?: number;
  /** Growth of the delay per attempt, ≥ 1. @defaultValue 2 */
  readonly multiplier?: number;
  /** Relative jitter in [0, 1]: 0.2 means ±20 %. @defaultValue 0.2 */
  readonly jitter?: number;
}

/** {@link RetryConfig} with every default filled in. @public */
export type ResolvedRetryConfig = Readonly<Required<RetryConfig>>;

/** @internal The retry options. */
export const RETRY_OPTIONS = new OptionTable(
  'retry',
  'RetryConfig',
  {
    maxAttempts: integer(3, 1, 100),
    initialBackoffMs: integer(50, 0, 3_600_000),
    // Never below the initial backoff (over a base: the base's, or the initial backoff).
    maxBackoffMs: custom(
      derived((resolved, base) =>
        Math.max(
          (base?.maxBackoffMs as number | undefined) ?? 5_000,
          resolved.initialBackoffMs as number,
        ),
      ),
      (field, value, fallback, resolved) =>
        readInteger(field, value, fallback, resolved.initialBackoffMs as number, 3_600_000),
      '5000',
    ),
    multiplier: number(2, 1, 100),
    jitter: number(0.2, 0, 1),
  },
  'any',
);

/**
 * Validates `input` and fills in defaults, falling back to `base` for omitted fields.
 *
 * @throws FleetRouteError `INVALID_ARGUMENT` naming the first bad field.
 * @internal
 */
export function resolveRetryConfig(
  input: unknown,
  field = 'retry',
  base?: ResolvedRetryConfig,
): ResolvedRetryConfig {
  return RETRY_OPTIONS.read(input, base, field);
}
