/**
 * The options of a router's admission control (`Router`'s `admission`), declared once.
 *
 * @module
 */
import {
  callback,
  duration,
  integer,
  number,
  OptionTable,
  orInfinity,
} from '../core/option-table.js';
import { fail } from '../core/options.js';
import type { Clock } from '../resilience/clock.js';

/**
 * Admission control of a `Router` (its `admission` option): when a worker is full, and what
 * happens to a request while every worker that could serve it is. Per-worker limits say when a
 * worker has no room; the queue limits are per pool (one model's workers). See docs/admission.md.
 *
 * @public
 */
export interface AdmissionConfig {
  /**
   * A worker with this many requests in flight (every router's, with shared state) has no room.
   * Set it to the engine's batch size (vLLM's `--max-num-seqs`) when you know it.
   * @defaultValue Infinity (no limit on in-flight requests alone)
   */
  readonly maxInFlight?: number;
  /**
   * A worker with this many requests awaiting their first token has no room: they are queued
   * inside the engine, where nothing can reorder them. Exact when first tokens are marked (the
   * OpenAI front does); otherwise it counts every request in flight.
   * @defaultValue 16
   */
  readonly maxPrefilling?: number;
  /**
   * A worker whose engine reports this many waiting requests (`LoadReport.waitingRequests`, plus
   * the requests sent to it since the report that still await a first token) has no room.
   * @defaultValue 4
   */
  readonly maxWaitingRequests?: number;
  /**
   * A worker whose engine reports its KV cache at least this full (`LoadReport.tokenUsage`, 0 … 1)
   * has no room: the engine would soon preempt running requests.
   * @defaultValue 0.9
   */
  readonly maxTokenUsage?: number;
  /**
   * Requests queued per pool at most; past it the newest of the lowest priority band is turned
   * away (`SATURATED`, `queue_full`).
   * @defaultValue 1024
   */
  readonly maxQueued?: number;
  /**
   * Total size of the requests queued per pool at most (each request's `size`: its prompt's
   * tokens, else its text's length, unless stated), with the same rule as `maxQueued`.
   * @defaultValue 67108864
   */
  readonly maxQueuedSize?: number;
  /** Longest a request waits in the queue (ms); then it is turned away (`timeout`). @defaultValue 30000 */
  readonly maxWaitMs?: number;
  /**
   * While its pool is saturated, a request with a priority below this is turned away at once
   * (`shed`) rather than queued. Negative priorities are sheddable by default.
   * @defaultValue 0
   */
  readonly shedBelowPriority?: number;
  /**
   * The `retryAfterMs` of a `SATURATED` error: when the client should try again (the OpenAI front
   * sends it as `Retry-After`, rounded up to whole seconds).
   * @defaultValue 1000
   */
  readonly retryAfterMs?: number;
  /**
   * Time source (ms, monotonic): waits and report ages. @defaultValue the router's `clock`, else
   * `performance.now`
   */
  readonly clock?: Clock;
}

/** @internal {@link AdmissionConfig} with every default filled in. */
export interface ResolvedAdmissionConfig {
  readonly maxInFlight: number;
  readonly maxPrefilling: number;
  readonly maxWaitingRequests: number;
  readonly maxTokenUsage: number;
  readonly maxQueued: number;
  readonly maxQueuedSize: number;
  readonly maxWaitMs: number;
  readonly shedBelowPriority: number;
  readonly retryAfterMs: number;
  readonly clock: Clock | undefined;
}

/** @internal The largest priority magnitude accepted (a request's, the shedding threshold's). */
export const MAX_PRIORITY = 1_000_000;

/** @internal The admission options. */
export const ADMISSION_OPTIONS = new OptionTable('admission', 'AdmissionConfig', {
  maxInFlight: orInfinity(integer(Number.POSITIVE_INFINITY, 1, 1_000_000, 'Infinity')),
  maxPrefilling: orInfinity(integer(16, 1, 1_000_000)),
  maxWaitingRequests: orInfinity(integer(4, 1, 1_000_000)),
  maxTokenUsage: number(0.9, 0.01, 1),
  maxQueued: integer(1024, 0, 10_000_000),
  maxQueuedSize: integer(67_108_864, 0, 2 ** 48),
  maxWaitMs: duration(30_000),
  shedBelowPriority: integer(0, -MAX_PRIORITY, MAX_PRIORITY + 1),
  retryAfterMs: integer(1_000, 0, 86_400_000),
  clock: callback<Clock>('a function', undefined, "the router's `clock`"),
});

/**
 * @internal `true` or an object turns admission on, `false` (or nothing) leaves it off.
 * @throws {@link FleetRouteError} `INVALID_ARGUMENT` naming the bad option.
 */
export function readAdmission(field: string, value: unknown): ResolvedAdmissionConfig | undefined {
  if (value === false || value === undefined) return undefined;
  if (value === true) return ADMISSION_OPTIONS.read({}, undefined, field);
  if (typeof value !== 'object' || value === null)
    fail(field, 'a boolean or an object of admission options', value);
  return ADMISSION_OPTIONS.read(value, undefined, field);
}
