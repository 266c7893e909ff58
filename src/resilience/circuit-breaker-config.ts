/**
 * Circuit-breaker options and their defaults.
 *
 * @module
 */
import { fail, readBoolean, readInteger, readNumber, readObject } from '../core/options.js';

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
   * Also open when, over the last `ms` milliseconds, at least `minRequests` requests were seen
   * and the share that failed is at least `failureRate` (0 … 1) — for workers that fail often but
   * not several times in a row. Off by default. Costs two counters per outcome.
   */
  readonly window?: CircuitWindowConfig;
}

/** The failure-rate window of a breaker. @public */
export interface CircuitWindowConfig {
  /** Length of the window (ms). */
  readonly ms: number;
  /** Requests the window must hold before the rate counts. */
  readonly minRequests: number;
  /** Failed share (0 … 1) that opens the breaker. */
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
  readonly window: CircuitWindowConfig | undefined;
}

/** The statuses that count as failures unless configured otherwise. @public */
export const DEFAULT_FAILURE_STATUSES: readonly number[] = Object.freeze([
  408, 429, 500, 502, 503, 504,
]);

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
  const o = readObject(field, input);
  const statuses = o.failureStatuses;
  let failureStatuses = base?.failureStatuses ?? DEFAULT_FAILURE_STATUSES;
  if (statuses !== undefined) {
    if (!Array.isArray(statuses))
      fail(`${field}.failureStatuses`, 'an array of HTTP status codes', statuses);
    failureStatuses = Object.freeze(
      [
        ...new Set(
          statuses.map((s, i) => readInteger(`${field}.failureStatuses[${i}]`, s, 0, 100, 599)),
        ),
      ].sort((a, b) => a - b),
    );
  }
  return Object.freeze({
    disabled: readBoolean(`${field}.disabled`, o.disabled, base?.disabled ?? false),
    failureThreshold: readInteger(
      `${field}.failureThreshold`,
      o.failureThreshold,
      base?.failureThreshold ?? 5,
      1,
      1_000_000,
    ),
    successThreshold: readInteger(
      `${field}.successThreshold`,
      o.successThreshold,
      base?.successThreshold ?? 2,
      1,
      1_000_000,
    ),
    openMs: readInteger(`${field}.openMs`, o.openMs, base?.openMs ?? 30_000, 0, 2_147_483_647),
    halfOpenMaxRequests: readInteger(
      `${field}.halfOpenMaxRequests`,
      o.halfOpenMaxRequests,
      base?.halfOpenMaxRequests ?? 1,
      1,
      1_000_000,
    ),
    failureStatuses,
    window: readWindow(`${field}.window`, o.window, base?.window),
  });
}

function readWindow(
  field: string,
  value: unknown,
  base: CircuitWindowConfig | undefined,
): CircuitWindowConfig | undefined {
  if (value === undefined) return base;
  if (value === null || value === false) return undefined;
  const o = readObject(field, value);
  return Object.freeze({
    ms: readInteger(`${field}.ms`, o.ms, base?.ms ?? 60_000, 1, 2_147_483_647),
    minRequests: readInteger(
      `${field}.minRequests`,
      o.minRequests,
      base?.minRequests ?? 20,
      1,
      1_000_000_000,
    ),
    failureRate: readNumber(`${field}.failureRate`, o.failureRate, base?.failureRate ?? 0.5, 0, 1),
  });
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
    a.window?.ms === b.window?.ms &&
    a.window?.minRequests === b.window?.minRequests &&
    a.window?.failureRate === b.window?.failureRate
  );
}
