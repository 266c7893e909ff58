/**
 * The metrics of one router: built from the catalog, fed by the router's observation events,
 * and the scrape-time gauges read from the worker registry.
 *
 * @module
 * @internal
 */
import type { AdmissionEvent } from '../admission/admission-events.js';
import type { WorkerEvent } from '../registry/worker-event.js';
import type { WorkerRegistry } from '../registry/worker-registry.js';
import type { CircuitState } from '../resilience/circuit-breaker.js';
import type {
  AttemptEvent,
  CircuitChangedEvent,
  DecisionEvent,
  ExecutedEvent,
  FirstTokenEvent,
  LoadsPolledEvent,
  NoWorkerEvent,
  ProbeEvent,
  RetryScheduledEvent,
  UsageEvent,
  WorkerStatusEvent,
} from '../router/observations.js';
import type { Router } from '../router/router.js';
import type { SharedStateEvent } from '../router/shared-state.js';
import type { WorkerStatus } from '../workers/worker-spec.js';
import { CounterSeries } from './counter-series.js';
import { branchLabel, LabelValues, OTHER, policyLabel, SeriesTracker } from './label-values.js';
import { METRICS, type MetricKey } from './metric-catalog.js';
import type { PromClient, PromCounter, PromGauge, PromHistogram } from './prom-client.js';
import type { PrometheusRegistry } from './prometheus-registry.js';

type Kind<K extends MetricKey> = (typeof METRICS)[K]['kind'];
type KeysOf<T extends string> = { [K in MetricKey]: Kind<K> extends T ? K : never }[MetricKey];
/** @internal The catalog's counters, histograms and gauges. */
type CounterKey = KeysOf<'counter'>;
type HistogramKey = KeysOf<'histogram'>;
type GaugeKey = KeysOf<'gauge'>;

/** @internal What a {@link RouterMetrics} is built over. */
export interface RouterMetricsConfig {
  readonly router: Router;
  readonly workers: WorkerRegistry;
  readonly registry: PrometheusRegistry;
  readonly prefix: string;
}

/** smg's encoding of a breaker state. */
const CIRCUIT_VALUE: Readonly<Record<CircuitState, number>> = { closed: 0, open: 1, half_open: 2 };

/** Every worker status (a missing or unknown one fails to type-check). */
const STATUS_RECORD: Readonly<Record<WorkerStatus, true>> = {
  pending: true,
  ready: true,
  not_ready: true,
  failed: true,
  draining: true,
};
const WORKER_STATUSES = Object.keys(STATUS_RECORD) as WorkerStatus[];

const seconds = (ms: number): number => ms / 1000;

/** A model label that can go away with the registry's models. */
const isNamedModel = (model: string): boolean => model !== '' && model !== OTHER;

/**
 * @internal The metrics of one router on one registry. Counters are counted here and written
 * into prom-client at each scrape (cheaper per event than a prom-client label look-up);
 * histograms are observed as events come; gauges are set at each scrape from the workers, or by
 * the load-polling round. Every listener is added by the constructor and removed by
 * {@link RouterMetrics.close}.
 */
export class RouterMetrics {
  readonly #config: RouterMetricsConfig;
  readonly #counters = {} as Record<CounterKey, CounterSeries>;
  readonly #histograms = {} as Record<HistogramKey, PromHistogram>;
  readonly #gauges = {} as Record<GaugeKey, PromGauge>;
  /** What was registered, by name: `close` unregisters only these. */
  readonly #registered = new Map<string, unknown>();
  readonly #labels: LabelValues;
  /** The model-labelled histogram series, to drop when their model goes. */
  readonly #histogramSeries = new SeriesTracker();
  #closed = false;

