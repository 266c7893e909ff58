/**
 * The metrics an LLM operator looks at first, from a real prom-client registry scraped over a
 * real socket: time to first token by model (exact buckets on a fake `performance` clock), token
 * counters from the engines' usage reports, and the per-worker in-flight and prefilling gauges
 * read at scrape time; a model's series leave with the model.
 */
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  type AttemptContext,
  createPolicy,
  Router,
  type Worker,
  WorkerRegistry,
} from '../../src/index.js';
import { createPrometheusMetrics } from '../../src/prometheus/index.js';
import { metricsServer } from './support/scrape.js';

const open: { close(): unknown }[] = [];
afterEach(async () => {
  vi.useRealTimers();
  for (const o of open.splice(0).reverse()) await o.close();
});

/**
 * Two ready workers serving `m` and `c` (and a wildcard one, when asked), round-robin, retries
 * without backoff, metrics served on a real endpoint.
 */
async function fleet(wildcard = false) {
  const workers = await WorkerRegistry.create({ defaultStatus: 'ready', clock: () => 0 });
  await workers.register({ url: 'http://w0:8000', models: ['m', 'c'] });
  await workers.register({ url: 'http://w1:8000', models: ['m'] });
  if (wildcard) await workers.register({ url: 'http://any:8000' });
  const router = new Router({
    registry: workers,
    transport: { probe: async () => true },
    health: false,
    loadPolling: false,
    // The rotation starts at the first registered worker, as the assertions read it.
    policy: createPolicy('round_robin', { random: () => 0 }),
    retry: { initialBackoffMs: 0 },
  });
  router.start();
  const registry = new Registry();
  const metrics = await createPrometheusMetrics({ router, workers, registry });
  const server = await metricsServer(registry);
  open.push(workers, router, metrics, server);
  return { workers, router, server };
}

/** A `send` whose first token comes `ms` after the attempt starts (on the faked clock). */
function firstTokenAfter(ms: number) {
  return async (_w: Worker, { firstToken }: AttemptContext) => {
    vi.advanceTimersByTime(ms);
    firstToken();
    return { status: 200 };
  };
}

