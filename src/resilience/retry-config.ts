/**
 * Retry options and their defaults.
 *
 * @module
 */
import { readInteger, readNumber, readObject } from '../core/options.js';

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
  const o = readObject(field, input);
  const initialBackoffMs = readInteger(
    `${field}.initialBackoffMs`,
    o.initialBackoffMs,
    base?.initialBackoffMs ?? 50,
    0,
    3_600_000,
  );
  return Object.freeze({
    maxAttempts: readInteger(`${field}.maxAttempts`, o.maxAttempts, base?.maxAttempts ?? 3, 1, 100),
    initialBackoffMs,
    maxBackoffMs: readInteger(
      `${field}.maxBackoffMs`,
      o.maxBackoffMs,
      Math.max(base?.maxBackoffMs ?? 5_000, initialBackoffMs),
      initialBackoffMs,
      3_600_000,
    ),
    multiplier: readNumber(`${field}.multiplier`, o.multiplier, base?.multiplier ?? 2, 1, 100),
    jitter: readNumber(`${field}.jitter`, o.jitter, base?.jitter ?? 0.2, 0, 1),
  });
}
