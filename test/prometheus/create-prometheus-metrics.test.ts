/**
 * `createPrometheusMetrics` with the real prom-client: a router over three workers is driven
 * through retries, a breaker opening and closing, cache hits, a request no worker can take and a
 * worker leaving; a real `/metrics` endpoint is scraped and read back with the project's own
 * parser, and every counter and gauge is checked against what the router was made to do.
 */
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  createPolicy,
  type DecisionEvent,
  FleetRouteError,
  type LoadsPolledEvent,
  type Policy,
  Router,
  type RouterOptions,
  type Worker,
  WorkerRegistry,
} from '../../src/index.js';
import { createPrometheusMetrics } from '../../src/prometheus/index.js';
import { metricsServer } from './support/scrape.js';

const open: { close(): unknown }[] = [];
afterEach(async () => {
  for (const o of open.splice(0).reverse()) await o.close();
});

const TEXT = 'You are a helpful assistant. Answer in French. '.repeat(20);

/** Three ready workers serving `m` and `c`; `passthrough` for `m`, `cache_aware` for `c`. */
async function fleet(options: Partial<Omit<RouterOptions, 'registry'>> = {}) {
  const clock = { now: 0 };
  const workers = await WorkerRegistry.create({ defaultStatus: 'ready', clock: () => clock.now });
  for (let i = 0; i < 3; i++)
    await workers.register({ url: `http://w${i}:8000`, models: ['m', 'c'] });
  const router = new Router({
    registry: workers,
    transport: { probe: async () => true },
    health: false,
    loadPolling: false,
    policy: 'passthrough',
    policies: { c: 'cache_aware' },
    random: () => 0.5, // no jitter: backoff 10 ms, then 20 ms
    retry: { maxAttempts: 3, initialBackoffMs: 10 },
    circuitBreaker: { failureThreshold: 2, openMs: 1_000, successThreshold: 1 },
    ...options,
  });
  router.start();
  const registry = new Registry();
  const metrics = await createPrometheusMetrics({ router, workers, registry });
  const server = await metricsServer(registry);
  open.push(workers, router, metrics, server);
  const [w0, w1, w2] = workers.getAll() as [Worker, Worker, Worker];
  return { clock, workers, router, registry, metrics, server, w0, w1, w2 };
}

