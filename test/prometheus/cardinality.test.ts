/**
 * Label values come from the registry and fixed sets only: however many distinct prompts and
 * model strings the requests carry, the series of every metric stay bounded by the fleet.
 */
import fc from 'fast-check';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type AttemptContext,
  createPolicy,
  POLICY_NAMES,
  Router,
  type Worker,
  WorkerRegistry,
} from '../../src/index.js';
import { createPrometheusMetrics, type PrometheusMetrics } from '../../src/prometheus/index.js';
import type { PrometheusSample } from '../../src/transport/http/prometheus-sample.js';
import { runs } from '../helpers/fc-settings.js';
import { metricsServer, type Scrape } from './support/scrape.js';

const MODELS = ['m', 'c'];
const WORKERS = ['http://w0:8000', 'http://w1:8000', 'http://w2:8000'];

/** Every value each label may take, from the fleet and the fixed sets. */
const ALLOWED: Record<string, ReadonlySet<string>> = {
  worker: new Set(WORKERS),
  model: new Set([...MODELS, '', 'other']),
  policy: new Set([...POLICY_NAMES, 'other']),
  branch: new Set([
    '',
    'other',
    'cache_hit',
    'cache_miss',
    'imbalanced',
    'stale_match',
    'event_overlap',
    'holder_overloaded',
  ]),
  outcome: new Set(['success', 'status', 'error', 'aborted', 'failed', 'no_worker', 'closed']),
  cause: new Set(['status', 'error']),
  result: new Set(['ok', 'fail', 'timeout']),
  from: new Set([
    'closed',
    'open',
    'half_open',
    'pending',
    'ready',
    'not_ready',
    'failed',
    'draining',
  ]),
  to: new Set([
    'closed',
    'open',
    'half_open',
    'pending',
    'ready',
    'not_ready',
    'failed',
    'draining',
  ]),
  status: new Set(['pending', 'ready', 'not_ready', 'failed', 'draining']),
  reason: new Set(['unknown_model', 'unavailable']),
};

/** The metric family of a sample (histogram series folded) and its labels without `le`. */
function familyOf(sample: PrometheusSample): { family: string; key: string } {
  const family = sample.name.replace(/_(bucket|sum|count)$/, '');
  const labels = Object.entries(sample.labels)
    .filter(([name]) => name !== 'le')
    .map(([name, value]) => `${name}=${value}`)
    .sort();
  return { family, key: labels.join(',') };
}

/** Distinct label sets per metric family. */
function labelSets(scrape: Scrape): Map<string, Set<string>> {
  const sets = new Map<string, Set<string>>();
  for (const sample of scrape.samples) {
    if (!sample.name.startsWith('fleetroute_')) continue;
    const { family, key } = familyOf(sample);
    let set = sets.get(family);
    if (set === undefined) sets.set(family, (set = new Set()));
    set.add(key);
  }
  return sets;
}

function expectAllowedLabels(scrape: Scrape): void {
  for (const sample of scrape.samples) {
    if (!sample.name.startsWith('fleetroute_')) continue;
    for (const [name, value] of Object.entries(sample.labels)) {
      if (name === 'le') continue;
      expect(ALLOWED[name], `label ${name} of ${sample.name}`).toBeDefined();
      expect(ALLOWED[name]!.has(value), `${sample.name}{${name}="${value}"}`).toBe(true);
    }
  }
}

