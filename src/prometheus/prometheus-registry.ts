/**
 * The caller's metric registry, as `fleetroute/prometheus` sees it.
 *
 * @module
 */

/**
 * The members of a prom-client `Registry` that `createPrometheusMetrics` uses: a `new
 * Registry()` of `prom-client@15` fits as it is (and so does its global `register`, when passed
 * on purpose). Typed here, structurally, so fleetroute's declarations do not depend on
 * prom-client's.
 *
 * @public
 */
export interface PrometheusRegistry {
  /** Adds a metric; prom-client throws when another metric already has its name. */
  registerMetric(metric: unknown): void;
  /** The metric registered under `name`, or `undefined`. */
  getSingleMetric(name: string): unknown;
  /** Removes the metric registered under `name` (nothing when there is none). */
  removeSingleMetric(name: string): void;
}