describe('createPrometheusMetrics', () => {
  it('counts retries, a breaker opening and closing, cache hits and a request no worker takes, exactly', async () => {
    const { clock, router, workers, server, w0, w1, w2 } = await fleet();
    const failing = new Set([w0.url]);
    const send = async (worker: Worker) => ({ status: failing.has(worker.url) ? 503 : 200 });

    // 1, 2: w0 answers 503, the retry goes to w1; the second failure opens w0's breaker.
    // 3: w0 is open, w1 serves at once.
    for (let i = 0; i < 3; i++) await router.execute({ model: 'm' }, send);

    let s = await server.scrape();
    expect(s.value('fleetroute_attempts_total', { worker: w0.url, outcome: 'status' })).toBe(2);
    expect(s.value('fleetroute_attempts_total', { worker: w1.url, outcome: 'success' })).toBe(3);
    expect(s.series('fleetroute_attempts_total')).toHaveLength(2);
    expect(s.value('fleetroute_attempt_duration_seconds_count', { outcome: 'status' })).toBe(2);
    expect(s.value('fleetroute_attempt_duration_seconds_count', { outcome: 'success' })).toBe(3);
    expect(s.value('fleetroute_retries_total', { cause: 'status' })).toBe(2);
    expect(s.value('fleetroute_retry_backoff_seconds_count')).toBe(2);
    expect(s.value('fleetroute_retry_backoff_seconds_sum')).toBeCloseTo(0.02, 9);
    expect(s.value('fleetroute_retry_backoff_seconds_bucket', { le: '0.01' })).toBe(2);
    expect(
      s.value('fleetroute_decisions_total', { model: 'm', policy: 'passthrough', branch: '' }),
    ).toBe(5);
    expect(s.value('fleetroute_select_duration_seconds_count', { policy: 'passthrough' })).toBe(5);
    expect(s.value('fleetroute_worker_selections_total', { worker: w0.url, model: 'm' })).toBe(2);
    expect(s.value('fleetroute_worker_selections_total', { worker: w1.url, model: 'm' })).toBe(3);
    expect(
      s.value('fleetroute_circuit_transitions_total', {
        worker: w0.url,
        from: 'closed',
        to: 'open',
      }),
    ).toBe(1);
    expect(s.series('fleetroute_circuit_transitions_total')).toHaveLength(1);
    expect(s.value('fleetroute_worker_circuit_state', { worker: w0.url })).toBe(1);
    expect(s.value('fleetroute_worker_circuit_state', { worker: w1.url })).toBe(0);
    expect(s.value('fleetroute_worker_circuit_state', { worker: w2.url })).toBe(0);

    // w0 recovers; after openMs its breaker half-opens, and one success closes it.
    failing.clear();
    clock.now += 1_000;
    await router.execute({ model: 'm' }, send);
    s = await server.scrape();
    expect(s.value('fleetroute_attempts_total', { worker: w0.url, outcome: 'success' })).toBe(1);
    for (const [from, to] of [
      ['closed', 'open'],
      ['open', 'half_open'],
      ['half_open', 'closed'],
    ] as const) {
      expect(s.value('fleetroute_circuit_transitions_total', { worker: w0.url, from, to })).toBe(1);
    }
    expect(s.value('fleetroute_worker_circuit_state', { worker: w0.url })).toBe(0);

    // Cache: the same long prompt twice through cache_aware: a miss, then a hit.
    const decisions: DecisionEvent[] = [];
    router.on('decision', (e) => void decisions.push(e));
    router.select({ model: 'c', text: TEXT })?.release();
    router.select({ model: 'c', text: `${TEXT} One more question.` })?.release();
    expect(decisions.map((d) => d.branch)).toEqual(['cache_miss', 'cache_hit']);
    const matched = decisions.flatMap((d) => (d.matched === undefined ? [] : [d.matched]));
    expect(matched.length).toBeGreaterThan(0);

    // No worker: a model the fleet does not serve counts as `other`; no model at all as ''.
    await expect(router.execute({ model: 'not-served' }, send)).rejects.toMatchObject({
      code: 'NO_WORKER',
    });
    router.select({})?.release();
    const held = router.select({ model: 'm' }); // in flight during the scrape

    s = await server.scrape();
    const cache = { model: 'c', policy: 'cache_aware' };
    expect(s.value('fleetroute_decisions_total', { ...cache, branch: 'cache_miss' })).toBe(1);
    expect(s.value('fleetroute_decisions_total', { ...cache, branch: 'cache_hit' })).toBe(1);
    expect(s.value('fleetroute_cache_match_ratio_count', cache)).toBe(matched.length);
    expect(s.value('fleetroute_cache_match_ratio_sum', cache)).toBeCloseTo(
      matched.reduce((a, b) => a + b, 0),
      9,
    );
    expect(s.value('fleetroute_cache_match_ratio_bucket', { ...cache, le: '0.8' })).toBe(
      matched.filter((m) => m <= 0.8).length,
    );
    expect(s.value('fleetroute_no_worker_total', { model: 'other', reason: 'unknown_model' })).toBe(
      1,
    );
    expect(s.series('fleetroute_no_worker_total')).toHaveLength(1);
    expect(
      s.value('fleetroute_decisions_total', { model: 'other', policy: 'passthrough', branch: '' }),
    ).toBe(1);
    expect(
      s.value('fleetroute_decisions_total', { model: '', policy: 'passthrough', branch: '' }),
    ).toBe(1);
    expect(s.value('fleetroute_worker_in_flight_requests', { worker: w0.url })).toBe(1);
    expect(s.value('fleetroute_worker_in_flight_requests', { worker: w1.url })).toBe(0);
    held?.release();

    // A worker goes not_ready: the status gauges follow at the next scrape.
    await workers.transitionStatus(w2.id, 'not_ready');
    s = await server.scrape();
    expect(s.value('fleetroute_worker_up', { worker: w2.url })).toBe(0);
    expect(s.value('fleetroute_worker_up', { worker: w1.url })).toBe(1);
    expect(s.value('fleetroute_worker_status', { worker: w2.url, status: 'not_ready' })).toBe(1);
    expect(s.value('fleetroute_worker_status', { worker: w2.url, status: 'ready' })).toBe(0);
    expect(s.series('fleetroute_worker_status')).toHaveLength(3 * 5);
    expect(s.value('fleetroute_workers', { model: 'm', status: 'ready' })).toBe(2);
    expect(s.value('fleetroute_workers', { model: 'm', status: 'not_ready' })).toBe(1);
    expect(s.value('fleetroute_workers', { model: 'c', status: 'failed' })).toBe(0);
    expect(
      s.value('fleetroute_worker_status_transitions_total', {
        worker: w2.url,
        from: 'ready',
        to: 'not_ready',
      }),
    ).toBe(1);
    expect(s.value('fleetroute_worker_in_flight_requests', { worker: w0.url })).toBe(0);
  });

  it('a removed worker’s series leave every metric, the counters included', async () => {
    const { router, workers, server, w0, w1 } = await fleet();
    const send = async (worker: Worker) => ({ status: worker === w0 ? 503 : 200 });
    await router.execute({ model: 'm' }, send);
    let s = await server.scrape();
    expect(s.samples.filter((x) => x.labels.worker === w0.url).length).toBeGreaterThan(4);

    await workers.remove(w0.id);
    s = await server.scrape();
    expect(s.samples.filter((x) => x.labels.worker === w0.url)).toEqual([]);
    // The other workers' series and the unlabelled-by-worker counters stay.
    expect(s.value('fleetroute_attempts_total', { worker: w1.url, outcome: 'success' })).toBe(1);
    expect(s.value('fleetroute_retries_total', { cause: 'status' })).toBe(1);

    // An attempt that ends after its worker left counts nowhere by worker.
    const late = router.execute({ model: 'm' }, async (worker) => {
      await workers.remove(worker.id);
      return { status: 200 };
    });
    await late;
    s = await server.scrape();
    expect(s.samples.filter((x) => x.labels.worker === w1.url)).toEqual([]);
  });

  it('a model no worker names any more leaves the model-labelled series', async () => {
    const { router, workers, server, w0, w1, w2 } = await fleet();
    router.select({ model: 'c', text: TEXT })?.release();
    router.select({ model: 'c', text: TEXT })?.release();
    let s = await server.scrape();
    expect(s.series('fleetroute_decisions_total').some((x) => x.labels.model === 'c')).toBe(true);

    for (const w of [w0, w1, w2]) await workers.replace(w.id, { url: w.url, models: ['m'] });
    s = await server.scrape();
    const withC = s.samples.filter((x) => x.labels.model === 'c');
    expect(withC).toEqual([]);
    router.select({ model: 'c', text: TEXT })?.release(); // now an unknown model
    s = await server.scrape();
    expect(s.value('fleetroute_no_worker_total', { model: 'other', reason: 'unknown_model' })).toBe(
      1,
    );
  });

  it('no worker is counted by reason: unknown_model for a model nobody serves, unavailable when its workers are down', async () => {
    const { router, workers, server, w0, w1, w2 } = await fleet();
    router.select({ model: 'not-served' })?.release();
    for (const w of [w0, w1, w2]) await workers.transitionStatus(w.id, 'not_ready');
    router.select({ model: 'm' })?.release();
    router.select({ model: 'm' })?.release();

    const s = await server.scrape();
    expect(s.value('fleetroute_no_worker_total', { model: 'other', reason: 'unknown_model' })).toBe(
      1,
    );
    expect(s.value('fleetroute_no_worker_total', { model: 'm', reason: 'unavailable' })).toBe(2);
  });

  it('health probes, status changes and load polls are counted by result', async () => {
    let healthy = true;
    const { router, workers, server } = await fleet({
      transport: {
        probe: async () => healthy,
        // w0 serves no load report.
        loads: async (worker: Worker) =>
          worker.url === 'http://w0:8000' ? undefined : { runningRequests: 1 },
      },
      health: { intervalMs: 20, startupIntervalMs: 20, timeoutMs: 10, failureThreshold: 1 },
      loadPolling: { intervalMs: 3_600_000 },
    });
    const probes = { ok: 0, fail: 0 };
    router.on('probe', (e) => void probes[e.ok ? 'ok' : 'fail']++);
    await until(() => probes.ok >= 3);
    healthy = false;
    await until(() => workers.getAll().every((w) => w.status !== 'ready'));
    const rounds: LoadsPolledEvent[] = [];
    router.on('loadsPolled', (e) => void rounds.push(e));
    await router.pollLoads();
    await router.close(); // no more events: the counts are final
    const s = await server.scrape();
    const sum = (result: string) =>
      s
        .series('fleetroute_health_checks_total')
        .filter((x) => x.labels.result === result)
        .reduce((a, x) => a + x.value, 0);
    expect(sum('ok')).toBe(probes.ok);
    expect(sum('fail')).toBe(probes.fail);
    expect(sum('timeout')).toBe(0);
    expect(s.value('fleetroute_load_polls_total', { result: 'fail' })).toBeGreaterThanOrEqual(1);
    expect(s.value('fleetroute_load_poll_duration_seconds_count')).toBeGreaterThanOrEqual(1);
    const last = rounds.at(-1)!;
    expect(s.value('fleetroute_load_reports_stale')).toBe(last.stale);
    expect(s.value('fleetroute_load_report_oldest_age_seconds')).toBeCloseTo(
      last.oldestReportAgeMs / 1000,
      9,
    );
    expect(
      s
        .series('fleetroute_worker_status_transitions_total')
        .filter((x) => x.labels.to === 'not_ready').length,
    ).toBe(3);
  });

  it('close() removes every listener and unregisters every metric; twice is fine', async () => {
    const inner = createPolicy('round_robin');
    const explain = vi.fn(() => ({ branch: 'cache_hit', matched: undefined }));
    const policy: Policy = { name: 'round_robin', select: (w) => inner.select(w), explain };
    const { router, workers, registry, metrics, server } = await fleet({ policy });
    const before = workers.stats().subscribers;
    router.select({})?.release();
    expect(explain).toHaveBeenCalledTimes(1);
    expect(metrics.names).toContain('fleetroute_decisions_total');

    metrics.close();
    metrics.close();
    router.select({})?.release();
    expect(explain).toHaveBeenCalledTimes(1); // nobody listens to decisions any more
    expect(workers.stats().subscribers).toBe(before - 1);
    for (const name of metrics.names) expect(registry.getSingleMetric(name)).toBeUndefined();
    const s = await server.scrape();
    expect(s.samples.filter((x) => x.name.startsWith('fleetroute_'))).toEqual([]);

    // The names are free again.
    const again = await createPrometheusMetrics({ router, workers, registry });
    open.push(again);
    router.select({})?.release();
    expect(
      (await server.scrape()).value('fleetroute_decisions_total', {
        model: '',
        policy: 'round_robin',
        branch: 'cache_hit',
      }),
    ).toBe(1);
  });

  it('rejects bad options and a registry that already has one of the names, registering nothing', async () => {
    const { router, workers } = await fleet();
    const registry = new Registry();
    const bad = [
      { router: {}, workers, registry },
      { router, workers: {}, registry },
      { router, workers, registry: {} },
      { router, workers, registry, prefix: 'has space' },
      { router, workers, registry, prefix: 7 },
    ];
    for (const options of bad) {
      await expect(createPrometheusMetrics(options as never)).rejects.toMatchObject({
        code: 'INVALID_ARGUMENT',
      });
    }
    const first = await createPrometheusMetrics({ router, workers, registry, prefix: 'a_' });
    open.push(first);
    const error = await createPrometheusMetrics({ router, workers, registry, prefix: 'a_' }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(FleetRouteError);
    expect((error as FleetRouteError).message).toContain('a_decisions_total');
    // Another prefix shares the registry.
    const second = await createPrometheusMetrics({ router, workers, registry, prefix: '' });
    open.push(second);
    expect(registry.getSingleMetric('decisions_total')).toBeDefined();
    expect(registry.getMetricsAsArray()).toHaveLength(2 * first.names.length);
  });
});

async function until(condition: () => boolean, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
