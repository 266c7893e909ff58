/**
 * `createPrometheusMetrics`: a router's observation events and its workers' state as
 * prom-client metrics, on the caller's registry.
 *
 * @module
 */
import { invalidArgument } from '../core/errors.js';
import { custom, OptionTable } from '../core/option-table.js';
import { fail, readObject } from '../core/options.js';
import type { WorkerRegistry } from '../registry/worker-registry.js';
import type { Router } from '../router/router.js';
import { METRICS } from './metric-catalog.js';
import { loadPromClient } from './prom-client.js';
import type { PrometheusRegistry } from './prometheus-registry.js';
import { RouterMetrics } from './router-metrics.js';

/**
 * Options of {@link createPrometheusMetrics}.
 *
 * @public
 */
export interface PrometheusMetricsOptions {
  /** The router whose events are counted. */
  readonly router: Router;
  /**
   * The registry the router routes over: the scrape-time gauges read its workers, and every
   * label value (worker URL, model id) comes from it.
   */
  readonly workers: WorkerRegistry;
  /**
   * The prom-client `Registry` the metrics are registered on (`new Registry()`). Required: the
   * global `register` is used only when passed here.
   */
  readonly registry: PrometheusRegistry;
  /**
   * Prepended to every metric name: `[a-zA-Z_:][a-zA-Z0-9_:]*`, or `''`. Two routers can share
   * one registry under two prefixes.
   * @defaultValue 'fleetroute_'
   */
  readonly prefix?: string;
}

/**
 * The metrics of one router, registered on one registry. Built by
 * {@link createPrometheusMetrics}.
 *
 * @public
 */
export interface PrometheusMetrics {
  /** Every metric name registered, with its prefix, in registration order. */
  readonly names: readonly string[];
  /**
   * Removes every listener from the router and the worker registry, and unregisters the
   * metrics from the Prometheus registry (a metric registered under one of the names by someone
   * else since is left alone). Idempotent. Emits nothing. Cost: O(metrics).
   */
  close(): void;
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;

/** @internal The options of {@link createPrometheusMetrics} with a default. */
export const PROMETHEUS_METRICS_OPTIONS = new OptionTable(
  'createPrometheusMetrics',
  'PrometheusMetricsOptions',
  {
    prefix: custom<string>('fleetroute_', (field, value) => {
      if (typeof value !== 'string' || (value !== '' && !METRIC_NAME.test(value)))
        fail(field, 'a metric name prefix ([a-zA-Z_:][a-zA-Z0-9_:]*) or empty', value);
      return value;
    }),
  },
  ['router', 'workers', 'registry'],
);

/**
 * Registers fleetroute's metrics on `registry` and keeps them up to date from `router`'s
 * observation events: decisions (by model, policy, branch), selections per worker, policy time,
 * cache-match ratio, time to first token and token counts (prompt, completion, cached prompt) by
 * model, attempts and their outcomes, retries and backoff, requests no worker could take, health
 * checks, status and breaker transitions, load polls; and gauges computed at each scrape from
 * `workers` (breaker state, up, status, in-flight and prefilling requests, workers per model and
 * status). The full list with labels is in docs/observability.md.
 *
 * Label values come from the worker registry and fixed sets only — worker URL, a model id the
 * registry names (else `'other'`, `''` for none), a built-in policy name, `cache_aware`'s
 * reasons, the event unions' outcomes — so the number of series is bounded by the fleet,
 * whatever the requests carry. A removed worker's series are dropped, and so are those of a
 * model no worker names any more.
 *
 * Cost: while it runs, the router builds its observation events, counters are counted in
 * fleetroute's own maps (a few map look-ups per event) and histograms observed through
 * prom-client: about 1.3–1.7 µs added per `select` with `round_robin` and 2.1–2.3 µs with
 * `cache_aware` (64 workers, one core), most of it prom-client's histogram observations. A
 * scrape costs O(series + workers), and O(models × workers) for `workers`: about 4 ms at 100
 * workers and 30 ms at 1,000. A registry `resetMetrics()` does not reset the counters (they are
 * rewritten from fleetroute's counts at each scrape); `close()` and a new call do.
 *
 * @param options - see {@link PrometheusMetricsOptions}.
 * @returns the metrics, with `close()`.
 * @throws {@link FleetRouteError} (as a rejection) `INVALID_ARGUMENT` for a bad option or when
 *   `registry` already has a metric of one of the names (nothing is registered then);
 *   `MISSING_DEPENDENCY` when `prom-client` is not installed, naming it and the install command.
 *
 * @example
 * ```ts
 * import { Registry } from 'prom-client';
 * import { createPrometheusMetrics } from 'fleetroute/prometheus';
 *
 * const registry = new Registry();
 * const metrics = await createPrometheusMetrics({ router, workers, registry });
 * // GET /metrics: res.setHeader('content-type', registry.contentType); res.end(await registry.metrics());
 * ```
 * @public
 */
export async function createPrometheusMetrics(
  options: PrometheusMetricsOptions,
): Promise<PrometheusMetrics> {
  const o = readObject('createPrometheusMetrics.options', options);
  // Duck-typed, not `instanceof`: each entry point of the package bundles its own copy of the
  // classes, so a Router from `fleetroute` is not an instance of this bundle's.
  const router = readWith<Router>('router', o.router, ['on', 'off', 'execute'], 'a Router');
  const workers = readWith<WorkerRegistry>(
    'workers',
    o.workers,
    ['on', 'off', 'get', 'getAll', 'getByModel', 'getModels'],
    'a WorkerRegistry',
  );
  const registry = readWith<PrometheusRegistry>(
    'registry',
    o.registry,
    ['registerMetric', 'getSingleMetric', 'removeSingleMetric'],
    'a prom-client Registry',
  );
  const { prefix } = PROMETHEUS_METRICS_OPTIONS.read(o);
  const client = await loadPromClient();
  // Checked after the load, right before registering: nothing can take a name in between.
  const names = Object.values(METRICS).map((spec) => `${prefix}${spec.name}`);
  const taken = names.find((name) => registry.getSingleMetric(name) !== undefined);
  if (taken !== undefined) throw invalidArgument(`registry already has a metric named ${taken}`);
  const metrics = new RouterMetrics(client, { router, workers, registry, prefix });
  return Object.freeze({ names: Object.freeze(names), close: () => metrics.close() });
}

/** `value` as a `T` when it is an object with these methods. */
function readWith<T>(field: string, value: unknown, methods: readonly string[], rule: string): T {
  const v = value as Record<string, unknown> | null;
  if (typeof v !== 'object' || v === null || methods.some((m) => typeof v[m] !== 'function'))
    fail(field, rule, value);
  return value as T;
}
