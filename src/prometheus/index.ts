/**
 * `fleetroute/prometheus`: a router's observation events and its workers' state as prom-client
 * metrics, on the caller's registry. `prom-client` is an optional peer dependency, loaded by
 * {@link createPrometheusMetrics} when first called.
 *
 * @packageDocumentation
 */
export type { PrometheusMetrics, PrometheusMetricsOptions } from './create-prometheus-metrics.js';
export { createPrometheusMetrics } from './create-prometheus-metrics.js';
export type { PrometheusRegistry } from './prometheus-registry.js';
