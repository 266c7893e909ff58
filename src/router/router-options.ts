/**
 * Options of the `Router`, their defaults, and their validation.
 *
 * @module
 */

import {
  type AdmissionConfig,
  type ResolvedAdmissionConfig,
  readAdmission,
} from '../admission/admission-options.js';
import { type Logger, readLogger } from '../core/logger.js';
import {
  boolean,
  callback,
  custom,
  derived,
  duration,
  integer,
  OptionTable,
} from '../core/option-table.js';
import { fail, readBoolean, readObject } from '../core/options.js';
import { createPolicy, POLICY_NAMES, readsLoadReports } from '../policies/create-policy.js';
import type { Policy, PolicyName } from '../policies/policy.js';
import { WorkerRegistry } from '../registry/worker-registry.js';
import type {
  CircuitBreakerConfig,
  ResolvedCircuitBreakerConfig,
} from '../resilience/circuit-breaker-config.js';
import type { Clock } from '../resilience/clock.js';
import {
  type HealthConfig,
  type ResolvedHealthConfig,
  resolveHealthConfig,
} from '../resilience/health-config.js';
import {
  type ResolvedRetryConfig,
  type RetryConfig,
  resolveRetryConfig,
} from '../resilience/retry-config.js';
import type { Transport } from '../transport/transport.js';
import { checkBreakerDefaults } from './breaker-defaults.js';
import type { RetryEvent, ShouldRetry } from './retry-decision.js';
import { type RouterSharedState, readSharedState } from './shared-state.js';

/** How often loads are polled, and when a report is too old to use (ms). @public */
export interface LoadPollingConfig {
  /** Time between two polls of the ready workers. @defaultValue 10000 */
  readonly intervalMs?: number;
  /** A report older than this is dropped, and policies fall back to in-flight counts. @defaultValue 3 × intervalMs */
  readonly staleAfterMs?: number;
  /** A poll that has not answered after this long is abandoned. @defaultValue min(5000, intervalMs) */
  readonly timeoutMs?: number;
}

/** {@link LoadPollingConfig} with every default filled in. @public */
export type ResolvedLoadPollingConfig = Readonly<Required<LoadPollingConfig>>;

/**
 * The `retry` option of a `Router`: the settings of {@link RetryConfig}, which a model's override
 * from `registry.setModelRetryConfig` replaces field by field, and the decision and observer,
 * which belong to the router (no override changes them).
 *
 * @example
 * ```ts
 * retry: {
 *   maxAttempts: 4,
 *   // A 429 means the fleet is saturated: another worker will not do better.
 *   shouldRetry: (outcome, attempt, byDefault) =>
 *     outcome.kind === 'status' && outcome.status === 429 ? false : byDefault(outcome, attempt),
 *   onRetry: ({ attempt, delayMs, worker }) =>
 *     console.warn(`attempt ${attempt} on ${worker.url} failed; next in ${delayMs} ms`),
 * }
 * ```
 * @public
 */
export interface RouterRetryConfig extends RetryConfig {
  /**
   * Asked after each failed attempt but the last of `maxAttempts` (which stays the ceiling): a
   * delay in ms before the next attempt on a worker not tried yet, or `false` to end the call
   * with its last result. Its third argument is the default decision over the call's settings,
   * so it can decide a few cases and hand on the rest. A decision that throws or answers anything
   * but `false` or a number in [0, 2³¹ − 1] stops the call's retries, with one
   * `FLEETROUTE_RETRY_HOOK` process warning per function. Runs synchronously between attempts:
   * keep it cheap.
   * @defaultValue `defaultShouldRetry` over the call's settings: at once after a `Retry-After`
   *   (that worker cools down instead), else exponential backoff with jitter
   */
  readonly shouldRetry?: ShouldRetry;
  /**
   * Called before each wait between attempts, with the failed attempt, the delay and the cause.
   * An observer that throws (or returns a promise that rejects) does not break the call; the
   * first such failure of a function raises a `FLEETROUTE_RETRY_HOOK` process warning.
   * @defaultValue none
   */
  readonly onRetry?: (event: RetryEvent) => void;
}

/**
 * Options of `new Router(...)` (durations in milliseconds).
 *
 * @public
 */