  readonly #onDecision = (e: DecisionEvent): void => {
    const c = this.#counters;
    const model = this.#labels.model(e.model);
    const policy = policyLabel(e.policy);
    c.decisions.add(1, model, policy, branchLabel(e.branch));
    this.#histograms.selectDuration.observe({ policy }, seconds(e.durationMs));
    if (e.matched !== undefined) {
      const labels = { model, policy };
      this.#histograms.cacheMatch.observe(labels, e.matched);
      if (isNamedModel(model))
        this.#histogramSeries.note('cacheMatch', this.#histograms.cacheMatch, labels);
    }
    const worker = e.worker === undefined ? undefined : this.#labels.worker(e.worker.id);
    if (worker !== undefined) c.selections.add(1, worker, model);
  };

  readonly #onAttempt = (e: AttemptEvent): void => {
    this.#histograms.attemptDuration.observe({ outcome: e.outcome }, seconds(e.durationMs));
    const worker = this.#labels.worker(e.worker.id);
    if (worker !== undefined) this.#counters.attempts.add(1, worker, e.outcome);
  };

  readonly #onExecuted = (e: ExecutedEvent): void => {
    this.#counters.requests.add(1, this.#labels.model(e.model), e.outcome);
    this.#histograms.requestDuration.observe({ outcome: e.outcome }, seconds(e.durationMs));
  };

  readonly #onFirstToken = (e: FirstTokenEvent): void => {
    const labels = { model: this.#labels.model(e.model) };
    this.#histograms.timeToFirstToken.observe(labels, seconds(e.timeToFirstTokenMs));
    if (isNamedModel(labels.model))
      this.#histogramSeries.note('timeToFirstToken', this.#histograms.timeToFirstToken, labels);
  };

  readonly #onUsage = (e: UsageEvent): void => {
    const c = this.#counters;
    const model = this.#labels.model(e.model);
    c.promptTokens.add(e.promptTokens, model);
    c.completionTokens.add(e.completionTokens, model);
    if (e.cachedTokens !== undefined) c.cachedPromptTokens.add(e.cachedTokens, model);
  };

  readonly #onRetry = (e: RetryScheduledEvent): void => {
    this.#counters.retries.add(1, e.cause);
    this.#histograms.retryBackoff.observe({}, seconds(e.delayMs));
  };

  readonly #onNoWorker = (e: NoWorkerEvent): void => {
    this.#counters.noWorker.add(1, this.#labels.model(e.model), e.reason);
  };

  readonly #onProbe = (e: ProbeEvent): void => {
    const worker = this.#labels.worker(e.workerId);
    if (worker === undefined) return;
    this.#counters.healthChecks.add(1, worker, e.timedOut ? 'timeout' : e.ok ? 'ok' : 'fail');
  };

  readonly #onStatusChanged = (e: WorkerStatusEvent): void => {
    const worker = this.#labels.worker(e.workerId);
    if (worker !== undefined) this.#counters.statusTransitions.add(1, worker, e.from, e.to);
  };

  readonly #onCircuitChanged = (e: CircuitChangedEvent): void => {
    const worker = this.#labels.worker(e.workerId);
    if (worker !== undefined) this.#counters.circuitTransitions.add(1, worker, e.from, e.to);
  };

  readonly #onLoadsPolled = (e: LoadsPolledEvent): void => {
    if (e.reports > 0) this.#counters.loadPolls.add(e.reports, 'ok');
    if (e.failed > 0) this.#counters.loadPolls.add(e.failed, 'fail');
    this.#histograms.loadPollDuration.observe({}, seconds(e.durationMs));
    this.#gauges.staleReports.set({}, e.stale);
    this.#gauges.oldestReportAge.set({}, seconds(e.oldestReportAgeMs));
  };

  readonly #onSharedState = (e: SharedStateEvent): void => {
    this.#counters.sharedStateTransitions.add(1, e.part, e.state);
    this.#gauges.sharedStateDegraded.set({ part: e.part }, e.state === 'degraded' ? 1 : 0);
  };

  readonly #onAdmission = (e: AdmissionEvent): void => {
    this.#counters.admissions.add(1, this.#labels.model(e.model), e.outcome, e.reason ?? 'none');
    if (e.queued)
      this.#histograms.admissionWait.observe({ outcome: e.outcome }, seconds(e.waitedMs));
  };

  readonly #onWorkerEvent = (e: WorkerEvent): void => {
    if (e.type === 'removed') {
      const url = e.worker.url;
      for (const series of Object.values(this.#counters))
        series.dropWhere('worker', (w) => w === url);
    }
    if (e.type === 'removed' || e.type === 'replaced') {
      // A model no worker names any more: its series go too (its requests now count as other).
      const models = this.#labels.models();
      const gone = (model: string): boolean => isNamedModel(model) && !models.has(model);
      for (const series of Object.values(this.#counters)) series.dropWhere('model', gone);
      this.#histogramSeries.dropWhere((labels) => gone(labels.model ?? ''));
    }
  };

  /** Builds and registers every metric, then listens. The caller checked the names are free. */
  constructor(client: PromClient, config: RouterMetricsConfig) {
    this.#config = config;
    this.#labels = new LabelValues(config.workers);
    for (const key of Object.keys(METRICS) as MetricKey[]) {
      const spec = METRICS[key];
      const name = `${config.prefix}${spec.name}`;
      const base = { name, help: spec.help, labelNames: spec.labels, registers: [] };
      let metric: PromCounter | PromHistogram | PromGauge;
      if (spec.kind === 'counter') {
        const series = new CounterSeries(spec.labels);
        const counter: PromCounter = new client.Counter({
          ...base,
          collect: () => series.flush(counter),
        });
        this.#counters[key as CounterKey] = series;
        metric = counter;
      } else if (spec.kind === 'histogram') {
        metric = this.#histograms[key as HistogramKey] = new client.Histogram({
          ...base,
          buckets: spec.buckets,
        });
      } else {
        metric = this.#gauges[key as GaugeKey] = new client.Gauge(
          'scrape' in spec ? { ...base, collect: () => this.#collect(key as GaugeKey) } : base,
        );
      }
      this.#registered.set(name, metric);
    }
    for (const metric of this.#registered.values()) config.registry.registerMetric(metric);
    this.#listen(true);
  }

  /** Removes every listener and unregisters every metric. Idempotent. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#listen(false);
    const registry = this.#config.registry;
    for (const [name, metric] of this.#registered) {
      // Only ours: a metric registered under the name since is left alone.
      if (registry.getSingleMetric(name) === metric) registry.removeSingleMetric(name);
    }
  }

  #listen(on: boolean): void {
    const { router, workers } = this.#config;
    const method = on ? 'on' : 'off';
    router[method]('decision', this.#onDecision);
    router[method]('attempt', this.#onAttempt);
    router[method]('executed', this.#onExecuted);
    router[method]('firstToken', this.#onFirstToken);
    router[method]('usage', this.#onUsage);
    router[method]('retry', this.#onRetry);
    router[method]('noWorker', this.#onNoWorker);
    router[method]('probe', this.#onProbe);
    router[method]('statusChanged', this.#onStatusChanged);
    router[method]('circuitChanged', this.#onCircuitChanged);
    router[method]('loadsPolled', this.#onLoadsPolled);
    router[method]('sharedState', this.#onSharedState);
    router[method]('admission', this.#onAdmission);
    workers[method]('event', this.#onWorkerEvent);
  }

  /** Sets a scrape-time gauge from the registry as it is now. O(workers), or O(models × workers). */
  #collect(key: GaugeKey): void {
    const gauge = this.#gauges[key];
    const workers = this.#config.workers;
    gauge.reset();
    if (key === 'admissionQueued') {
      gauge.set({}, this.#config.router.stats().admission?.queued ?? 0);
      return;
    }
    if (key === 'workers') {
      for (const model of workers.getModels()) {
        const counts = countByStatus(workers.getByModel(model).map((w) => w.status));
        for (const status of WORKER_STATUSES) gauge.set({ model, status }, counts[status]);
      }
      return;
    }
    for (const w of workers.getAll()) {
      const worker = w.url;
      if (key === 'circuitState') gauge.set({ worker }, CIRCUIT_VALUE[w.circuitBreaker.state]);
      else if (key === 'up') gauge.set({ worker }, w.status === 'ready' ? 1 : 0);
      else if (key === 'inFlight') gauge.set({ worker }, w.load);
      else if (key === 'prefilling') gauge.set({ worker }, w.prefilling);
      else if (key === 'status') {
        for (const status of WORKER_STATUSES)
          gauge.set({ worker, status }, w.status === status ? 1 : 0);
      }
    }
  }
}

function countByStatus(statuses: readonly WorkerStatus[]): Record<WorkerStatus, number> {
  const counts = Object.fromEntries(WORKER_STATUSES.map((s) => [s, 0])) as Record<
    WorkerStatus,
    number
  >;
  for (const s of statuses) counts[s]++;
  return counts;
}
