/**
 * The optional peer `prom-client`, loaded when first asked for, so `fleetroute/prometheus`
 * imports without it; and the few members of its metric classes the adapter uses, typed here so
 * the published declarations never name the package.
 *
 * @module
 * @internal
 */
import { optionalPeer } from '../core/optional-peer.js';
import type { PrometheusRegistry } from './prometheus-registry.js';

/** @internal Label names to values, as prom-client takes them. */
export type PromLabels = Record<string, string>;

/** @internal What every metric class is built from. */
export interface PromMetricConfig {
  readonly name: string;
  readonly help: string;
  readonly labelNames: readonly string[];
  /** Registries to register on: always `[]` here, the adapter registers by hand. */
  readonly registers: readonly PrometheusRegistry[];
  readonly buckets?: readonly number[];
  /** Called on every scrape, before the values are read (gauges computed at scrape time). */
  readonly collect?: () => void;
}

/** @internal The members of a prom-client `Counter` the adapter uses. */
export interface PromCounter {
  inc(labels: PromLabels, value?: number): void;
  reset(): void;
}

/** @internal The members of a prom-client `Histogram` the adapter uses. */
export interface PromHistogram {
  observe(labels: PromLabels, value: number): void;
  remove(labels: PromLabels): void;
}

/** @internal The members of a prom-client `Gauge` the adapter uses. */
export interface PromGauge {
  set(labels: PromLabels, value: number): void;
  reset(): void;
}

/** @internal The metric classes the adapter builds. */
export interface PromClient {
  readonly Counter: new (config: PromMetricConfig) => PromCounter;
  readonly Histogram: new (config: PromMetricConfig) => PromHistogram;
  readonly Gauge: new (config: PromMetricConfig) => PromGauge;
}

/**
 * @internal Loads `prom-client` once per process.
 * @throws {@link FleetRouteError} `MISSING_DEPENDENCY` (as a rejection) naming the package and the
 *   command that installs it; a later call tries again.
 */
export const loadPromClient: () => Promise<PromClient> = optionalPeer<PromClient>({
  name: 'prom-client',
  range: '^15',
  by: 'fleetroute/prometheus',
  usable: (m) => typeof m.Counter === 'function',
});
