/**
 * Circuit-breaker options and their defaults.
 *
 * @module
 */
import { boolean, custom, duration, integer, number, OptionTable } from '../core/option-table.js';
import { fail, readInteger } from '../core/options.js';

/**
 * Circuit-breaker options (durations in milliseconds). Every field is optional; the defaults
 * below apply.
 *
 * @public
 */
export interface CircuitBreakerConfig {
  /** Turns the breaker off: it stays `closed` and ignores outcomes. @defaultValue false */
  readonly disabled?: boolean;
  /** Consecutive failures that open a closed breaker. @defaultValue 5 */
  readonly failureThreshold?: number;
  /** Successful trial requests that close a half-open breaker. @defaultValue 2 */
  readonly successThreshold?: number;
  /** How long an open breaker refuses requests before it admits trials (ms). @defaultValue 30000 */
  readonly openMs?: number;
  /** Trial requests a half-open breaker admits at a time. @defaultValue 1 */
  readonly halfOpenMaxRequests?: number;
  /**
   * HTTP statuses that count as failures. Network errors and timeouts always do.
   *
   * @defaultValue [408, 429, 500, 502, 503, 504]
   */
  readonly failureStatuses?: readonly number[];
  /**
   * Longest cooldown a `Retry-After` can start (ms): a worker that answers a failure status
   * with `Retry-After: n` takes no request for `min(n s, maxCooldownMs)`, then is routed again by
   * itself (see `CircuitBreaker.coolDown`). A worker cannot keep itself out of rotation for longer
   * than this however large the header; 0 turns cooldowns off.
   *
   * @defaultValue 60000
   */
  readonly maxCooldownMs?: number;
  /**
   * Also open when, over the last `ms` milliseconds, at least `minRequests` requests were seen
   * and the share that failed is at least `failureRate` (0 … 1) — for workers that fail often but
   * not several times in a row. Off by default. Costs two counters per outcome.
   */
  readonly window?: CircuitWindowConfig;
}

/** The failure-rate window of a breaker. @public */
export interface CircuitWindowConfig {
  /** Length of the window (ms). @defaultValue 60000 */
  readonly ms: number;
  /** Requests the window must hold before the rate counts. @defaultValue 20 */
  readonly minRequests: number;
  /** Failed share (0 … 1) that opens the breaker. @defaultValue 0.5 */
  readonly failureRate: number;
}

/** {@link CircuitBreakerConfig} with every default filled in (`window` stays optional). @public */
export interface ResolvedCircuitBreakerConfig {
  readonly disabled: boolean;
  readonly failureThreshold: number;
  readonly successThreshold: number;
  readonly openMs: number;
  readonly halfOpenMaxRequests: number;
  readonly failureStatuses: readonly number[];
  readonly maxCooldownMs: number;
  readonly window: CircuitWindowConfig | undefined;
}

/** The statuses that count as failures unless configured otherwise. @public */
export const DEFAULT_FAILURE_STATUSES: readonly number[] = Object.freeze([
  408, 429, 500, 502, 503, 504,
]);

/** @internal The failure-rate window's options (read when a `window` is given). */
export const WINDOW_OPTIONS = new OptionTable(
  'window',
  'CircuitWindowConfig',
  {
    ms: duration(60_000),
    minRequests: integer(20, 1, 1_000_000_000),
    failureRate: number(0.5, 0, 1),
  },
  'any',
);

/** @internal The breaker options. */
export const CIRCUIT_BREAKER_OPTIONS = new OptionTable(
  'circuitBreaker',
  'CircuitBreakerConfig',
  {
    disabled: boolean(false),
    failureThreshold: integer(5, 1, 1_000_000),
    successThreshold: integer(2, 1, 1_000_000),
    openMs: duration(30_000, 0),
    halfOpenMaxRequests: integer(1, 1, 1_000_000),
    failureStatuses: custom<readonly number[]>(
      DEFAULT_FAILURE_STATUSES,
      readStatuses,
      '[408, 429, 500, 502, 503, 504]',
    ),
    maxCooldownMs: duration(60_000, 0),
    // `null` or `false` turns a base's window off.
    window: custom<CircuitWindowConfig | undefined>(undefined, (field, value, fallback) =>
      value === null || value === false
        ? undefined
        : (WINDOW_OPTIONS.read(value, fallback, field) as CircuitWindowConfig),
    ),
  },
  'any',
);

/**
 * Validates `input` and fills in the defaults, falling back to `base` for fields `input` omits.
 *
 * @throws FleetRouteError `INVALID_ARGUMENT` naming the first bad field.
 * @internal
 */
export function resolveCircuitBreakerConfig(
  input: unknown,
  field = 'circuitBreaker',
  base?: ResolvedCircuitBreakerConfig,
): ResolvedCircuitBreakerConfig {
  return CIRCUIT_BREAKER_OPTIONS.read(input, base, field);
}

/** HTTP statuses (100 … 599), deduplicated and sorted, frozen. */
function readStatuses(field: string, value: unknown): readonly number[] {
  if (!Array.isArray(value)) fail(field, 'an array of HTTP status codes', value);
  const statuses = value.map((s, i) => readInteger(`${field}[${i}]`, s, 0, 100, 599));
  return Object.freeze([...new Set(statuses)].sort((a, b) => a - b));
}

/** @internal Whether two resolved configs are field-by-field equal. */
export function sameCircuitBreakerConfig(
  a: ResolvedCircuitBreakerConfig,
  b: ResolvedCircuitBreakerConfig,
): boolean {
  return (
    a.disabled === b.disabled &&
    a.failureThreshold === b.failureThreshold &&
    a.successThreshold === b.successThreshold &&
    a.openMs === b.openMs &&
    a.halfOpenMaxRequests === b.halfOpenMaxRequests &&
    a.failureStatuses.length === b.failureStatuses.length &&
    a.failureStatuses.every((s, i) => s === b.failureStatuses[i]) &&
    a.maxCooldownMs === b.maxCooldownMs &&
    a.window?.ms === b.window?.ms &&
    a.window?.minRequests === b.window?.minRequests &&
    a.window?.failureRate === b.window?.failureRate
  );
}
