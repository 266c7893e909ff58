/**
 * Options, results and plain-data shapes of the `WorkerRegistry` API, and the option resolver.
 *
 * @module
 */
import { FleetRouteError } from '../core/errors.js';
import { log } from '../core/logger.js';
import { callback, custom, derived, integer, OptionTable, oneOf } from '../core/option-table.js';
import { readEnum, readInteger, readObject } from '../core/options.js';
import {
  type CircuitBreakerConfig,
  type ResolvedCircuitBreakerConfig,
  resolveCircuitBreakerConfig,
} from '../resilience/circuit-breaker-config.js';
import { type Clock, monotonicClock } from '../resilience/clock.js';
import type { RetryConfig } from '../resilience/retry-config.js';
import { DEFAULT_VIRTUAL_NODES } from '../ring/hash-ring.js';
import type { Worker, WorkerInfo } from '../workers/worker.js';
import { WORKER_STATUSES, type WorkerStatus, type WorkerType } from '../workers/worker-spec.js';
import type { ConnectionMode } from '../workers/worker-url.js';
import type { WorkerEvent } from './worker-event.js';

/**
 * Options of {@link WorkerRegistry.create}.
 *
 * @public
 */
export interface WorkerRegistryOptions {
  /** Virtual nodes per worker on every hash ring. Cost: 12 bytes and one xxh64 per point. @defaultValue 150 */
  readonly virtualNodes?: number;
  /**
   * Status of a worker registered without `status`. Use `'ready'` when nothing probes health.
   *
   * @defaultValue 'pending'
   */
  readonly defaultStatus?: WorkerStatus;
  /**
   * Breaker settings for every worker, under each worker's own `circuitBreaker` overrides.
   * @defaultValue the `CircuitBreakerConfig` defaults
   */
  readonly circuitBreaker?: CircuitBreakerConfig;
  /**
   * Default buffer of each {@link WorkerRegistry.events} subscriber, in events. 1,024 events
   * cost about 8 KB of pointers per subscriber. @defaultValue 1024
   */
  readonly eventBufferSize?: number;
  /** Time source for circuit breakers (ms, monotonic). @defaultValue `performance.now` */
  readonly clock?: Clock;
  /**
   * Called when an event listener throws. The registry and the other listeners are unaffected
   * either way. @defaultValue emits a process warning with code `FLEETROUTE_LISTENER_THREW`
   */
  readonly onListenerError?: (error: unknown, event: WorkerEvent) => void;
}

/** Options of {@link WorkerRegistry.events}. @public */
export interface EventsOptions {
  /** Ends the iterator when aborted. */
  readonly signal?: AbortSignal;
  /** Events buffered for this subscriber before the oldest are dropped. @defaultValue the registry's `eventBufferSize` */
  readonly bufferSize?: number;
}

/** Options of the mutations that accept a revision check. @public */
export interface RevisionOptions {
  /** Fail with `STALE_REVISION` unless the worker is still at this revision. */
  readonly expectedRevision?: number;
}

/** Options of {@link WorkerRegistry.transitionStatus}. @public */
export interface TransitionOptions extends RevisionOptions {
  /**
   * Change the status only if it is still this one; otherwise nothing changes, no event is
   * emitted, and the call returns `undefined`. For a caller whose decision depends on the status
   * it read (a health check that saw `pending`), so a status set meanwhile is never overwritten.
   */
  readonly expectedStatus?: WorkerStatus;
}

/** Result of {@link WorkerRegistry.registerOrReplace}. @public */
export interface RegisterOrReplaceResult {
  readonly worker: Worker;
  /** `true` when a live worker with the same URL was replaced, `false` when a new one was registered. */
  readonly replaced: boolean;
}

/** Result of {@link WorkerRegistry.transitionStatus}. @public */
export interface StatusTransition {
  readonly from: WorkerStatus;
  readonly to: WorkerStatus;
}

/** Counts from {@link WorkerRegistry.stats}; a plain object built per call. @public */
export interface RegistryStats {
  readonly workers: number;
  readonly models: number;
  readonly wildcardWorkers: number;
  readonly byStatus: Readonly<Record<WorkerStatus, number>>;
  readonly byType: Readonly<Record<WorkerType, number>>;
  readonly byConnection: Readonly<Record<ConnectionMode, number>>;
  readonly reservations: number;
  readonly eventsEmitted: number;
  readonly listenerErrors: number;
  readonly subscribers: number;
  readonly ringsBuilt: number;
  readonly closed: boolean;
}

