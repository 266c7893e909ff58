/**
 * The router's events as OpenTelemetry metrics, read from a real `MeterProvider`: decisions,
 * attempts, retries, select time and the traced call's duration, counted exactly; attribute
 * values only from registry data and fixed sets, whatever the requests say.
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { instrumentRouter } from '../../src/opentelemetry/index.js';
import { routerFleet } from '../support/router-fleet.js';
import { type MetricPoint, memoryMetrics, memoryTracing } from './support/otel.js';

const open: { close(): unknown }[] = [];
afterEach(async () => {
  for (const o of open.splice(0).reverse()) await o.close();
});

async function measured(n: number, withWorkers: boolean) {
  const { router, registry } = await routerFleet(n, { retry: { initialBackoffMs: 0 } });
  const tracing = memoryTracing();
  const metrics = memoryMetrics();
  const instrumented = await instrumentRouter(router, {
    tracer: tracing.tracer,
    meter: metrics.meter,
    providerName: 'vllm',
    ...(withWorkers ? { workers: registry } : {}),
  });
  open.push(registry, router, tracing, metrics, instrumented);
  return { router, registry, metrics, instrumented };
}

function points(all: readonly MetricPoint[], name: string): MetricPoint[] {
  return all.filter((p) => p.name === name);
}

/** value by the JSON of the point's attributes. */
function byAttributes(all: readonly MetricPoint[], name: string): Record<string, number> {
  return Object.fromEntries(points(all, name).map((p) => [JSON.stringify(p.attributes), p.value]));
}

describe('instrumentRouter: metrics', () => {
  it('counts decisions, attempts and retries, and records select time and call duration', async () => {
    const { metrics, instrumented } = await measured(2, true);
    // Call 1: 503 on the first worker, then 200 on the other; calls 2 and 3: 200 at once.
    await instrumented.execute({ model: 'm' }, async (_w, { attempt }) => ({
      status: attempt === 1 ? 503 : 200,
    }));
    for (let i = 0; i < 2; i++)
      await instrumented.execute({ model: 'm' }, async () => ({ status: 200 }));

    const all = await metrics.collect();
    expect(byAttributes(all, 'fleetroute.decisions')).toEqual({
      [JSON.stringify({ 'fleetroute.policy': 'round_robin', 'gen_ai.request.model': 'm' })]: 4,
    });
    const attempts = points(all, 'fleetroute.attempts');
    expect(attempts.reduce((sum, p) => sum + p.value, 0)).toBe(4);
    const statusPoints = attempts.filter((p) => p.attributes['fleetroute.outcome'] === 'status');
    expect(statusPoints).toHaveLength(1);
    expect(statusPoints[0]).toMatchObject({ value: 1, attributes: { 'server.port': 8000 } });
    expect(new Set(attempts.map((p) => p.attributes['server.address']))).toEqual(
      new Set(['w0', 'w1']),
    );
    expect(byAttributes(all, 'fleetroute.retries')).toEqual({
      [JSON.stringify({ 'fleetroute.retry.cause': 'status' })]: 1,
    });
    const select = points(all, 'fleetroute.select.duration');
    expect(select).toHaveLength(1);
    expect(select[0]).toMatchObject({ unit: 's', value: 4 });
    const operation = points(all, 'gen_ai.client.operation.duration');
    expect(operation).toHaveLength(1);
    expect(operation[0]).toMatchObject({
      unit: 's',
      value: 3,
      attributes: {
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': 'vllm',
        'gen_ai.request.model': 'm',
      },
    });
  });

  it('a failed call’s duration carries error.type; a caller’s error class becomes _OTHER', async () => {
    const { metrics, instrumented } = await measured(1, true);
    class PromptTooLongForThisUser extends Error {
      override name = 'PromptTooLongForThisUser';
    }
    await expect(
      instrumented.execute({ model: 'm' }, async () => {
        throw new PromptTooLongForThisUser('no');
      }),
    ).rejects.toThrow('no');
    await expect(instrumented.execute({ model: 'x' }, async () => ({}))).rejects.toMatchObject({
      code: 'NO_WORKER',
    });
    const operation = points(await metrics.collect(), 'gen_ai.client.operation.duration');
    expect(operation.map((p) => p.attributes['error.type']).sort()).toEqual([
      'NO_WORKER',
      '_OTHER',
    ]);
  });

  it('the router’s own execute calls are counted too (the events are the router’s)', async () => {
    const { metrics, router } = await measured(2, false);
    await router.execute({ model: 'm' }, async () => ({ status: 200 }));
    const all = await metrics.collect();
    // No `workers` option: no model attribute.
    expect(byAttributes(all, 'fleetroute.decisions')).toEqual({
      [JSON.stringify({ 'fleetroute.policy': 'round_robin' })]: 1,
    });
    expect(points(all, 'gen_ai.client.operation.duration')).toEqual([]);
  });

  it('models and prompts the registry does not know never become attribute values', async () => {
    const { metrics, instrumented } = await measured(2, true);
    await fc.assert(
      fc.asyncProperty(fc.string(), fc.string(), async (model, text) => {
        await instrumented
          .execute({ model, text }, async () => ({ status: 200 }))
          .catch(() => undefined);
      }),
      { numRuns: 200 },
    );
    const all = await metrics.collect();
    const values = new Set(all.flatMap((p) => Object.values(p.attributes)));
    for (const value of values) {
      expect([
        'm',
        'round_robin',
        'chat',
        'vllm',
        'w0',
        'w1',
        8000,
        'success',
        'NO_WORKER',
      ]).toContain(value);
    }
  });

  it('after close() the router’s events are no longer counted', async () => {
    const { metrics, router, instrumented } = await measured(1, true);
    await router.execute({ model: 'm' }, async () => ({ status: 200 }));
    instrumented.close();
    await router.execute({ model: 'm' }, async () => ({ status: 200 }));
    const all = await metrics.collect();
    expect(points(all, 'fleetroute.decisions').map((p) => p.value)).toEqual([1]);
    expect(points(all, 'fleetroute.attempts').map((p) => p.value)).toEqual([1]);
  });
});

describe('instrumentRouter: admission metrics', () => {
  it('counts each admission outcome with its reason and the model the registry serves', async () => {
    const { router, registry } = await routerFleet(1, { admission: { maxInFlight: 1 } });
    const tracing = memoryTracing();
    const metrics = memoryMetrics();
    const instrumented = await instrumentRouter(router, {
      tracer: tracing.tracer,
      meter: metrics.meter,
      workers: registry,
    });
    open.push(registry, router, tracing, metrics, instrumented);
    let release!: () => void;
    const first = instrumented.execute(
      { model: 'm' },
      () => new Promise<{ status: number }>((r) => (release = () => r({ status: 200 }))),
    );
    await new Promise((r) => setImmediate(r));
    await expect(
      instrumented.execute({ model: 'm', priority: -1 }, async () => ({ status: 200 })),
    ).rejects.toMatchObject({ code: 'SATURATED' });
    release();
    await first;
    expect(byAttributes(await metrics.collect(), 'fleetroute.admissions')).toEqual({
      [JSON.stringify({ 'fleetroute.outcome': 'admitted', 'gen_ai.request.model': 'm' })]: 1,
      [JSON.stringify({
        'fleetroute.outcome': 'rejected',
        'fleetroute.admission.reason': 'shed',
        'gen_ai.request.model': 'm',
      })]: 1,
    });
  });
});