describe('fleetroute/prometheus: LLM metrics', () => {
  it('time to first token by model: every call’s wait, retries included, in the right buckets', async () => {
    vi.useFakeTimers({ toFake: ['performance'] });
    const { router, server } = await fleet(true);
    for (const ms of [30, 200, 2_000]) await router.execute({ model: 'm' }, firstTokenAfter(ms));
    // A first attempt that breaks after 500 ms, then 30 ms to the second one's first token.
    await router.execute({ model: 'm' }, async (worker, context) => {
      if (context.attempt === 1) {
        vi.advanceTimersByTime(500);
        throw new Error('connection reset');
      }
      return firstTokenAfter(30)(worker, context);
    });
    await router.execute({ model: 'c' }, firstTokenAfter(70_000)); // past the last bucket
    await router.execute({ model: 'm' }, async () => ({ status: 200 })); // no first token: not counted
    // Served by the wildcard worker alone: not a model the registry names.
    await router.execute({ model: 'tenant-42/private-finetune' }, firstTokenAfter(10));

    const scrape = await server.scrape();
    const name = 'fleetroute_time_to_first_token_seconds';
    const bucket = (model: string, le: string) => scrape.value(`${name}_bucket`, { model, le });
    expect(bucket('m', '0.025')).toBe(0);
    expect(bucket('m', '0.05')).toBe(1);
    expect(bucket('m', '0.25')).toBe(2);
    expect(bucket('m', '0.5')).toBe(2);
    expect(bucket('m', '0.75')).toBe(3);
    expect(bucket('m', '2.5')).toBe(4);
    expect(bucket('m', '60')).toBe(4);
    expect(scrape.value(`${name}_count`, { model: 'm' })).toBe(4);
    expect(scrape.value(`${name}_sum`, { model: 'm' })).toBeCloseTo(2.76, 9);
    expect(bucket('c', '60')).toBe(0);
    expect(bucket('c', '+Inf')).toBe(1);
    expect(bucket('other', '0.01')).toBe(1);
    // Labelled by model alone, from the registry's names: no worker, no request string.
    const models = new Set(scrape.series(`${name}_count`).map((s) => s.labels.model));
    expect(models).toEqual(new Set(['m', 'c', 'other']));
  });

  it('token counters: prompt, completion and cached prompt tokens, summed as reported', async () => {
    const { router, server } = await fleet(true);
    const reports = [
      { promptTokens: 1_000, completionTokens: 50, cachedTokens: 768 },
      { promptTokens: 200, completionTokens: 10 }, // the engine did not say what it cached
      { promptTokens: 10, completionTokens: 5, cachedTokens: 11 }, // junk: ignored
    ];
    for (const report of reports) {
      await router.execute({ model: 'm' }, async (_w, { usage }) => {
        usage(report);
        return { status: 200 };
      });
    }
    await router.execute({ model: 'c' }, async (_w, { usage }) => {
      usage({ promptTokens: 4_096, completionTokens: 1, cachedTokens: 4_096 });
      return { status: 200 };
    });
    await router.execute({ model: 'unknown' }, async (_w, { usage }) => {
      usage({ promptTokens: 3, completionTokens: 3 }); // the wildcard worker's: counted as other
      return { status: 200 };
    });

    const scrape = await server.scrape();
    expect(scrape.series('fleetroute_prompt_tokens_total')).toHaveLength(3);
    expect(scrape.value('fleetroute_prompt_tokens_total', { model: 'other' })).toBe(3);
    expect(scrape.value('fleetroute_prompt_tokens_total', { model: 'm' })).toBe(1_200);
    expect(scrape.value('fleetroute_completion_tokens_total', { model: 'm' })).toBe(60);
    expect(scrape.value('fleetroute_cached_prompt_tokens_total', { model: 'm' })).toBe(768);
    expect(scrape.value('fleetroute_prompt_tokens_total', { model: 'c' })).toBe(4_096);
    expect(scrape.value('fleetroute_cached_prompt_tokens_total', { model: 'c' })).toBe(4_096);
  });

  it('in flight and prefilling per worker, read at scrape time', async () => {
    const { router, server } = await fleet();
    const gauges = async () => {
      const scrape = await server.scrape();
      const read = (name: string): Record<string, number> =>
        Object.fromEntries(scrape.series(name).map((s) => [s.labels.worker, s.value]));
      return {
        inFlight: read('fleetroute_worker_in_flight_requests'),
        prefilling: read('fleetroute_worker_prefilling_requests'),
      };
    };
    expect(await gauges()).toEqual({
      inFlight: { 'http://w0:8000': 0, 'http://w1:8000': 0 },
      prefilling: { 'http://w0:8000': 0, 'http://w1:8000': 0 },
    });

    // Three calls held open: two on one worker (one past its first token), one on the other.
    const finish: (() => void)[] = [];
    const tokens: (() => void)[] = [];
    const calls = [0, 1, 2].map(() =>
      router.execute({ model: 'm' }, (_w, { firstToken }) => {
        tokens.push(firstToken);
        return new Promise<{ status: number }>((resolve) => {
          finish.push(() => resolve({ status: 200 }));
        });
      }),
    );
    await vi.waitFor(() => expect(finish).toHaveLength(3));
    tokens[0]!(); // round-robin: calls 0 and 2 on the same worker
    const held = await gauges();
    const [busy, other] = Object.entries(held.inFlight).sort((a, b) => b[1] - a[1]);
    expect([busy![1], other![1]]).toEqual([2, 1]);
    expect(held.prefilling[busy![0]]).toBe(1);
    expect(held.prefilling[other![0]]).toBe(1);

    for (const f of finish) f();
    await Promise.all(calls);
    expect(await gauges()).toEqual({
      inFlight: { 'http://w0:8000': 0, 'http://w1:8000': 0 },
      prefilling: { 'http://w0:8000': 0, 'http://w1:8000': 0 },
    });
  });

  it('a model no worker names any more: its first-token and token series leave', async () => {
    const { router, server, workers } = await fleet();
    const send = async (_w: Worker, { firstToken, usage }: AttemptContext) => {
      firstToken();
      usage({ promptTokens: 5, completionTokens: 5, cachedTokens: 5 });
      return { status: 200 };
    };
    await router.execute({ model: 'c' }, send);
    await router.execute({ model: 'm' }, send);
    const models = async (name: string) =>
      new Set((await server.scrape()).series(name).map((s) => s.labels.model));
    expect(await models('fleetroute_time_to_first_token_seconds_count')).toEqual(
      new Set(['c', 'm']),
    );

    await workers.remove(workers.getAll().find((w) => w.url === 'http://w0:8000')!.id);
    for (const name of [
      'fleetroute_time_to_first_token_seconds_count',
      'fleetroute_prompt_tokens_total',
      'fleetroute_completion_tokens_total',
      'fleetroute_cached_prompt_tokens_total',
    ]) {
      expect(await models(name), name).toEqual(new Set(['m']));
    }
  });
});