/** Plain-data state from {@link WorkerRegistry.snapshot}. @public */
export interface RegistrySnapshot {
  /** `seq` of the last event reflected here (0 before any event). */
  readonly seq: number;
  /** Every live worker, in registration order. */
  readonly workers: readonly WorkerInfo[];
  /** Explicitly served model → ids of the workers naming it. */
  readonly models: Readonly<Record<string, readonly string[]>>;
  /** Per-model retry overrides, as given to `setModelRetryConfig`. */
  readonly retryConfigs: Readonly<Record<string, RetryConfig>>;
}

/** @internal {@link WorkerRegistryOptions} with every default filled in. */
export interface ResolvedRegistryOptions {
  readonly virtualNodes: number;
  readonly defaultStatus: WorkerStatus;
  readonly circuitBreaker: ResolvedCircuitBreakerConfig;
  readonly eventBufferSize: number;
  readonly clock: Clock;
  readonly onListenerError: (error: unknown, event: WorkerEvent) => void;
}

/** @internal The registry's options. */
export const REGISTRY_OPTIONS = new OptionTable('WorkerRegistry', 'WorkerRegistryOptions', {
  virtualNodes: integer(DEFAULT_VIRTUAL_NODES, 1, 10_000),
  defaultStatus: oneOf(WORKER_STATUSES, 'pending'),
  circuitBreaker: custom<ResolvedCircuitBreakerConfig>(
    derived(() => resolveCircuitBreakerConfig(undefined, 'options.circuitBreaker')),
    (field, value) => resolveCircuitBreakerConfig(value, field),
    'the `CircuitBreakerConfig` defaults',
  ),
  eventBufferSize: integer(1024, 1, 1_000_000),
  clock: callback<Clock>('a function', monotonicClock, '`performance.now`'),
  onListenerError: callback<ResolvedRegistryOptions['onListenerError']>(
    'a function',
    (error, event) => warnListenerError(error, event),
    'emits a process warning',
  ),
});

/**
 * Validates the registry options before any state exists, one reader per field.
 *
 * @throws FleetRouteError `INVALID_ARGUMENT` naming the first bad or unknown option.
 * @internal
 */
export function resolveRegistryOptions(options: unknown): ResolvedRegistryOptions {
  return REGISTRY_OPTIONS.read(options, undefined, 'options') as ResolvedRegistryOptions;
}

function warnListenerError(error: unknown, event: WorkerEvent): void {
  log(
    undefined,
    'warn',
    'FLEETROUTE_LISTENER_THREW',
    `a WorkerEvent listener threw while handling '${event.type}' (seq ${event.seq}): ${String(error)}`,
  );
}

/**
 * @internal The `expectedRevision` option of a mutation, validated.
 * @returns the revision, or `undefined` when not given.
 * @throws {@link FleetRouteError} `INVALID_ARGUMENT` naming `options` or `options.expectedRevision`.
 */
export function readExpectedRevision(options: unknown): number | undefined {
  return expectedRevisionOf(readObject('options', options));
}

/** @internal {@link TransitionOptions} validated; a field not given is `undefined`. */
export interface ResolvedTransitionOptions {
  readonly expectedRevision: number | undefined;
  readonly expectedStatus: WorkerStatus | undefined;
}

/**
 * @internal The options of {@link WorkerRegistry.transitionStatus}, validated.
 * @returns both checks, each `undefined` when not given.
 * @throws {@link FleetRouteError} `INVALID_ARGUMENT` naming `options`,
 *   `options.expectedRevision` or `options.expectedStatus` (in that order).
 */
export function readTransitionOptions(options: unknown): ResolvedTransitionOptions {
  const o = readObject('options', options);
  const expectedRevision = expectedRevisionOf(o);
  const expectedStatus =
    o.expectedStatus === undefined
      ? undefined
      : readEnum('options.expectedStatus', o.expectedStatus, WORKER_STATUSES, 'pending');
  return { expectedRevision, expectedStatus };
}

function expectedRevisionOf(o: Readonly<Record<string, unknown>>): number | undefined {
  return o.expectedRevision === undefined
    ? undefined
    : readInteger('options.expectedRevision', o.expectedRevision, 0, 0, Number.MAX_SAFE_INTEGER);
}

/** @internal Throws `STALE_REVISION` unless `worker` is at the expected revision. */
export function checkRevision(worker: Worker, expected: number | undefined): void {
  if (expected !== undefined && worker.revision !== expected) {
    throw new FleetRouteError(
      'STALE_REVISION',
      `worker ${worker.id} is at revision ${worker.revision}, expected ${expected}`,
    );
  }
}
