/**
 * The decision between the attempts of `Router.execute`: what a failed attempt looks like to it,
 * its signature, and the default one (exponential backoff with jitter; at once after a
 * `Retry-After`, which cools the worker down instead).
 *
 * @module
 */
import { MAX_TIMER_MS } from '../core/option-table.js';
import { fail } from '../core/options.js';
import type { SelectRequest } from '../policies/policy.js';
import {
  type ResolvedRetryConfig,
  type RetryConfig,
  resolveRetryConfig,
} from '../resilience/retry-config.js';
import type { Worker } from '../workers/worker.js';
import { backoffDelay } from './retry.js';

/** What `send` gets besides the worker in `Router.execute`. @public */
export interface AttemptContext {
  /** Aborts when the caller's signal aborts or the router closes. */
  readonly signal: AbortSignal;
  /** 1 for the first attempt. */
  readonly attempt: number;
  /**
   * On a decode leg (`request.leg: 'decode'`): the share of the prompt (0 … 1) that the policy
   * which picked this attempt's worker believed that worker holds in its prefix cache (its
   * `explain().held`, such as `cache_aware`'s). `undefined` on other requests, and when the
   * policy keeps no such knowledge.
   */
  readonly matched?: number | undefined;
  /**
   * Call when this attempt's first output token arrives (for a streaming response, its first
   * chunk of generated text): the worker's {@link Worker.prefilling} count goes down now rather
   * than when `send` settles, so load-aware policies see that it is past prefill. Optional;
   * later calls, and calls after the attempt ended, do nothing. See
   * `WorkerLease.firstToken`. With a `firstToken` listener on the router, the first call also
   * emits a `firstToken` event (time to first token).
   */
  readonly firstToken: () => void;
  /**
   * Report the answer's token counts (once per attempt; later calls and junk values are ignored).
   * Each count must be an integer from 0 to 2³¹, and `cachedTokens` at most `promptTokens`; a
   * report that breaks a rule is ignored whole (and a later good one still counts). Never throws.
   * With a `usage` listener on the router, the first good report emits a `usage` event; with none
   * it costs nothing. Optional: call it when the engine's answer carries its `usage` (for a
   * stream, its last chunk with `stream_options.include_usage`).
   */
  readonly usage: (usage: TokenUsage) => void;
}

/** Token counts of one answer, as the engine reported them (OpenAI's `usage`). @public */
export interface TokenUsage {
  readonly promptTokens: number;
  readonly completionTokens: number;
  /** Prompt tokens served from the engine's prefix cache (`prompt_tokens_details.cached_tokens`), when it says. */
  readonly cachedTokens?: number;
}

/**
 * An attempt that returned a response whose `status` is in the worker's breaker
 * `failureStatuses` (a 503, a 429…).
 *
 * @public
 */
export interface RetryStatusOutcome {
  readonly kind: 'status';
  readonly status: number;
  /** What `send` returned. */
  readonly response: unknown;
  /**
   * The response's `Retry-After` in ms (delay-seconds or an HTTP date), when it had a readable
   * one. The worker is already cooling down for that long (capped by its breaker's
   * `maxCooldownMs`); the next attempt goes to another worker.
   */
  readonly retryAfterMs: number | undefined;
  /** The worker the attempt went to. */
  readonly worker: Worker;
  /** The request of the call, as given to `execute`. */
  readonly request: SelectRequest;
}

/**
 * An attempt whose `send` threw or rejected (a network error, a timeout). An error thrown with
 * `retryable: false`, and an attempt the caller aborted, end the call without a decision, so they
 * never appear here.
 *
 * @public
 */
export interface RetryErrorOutcome {
  readonly kind: 'error';
  readonly error: unknown;
  /** The worker the attempt went to. */
  readonly worker: Worker;
  /** The request of the call, as given to `execute`. */
  readonly request: SelectRequest;
}

/** A failed attempt of `Router.execute`, as a retry decision sees it. @public */
export type RetryOutcome = RetryStatusOutcome | RetryErrorOutcome;

/**
 * Whether a failed attempt is retried: a delay in ms before the next attempt (on a worker not
 * tried yet), or `false` to stop.
 *
 * @param attempt - the attempt that failed, 1 for the first.
 * @public
 */
export type RetryDecision = (outcome: RetryOutcome, attempt: number) => number | false;

/**
 * The `retry.shouldRetry` option of a `Router`: a {@link RetryDecision} that also receives
 * `byDefault`, the decision the router would have made — {@link defaultShouldRetry} over the
 * call's retry settings (the model's override from `registry.setModelRetryConfig` included) — so
 * a custom decision can handle a few cases and hand the rest on.
 *
 * @public
 */
export type ShouldRetry = (
  outcome: RetryOutcome,
  attempt: number,
  byDefault: RetryDecision,
) => number | false;

/** What the `retry.onRetry` observer of a `Router` sees before each wait. @public */
export interface RetryEvent {
  /** The attempt that failed, 1 for the first; the next one is `attempt + 1`. */
  readonly attempt: number;
  /** The wait before the next attempt (ms), as the decision returned it. */
  readonly delayMs: number;
  /** Why the attempt failed. */
  readonly outcome: RetryOutcome;
  /** The worker that failed (`outcome.worker`). */
  readonly worker: Worker;
}

/**
 * The decision a `Router` makes when `retry.shouldRetry` is not given: stop once `attempt`
 * reaches `maxAttempts`; otherwise retry at once (0) after a response with a readable
 * `Retry-After` — that worker is cooling down, the next attempt goes to another one — else wait
 * `min(maxBackoffMs, initialBackoffMs × multiplier^(attempt − 1))` scaled by a random factor in
 * `[1 − jitter, 1 + jitter]` ({@link backoffDelay}).
 *
 * @param config - retry settings; omitted fields take their defaults.
 * @param random - a source of numbers in [0, 1) for the jitter.
 * @returns the decision. Cost: one `random()` call per retry that backs off.
 * @throws {@link FleetRouteError} `INVALID_ARGUMENT` naming the first bad field of `config`, or
 *   `random` when it is not a function.
 *
 * @example
 * ```ts
 * const decide = defaultShouldRetry({ maxAttempts: 4, jitter: 0 });
 * decide({ kind: 'error', error: new Error('ECONNRESET'), worker, request: {} }, 2); // 100
 * ```
 * @public
 */
export function defaultShouldRetry(
  config?: RetryConfig,
  random: () => number = Math.random,
): RetryDecision {
  const resolved = resolveRetryConfig(config, 'config');
  if (typeof random !== 'function') fail('random', 'a function', random);
  return (outcome, attempt) => defaultDelay(resolved, outcome, attempt, random);
}

/** @internal {@link defaultShouldRetry} over an already resolved config, with no allocation. */
export function defaultDelay(
  config: ResolvedRetryConfig,
  outcome: RetryOutcome,
  attempt: number,
  random: () => number,
): number | false {
  if (attempt >= config.maxAttempts) return false;
  if (outcome.kind === 'status' && outcome.retryAfterMs !== undefined) return 0;
  return backoffDelay(config, attempt, random());
}

/** @internal Whether a decision's answer is a usable delay: a finite number of ms in [0, 2³¹ − 1]. */
export function isDelay(value: unknown): value is number {
  return typeof value === 'number' && value >= 0 && value <= MAX_TIMER_MS;
}