export interface RouterOptions {
  /** The workers. The router subscribes to its events and reads its snapshot. */
  readonly registry: WorkerRegistry;
  /** How the router probes and polls workers. */
  readonly transport: Transport;
  /**
   * The policy for every model without its own, as an instance or a name. The default was chosen
   * on every simulator workload (docs/quality.md, "Choosing the default policy"): it follows
   * prompt prefixes when requests carry text or tokens, and the least-loaded worker otherwise.
   * Memory: a prefix tree per model, bounded by its `maxTreeSize` and `maxTotalSize`.
   * @defaultValue 'cache_aware'
   */
  readonly policy?: Policy | PolicyName;
  /** Policies per model id (instances or names). */
  readonly policies?: Readonly<Record<string, Policy | PolicyName>>;
  /** The prefill leg's policy for `selectPair` (where prefix reuse pays). @defaultValue 'cache_aware' */
  readonly prefillPolicy?: Policy | PolicyName;
  /** The decode leg's policy for `selectPair` (no prompt reuse: balance load). @defaultValue 'power_of_two' */
  readonly decodePolicy?: Policy | PolicyName;
  /** Health checks; `false` turns them off (statuses are then the caller's to set). */
  readonly health?: HealthConfig | false;
  /** Load polling; `false` turns it off (also off when the transport has no `loads`). */
  readonly loadPolling?: LoadPollingConfig | false;
  /**
   * Breaker settings for every worker (under each worker's own overrides), written to the
   * registry's defaults (`registry.setCircuitBreakerDefaults`): breakers belong to the workers,
   * so every router on one registry shares them. A second open router on the same registry that
   * asks for different settings fails with `INVALID_ARGUMENT`; leave the option out there (or set
   * the defaults once with `WorkerRegistry.create({ circuitBreaker })`).
   * @defaultValue the registry's defaults
   */
  readonly circuitBreaker?: CircuitBreakerConfig;
  /**
   * Retries of `execute`: settings (a model's override from `registry.setModelRetryConfig` wins
   * field by field), the decision between attempts and its observer.
   * @defaultValue 3 attempts, 50 ms × 2ⁿ⁻¹ up to 5 s, ±20 % jitter, at once after a
   *   `Retry-After` (a per-worker cooldown)
   */
  readonly retry?: RouterRetryConfig;
  /**
   * Ask each worker registered without models (a wildcard) which models it serves, once it is
   * ready and again after each replace, with `transport.models`; the answer becomes the worker's
   * `models` through `registry.replace` (a `replaced` event). Workers registered with models are
   * left alone. Off when the transport has no `models`. @defaultValue true
   */
  readonly discoverModels?: boolean;
  /** Most probes (and, separately, load polls and model discoveries) in flight at once. @defaultValue 128 */
  readonly maxConcurrentProbes?: number;
  /**
   * Report leases that are garbage-collected without `release()` (a process warning with code
   * `FLEETROUTE_LEASE_LEAK`; the lease's load is released either way). @defaultValue true unless
   * `NODE_ENV` is `'production'`
   */
  readonly reportLeakedLeases?: boolean;
  /**
   * Time source (ms, monotonic) given to the policies the router builds from a name (report
   * staleness, key TTLs). Circuit breakers use the registry's clock; the health and polling loops
   * run on timers. @defaultValue each policy's own clock (`performance.now`, read at most once per ms)
   */
  readonly clock?: Clock;
  /** Random source in [0, 1) for backoff jitter. @defaultValue `Math.random` */
  readonly random?: () => number;
  /**
   * Where the router says what would otherwise go unsaid: a lease garbage-collected without
   * `release()`, a retry hook or an event listener that threw (`warn`, with a `code` field such
   * as `FLEETROUTE_LEASE_LEAK`). pino, bunyan and `console` fit as they are.
   * @defaultValue none: process warnings (`process.emitWarning`) with the same codes
   */
  readonly logger?: Logger;
  /**
   * State shared with other routers: a `SharedState` over a store (`MemorySharedStore`, or
   * Redis from `fleetroute/redis`) folds the other routers' in-flight counts into the loads the
   * policies read, and shares `manual`'s sessions and `cache_aware`'s prefix placements. One
   * `SharedState` per router; the router starts it and closes it. `select` never waits on it;
   * `execute` (and `prepare`) wait at most its lookup deadline.
   * @defaultValue none: this router's state is its own
   */
  readonly shared?: RouterSharedState;
  /**
   * Admission control: `true` (or its settings) makes the router hold a request while every
   * worker that could serve it is full — queued by priority band, fairly between tenants, bounded
   * in count, size and wait — and turn away (`SATURATED`, with a `retryAfterMs`) what may not
   * wait. `execute` and `admit` wait for admission; `select`, which cannot wait, throws
   * `SATURATED` instead of jumping the queue. See docs/admission.md.
   * Cost: one pass over the model's candidates per call; nothing when off.
   * @defaultValue false
   */
  readonly admission?: boolean | AdmissionConfig;
}

