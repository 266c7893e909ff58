/**
 * Backoff between the attempts of `Router.execute`: exponential with jitter (or a `Retry-After`
 * up to the cap, for a decision that waits it), the `Retry-After` reader, and a sleep that an
 * `AbortSignal` cancels.
 *
 * @module
 */

import { type RequestHeaders, readHeader } from '../core/headers.js';
import type { ResolvedRetryConfig } from '../resilience/retry-config.js';

/**
 * The delay before attempt `attempt + 1` (attempt ≥ 1 just failed), in ms:
 * `min(maxBackoffMs, initialBackoffMs × multiplier^(attempt − 1))` scaled by a random factor in
 * `[1 − jitter, 1 + jitter]`, or the server's `Retry-After` (capped at `maxBackoffMs`) when it
 * is given. The default decision does not pass it (after a `Retry-After` it retries at once on
 * another worker, the one that sent it cooling down); a custom `retry.shouldRetry` that would
 * rather wait it can.
 *
 * @param random - a number in [0, 1).
 * @param retryAfterMs - the server's `Retry-After`, in ms, if any.
 * @public
 */
export function backoffDelay(
  config: ResolvedRetryConfig,
  attempt: number,
  random: number,
  retryAfterMs?: number,
): number {
  if (retryAfterMs !== undefined && retryAfterMs >= 0)
    return Math.min(retryAfterMs, config.maxBackoffMs);
  const base = Math.min(
    config.maxBackoffMs,
    config.initialBackoffMs * config.multiplier ** (attempt - 1),
  );
  const factor = 1 + config.jitter * (2 * random - 1);
  return Math.max(0, Math.min(config.maxBackoffMs, base * factor));
}

/**
 * A response's `Retry-After`, in ms: delay-seconds or an HTTP date (relative to `now`, wall-clock
 * ms). Looks at `response.headers` (a `Headers` object or a record). `undefined` when absent or
 * unreadable.
 *
 * @internal
 */
export function retryAfterMs(response: unknown, now: number = Date.now()): number | undefined {
  if (typeof response !== 'object' || response === null) return undefined;
  const headers = (response as { headers?: RequestHeaders }).headers;
  const value = readHeader(headers, 'retry-after');
  if (value === undefined) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const date = Date.parse(trimmed);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/**
 * Resolves after `ms`, or rejects with the signal's reason as soon as `signal` aborts (the timer
 * is cleared then). The timer keeps the process alive: a caller is waiting on it.
 *
 * @internal
 */
export function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  if (signal?.aborted) return Promise.reject(signal.reason);
  if (ms <= 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
