/**
 * Health-check options and their defaults.
 *
 * @module
 */
import { boolean, duration, integer, OptionTable } from '../core/option-table.js';

/**
 * How workers are probed (durations in milliseconds).
 *
 * @public
 */
export interface HealthConfig {
  /** Time between two probes of one worker (ms). @defaultValue 30000 */
  readonly intervalMs?: number;
  /**
   * Time between probes of a worker that has not settled yet (ms): after a success that has not
   * yet made a `pending` or `not_ready` worker ready, the next probe comes this soon; a `pending`
   * worker that fails is probed again after this delay doubled per consecutive failure, up to
   * `intervalMs`. So a healthy new worker is routable about `(successThreshold − 1) ×` this after
   * `start()`, while one that is still loading its weights is probed less and less often. Costs
   * a few more probes per new worker. @defaultValue 500 (never more than `intervalMs`)
   */
  readonly startupIntervalMs?: number;
  /** A probe that has not answered after this long counts as a failure (ms). @defaultValue 5000 */
  readonly timeoutMs?: number;
  /** Consecutive successes that make a worker ready. @defaultValue 2 */
  readonly successThreshold?: number;
  /** Consecutive failures that make a ready worker not ready. @defaultValue 3 */
  readonly failureThreshold?: number;
  /** Remove a worker from the registry once it is `failed`. @defaultValue false */
  readonly removeFailed?: boolean;
}

/** {@link HealthConfig} with every default filled in. @public */
export type ResolvedHealthConfig = Readonly<Required<HealthConfig>>;

/**
 * @internal A probe's timeout when none is given (ms); also the timeout of model discovery,
 * which runs with health checks off too.
 */
export const DEFAULT_HEALTH_TIMEOUT_MS = 5_000;

/** @internal The health-check options. */
export const HEALTH_OPTIONS = new OptionTable(
  'health',
  'HealthConfig',
  {
    intervalMs: duration(30_000),
    startupIntervalMs: duration(500),
    timeoutMs: duration(DEFAULT_HEALTH_TIMEOUT_MS),
    successThreshold: integer(2, 1, 1_000),
    failureThreshold: integer(3, 1, 1_000),
    removeFailed: boolean(false),
  },
  'any',
);

/**
 * Validates `input` and fills in defaults, falling back to `base` for omitted fields.
 *
 * @throws FleetRouteError `INVALID_ARGUMENT` naming the first bad field.
 * @internal
 */
export function resolveHealthConfig(
  input: unknown,
  field = 'health',
  base?: ResolvedHealthConfig,
): ResolvedHealthConfig {
  return HEALTH_OPTIONS.read(input, base, field);
}