/** @internal */
export interface ResolvedRouterOptions {
  readonly registry: WorkerRegistry;
  readonly transport: Transport;
  readonly policy: Policy;
  readonly policies: ReadonlyMap<string, Policy>;
  readonly prefillPolicy: Policy;
  readonly decodePolicy: Policy;
  readonly health: ResolvedHealthConfig | undefined;
  readonly loadPolling: ResolvedLoadPollingConfig | undefined;
  readonly circuitBreaker: ResolvedCircuitBreakerConfig | undefined;
  readonly retry: ResolvedRetryConfig;
  readonly shouldRetry: ShouldRetry | undefined;
  readonly onRetry: ((event: RetryEvent) => void) | undefined;
  readonly discoverModels: boolean;
  readonly maxConcurrentProbes: number;
  readonly reportLeakedLeases: boolean;
  readonly random: () => number;
  readonly logger: Logger | undefined;
  readonly shared: RouterSharedState | undefined;
  readonly admission: ResolvedAdmissionConfig | undefined;
}

/**
 * Validates every option before the router exists.
 *
 * @throws FleetRouteError `INVALID_ARGUMENT` naming the first bad or unknown option.
 * @internal
 */
export function resolveRouterOptions(options: unknown): ResolvedRouterOptions {
  const o = readObject('Router options', options);
  if (!(o.registry instanceof WorkerRegistry)) fail('registry', 'a WorkerRegistry', o.registry);
  // Checked first: a conflict must fail before any policy (and its timer) exists.
  const circuitBreaker =
    o.circuitBreaker === undefined ? undefined : checkBreakerDefaults(o.registry, o.circuitBreaker);
  const transport = o.transport as Transport | undefined;
  if (
    typeof transport !== 'object' ||
    transport === null ||
    typeof transport.probe !== 'function'
  ) {
    fail('transport', 'an object with a probe(worker, signal) method', transport);
  }
  for (const method of ['loads', 'models'] as const) {
    if (transport[method] !== undefined && typeof transport[method] !== 'function') {
      fail(`transport.${method}`, 'a function', transport[method]);
    }
  }
  const loadPolling =
    o.loadPolling === false || transport.loads === undefined
      ? undefined
      : resolveLoadPolling(o.loadPolling);
  const own = ROUTER_OPTIONS.read(o, undefined, '');
  const built: BuiltPolicyConfig = { staleAfterMs: loadPolling?.staleAfterMs, clock: own.clock };
  const policies = new Map<string, Policy>();
  for (const [model, value] of Object.entries(readObject('policies', o.policies))) {
    policies.set(model, readPolicy(`policies.${model}`, value ?? own.policy, built));
  }
  const retry = readObject('retry', o.retry);
  return Object.freeze({
    registry: o.registry as WorkerRegistry,
    transport,
    policy: readPolicy('policy', own.policy, built),
    policies,
    prefillPolicy: readPolicy('prefillPolicy', own.prefillPolicy, built),
    decodePolicy: readPolicy('decodePolicy', own.decodePolicy, built),
    health: o.health === false ? undefined : resolveHealthConfig(o.health, 'health'),
    loadPolling,
    circuitBreaker,
    retry: resolveRetryConfig(o.retry, 'retry'),
    // The router's own retry options, after the settings (table order: shouldRetry, onRetry).
    ...RETRY_HOOK_OPTIONS.read(retry),
    discoverModels: own.discoverModels,
    maxConcurrentProbes: own.maxConcurrentProbes,
    reportLeakedLeases: own.reportLeakedLeases,
    random: own.random ?? Math.random,
    logger: own.logger,
    shared: own.shared,
    admission:
      own.admission === undefined || own.admission.clock !== undefined || own.clock === undefined
        ? own.admission
        : Object.freeze({ ...own.admission, clock: own.clock }),
  });
}