describe('label cardinality', () => {
  let workers: WorkerRegistry;
  let router: Router;
  let metrics: PrometheusMetrics;
  let server: Awaited<ReturnType<typeof metricsServer>>;
  const send = async (worker: Worker, { firstToken, usage }: AttemptContext) => {
    firstToken();
    usage({ promptTokens: 100, completionTokens: 10, cachedTokens: 50 });
    return { status: worker.url === WORKERS[0] ? 503 : 200 };
  };

  beforeAll(async () => {
    workers = await WorkerRegistry.create({ defaultStatus: 'ready', clock: () => 0 });
    for (const url of WORKERS) await workers.register({ url, models: MODELS });
    router = new Router({
      registry: workers,
      transport: { probe: async () => true },
      health: false,
      loadPolling: false,
      policy: createPolicy('round_robin', { random: () => 0 }),
      policies: { c: 'cache_aware' },
      retry: { maxAttempts: 3, initialBackoffMs: 0 },
      circuitBreaker: { failureThreshold: 2 },
    });
    router.start();
    const registry = new Registry();
    metrics = await createPrometheusMetrics({ router, workers, registry });
    server = await metricsServer(registry);
  });
  afterAll(async () => {
    metrics.close();
    await server.close();
    await router.close();
    workers.close();
  });

  it('10,000 requests with distinct prompts and distinct model strings: series bounded by the fleet', async () => {
    for (let i = 0; i < 10_000; i++) {
      const text = `request ${i}: ${'tell me about prime number '.repeat(4)}${i * 7919}`;
      switch (i % 4) {
        case 0: // a distinct model string nobody serves
          router.select({ model: `model-${i}`, text })?.release();
          break;
        case 1: // a distinct prompt through cache_aware
          router.select({ model: 'c', text })?.release();
          break;
        case 2: // execute, with w0 failing until its breaker opens
          await router.execute({ model: 'm', text }, send);
          break;
        default: // execute on a distinct unknown model: no worker
          await router.execute({ model: `tenant-${i}/model`, text }, send).catch(() => {});
      }
    }
    const scrape = await server.scrape();
    expectAllowedLabels(scrape);
    const sets = labelSets(scrape);

    // Exactly the fleet where a metric is labelled by worker alone.
    for (const family of [
      'fleetroute_worker_up',
      'fleetroute_worker_circuit_state',
      'fleetroute_worker_in_flight_requests',
      'fleetroute_worker_prefilling_requests',
    ]) {
      expect(sets.get(family)?.size, family).toBe(WORKERS.length);
    }
    const selected = new Set(
      scrape.series('fleetroute_worker_selections_total').map((s) => s.labels.worker),
    );
    expect(selected).toEqual(new Set(WORKERS));
    expect(sets.get('fleetroute_worker_status')?.size).toBe(WORKERS.length * 5);
    expect(sets.get('fleetroute_workers')?.size).toBe(MODELS.length * 5);
    // Models: the registry's, plus '' and other — never a request's string.
    expect(sets.get('fleetroute_no_worker_total')).toEqual(
      new Set(['model=other,reason=unknown_model']),
    );
    const models = new Set(scrape.series('fleetroute_decisions_total').map((s) => s.labels.model));
    expect(models).toEqual(new Set(['m', 'c', 'other']));
    // Time to first token and tokens: by model only, and only models the registry names.
    for (const family of [
      'fleetroute_time_to_first_token_seconds',
      'fleetroute_prompt_tokens_total',
      'fleetroute_completion_tokens_total',
      'fleetroute_cached_prompt_tokens_total',
    ]) {
      expect(sets.get(family), family).toEqual(new Set(['model=m']));
    }
    // Every family: at most the product of its labels' fixed sets.
    let total = 0;
    for (const [family, set] of sets) {
      total += set.size;
      expect(set.size, family).toBeLessThanOrEqual(bound(scrape, family));
    }
    expect(total).toBeLessThan(200);
    expect(
      scrape.value('fleetroute_no_worker_total', { model: 'other', reason: 'unknown_model' }),
    ).toBe(5_000);
  });

  it('property: any model string or prompt yields only allowed label values, and the text still parses', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            model: fc.oneof(
              fc.constantFrom('m', 'c', '', 'other', '__proto__', 'constructor', 'a"b\\c\nd'),
              fc.string({ unit: 'binary', maxLength: 40 }),
            ),
            text: fc.string({ maxLength: 200 }),
          }),
          { maxLength: 20 },
        ),
        async (requests) => {
          for (const { model, text } of requests) {
            router.select({ model, text })?.release();
            await router.execute({ model, text }, send).catch(() => {});
          }
          expectAllowedLabels(await server.scrape());
        },
      ),
      runs(30, 200),
    );
  });
});

/** The product of the allowed values of a family's labels (a loose upper bound). */
function bound(scrape: Scrape, family: string): number {
  const sample = scrape.samples.find((s) => familyOf(s).family === family)!;
  return Object.keys(sample.labels)
    .filter((name) => name !== 'le')
    .reduce((product, name) => product * ALLOWED[name]!.size, 1);
}