/**
 * @internal The router's own part of the `retry` option: the decision and its observer. The
 * settings are `RETRY_OPTIONS`', which a model's override can replace; these it cannot.
 */
export const RETRY_HOOK_OPTIONS = new OptionTable(
  'retry',
  'RouterRetryConfig',
  {
    shouldRetry: callback<ShouldRetry>('a function', undefined, '`defaultShouldRetry`'),
    onRetry: callback<(event: RetryEvent) => void>('a function', undefined, 'none'),
  },
  'any',
);

/** @internal The load-polling options. */
export const LOAD_POLLING_OPTIONS = new OptionTable(
  'loadPolling',
  'LoadPollingConfig',
  {
    intervalMs: duration(10_000),
    staleAfterMs: duration(
      derived((resolved) => 3 * (resolved.intervalMs as number)),
      1,
      '3 × intervalMs',
    ),
    timeoutMs: duration(
      derived((resolved) => Math.min(5_000, resolved.intervalMs as number)),
      1,
      'min(5000, intervalMs)',
    ),
  },
  'any',
);

function resolveLoadPolling(value: unknown): ResolvedLoadPollingConfig {
  return LOAD_POLLING_OPTIONS.read(value);
}

/**
 * @internal The router's own options (the components' options — health, polling, breakers,
 * retries — have their own tables, and the registry, transport and per-model policies their own
 * readers: those are its other keys). Any other key is refused.
 */
export const ROUTER_OPTIONS = new OptionTable(
  'Router',
  'RouterOptions',
  {
    policy: custom<unknown>('cache_aware', (_field, value) => value),
    prefillPolicy: custom<unknown>('cache_aware', (_field, value) => value),
    decodePolicy: custom<unknown>('power_of_two', (_field, value) => value),
    discoverModels: boolean(true),
    maxConcurrentProbes: integer(128, 1, 100_000),
    reportLeakedLeases: custom(
      derived(() => process.env.NODE_ENV !== 'production'),
      (field, value, fallback) => readBoolean(field, value, fallback),
      'true unless',
    ),
    clock: callback<Clock>('a function', undefined, "each policy's own clock"),
    random: callback<() => number>('a function', Math.random, '`Math.random`'),
    logger: custom<Logger | undefined>(
      undefined,
      (field, value) => readLogger(field, value),
      'none: process warnings',
    ),
    shared: custom<RouterSharedState | undefined>(
      undefined,
      (field, value) => readSharedState(field, value),
      "none: this router's state is its own",
    ),
    admission: custom<ResolvedAdmissionConfig | undefined>(
      undefined,
      (field, value) => readAdmission(field, value),
      'false',
    ),
  },
  ['registry', 'transport', 'policies', 'health', 'loadPolling', 'circuitBreaker', 'retry'],
);

/** What the router passes to the policies it builds from a name. */
interface BuiltPolicyConfig {
  readonly staleAfterMs: number | undefined;
  readonly clock: Clock | undefined;
}

/**
 * A policy instance, or one built from its name with the router's clock (when given) and the
 * polling staleness (where it applies).
 */
function readPolicy(field: string, name: unknown, built: BuiltPolicyConfig): Policy {
  if (typeof name === 'object' && name !== null && typeof (name as Policy).select === 'function')
    return name as Policy;
  if (typeof name !== 'string' || !(POLICY_NAMES as readonly string[]).includes(name)) {
    fail(field, `a Policy or one of ${POLICY_NAMES.join(', ')}`, name);
  }
  const usesReports = readsLoadReports(name as PolicyName);
  const config: { staleAfterMs?: number; clock?: Clock } = {};
  if (usesReports && built.staleAfterMs !== undefined) config.staleAfterMs = built.staleAfterMs;
  if (built.clock !== undefined) config.clock = built.clock;
  return createPolicy(name as PolicyName, config);
}
