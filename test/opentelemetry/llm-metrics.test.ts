/**
 * Time to first token, token usage and per-worker in-flight and prefilling counts through
 * `instrumentRouter`, read from the real OpenTelemetry SDK: the GenAI conventions' instruments
 * (`gen_ai.client.operation.time_to_first_chunk`, `gen_ai.client.token.usage` by
 * `gen_ai.token.type`), fleetroute's own where the conventions name none, and the first token and
 * the token counts on the call and attempt spans.
 */
import { DiagLogLevel, diag } from '@opentelemetry/api';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { AttemptContext, Worker } from '../../src/index.js';
import { instrumentRouter, type OpenTelemetryMeter } from '../../src/opentelemetry/index.js';
import { routerFleet } from '../support/router-fleet.js';
import { type MetricPoint, memoryMetrics, memoryTracing } from './support/otel.js';

const open: { close(): unknown }[] = [];
afterEach(async () => {
  vi.useRealTimers();
  for (const o of open.splice(0).reverse()) await o.close();
});

async function instrumented(n: number, withWorkers = true) {
  const { router, registry } = await routerFleet(n, { retry: { initialBackoffMs: 0 } });
  const tracing = memoryTracing();
  const metrics = memoryMetrics();
  const tracer = await instrumentRouter(router, {
    tracer: tracing.tracer,
    meter: metrics.meter,
    providerName: 'vllm',
    ...(withWorkers ? { workers: registry } : {}),
  });
  open.push(registry, router, tracing, metrics, tracer);
  return { router, registry, tracing, metrics, tracer };
}

const points = (all: readonly MetricPoint[], name: string) => all.filter((p) => p.name === name);

const BASE = { 'gen_ai.operation.name': 'chat', 'gen_ai.provider.name': 'vllm' };

describe('instrumentRouter: time to first token and tokens', () => {
  it('time to first chunk: every call’s wait from its start, retries included, with the operation’s attributes', async () => {
    vi.useFakeTimers({ toFake: ['performance'] });
    const { router, metrics, tracer } = await instrumented(2);
    // Traced: a first attempt that breaks after 400 ms, then 100 ms to the first token.
    await tracer.execute({ model: 'm' }, async (_w, { attempt, firstToken }) => {
      vi.advanceTimersByTime(attempt === 1 ? 400 : 100);
      if (attempt === 1) throw new Error('connection reset');
      firstToken();
      return { status: 200 };
    });
    // Untraced: counted too, the metric comes from the router's events.
    await router.execute({ model: 'm' }, async (_w, { firstToken }) => {
      vi.advanceTimersByTime(20);
      firstToken();
      return { status: 200 };
    });
    const ttft = points(await metrics.collect(), 'gen_ai.client.operation.time_to_first_chunk');
    expect(ttft).toHaveLength(1);
    expect(ttft[0]).toMatchObject({
      unit: 's',
      value: 2,
      attributes: { ...BASE, 'gen_ai.request.model': 'm' },
    });
    expect(ttft[0]!.sum).toBeCloseTo(0.52, 9);
  });

  it('token usage: one histogram by gen_ai.token.type, cached input tokens on a counter of their own', async () => {
    const { router, metrics } = await instrumented(2);
    const report = (usage: Parameters<AttemptContext['usage']>[0]) =>
      router.execute({ model: 'm' }, async (_w, context) => {
        context.usage(usage);
        return { status: 200 };
      });
    await report({ promptTokens: 1_000, completionTokens: 50, cachedTokens: 768 });
    await report({ promptTokens: 200, completionTokens: 10 });
    await report({ promptTokens: 10, completionTokens: 5, cachedTokens: 11 }); // junk: ignored

    const all = await metrics.collect();
    const usage = points(all, 'gen_ai.client.token.usage');
    const byType = Object.fromEntries(
      usage.map((p) => [p.attributes['gen_ai.token.type'], { count: p.value, sum: p.sum }]),
    );
    expect(byType).toEqual({ input: { count: 2, sum: 1_200 }, output: { count: 2, sum: 60 } });
    for (const p of usage) {
      expect(p.unit).toBe('{token}');
      expect(p.attributes).toMatchObject({ ...BASE, 'gen_ai.request.model': 'm' });
    }
    expect(points(all, 'fleetroute.usage.cache_read.input_tokens')).toEqual([
      {
        name: 'fleetroute.usage.cache_read.input_tokens',
        unit: '{token}',
        attributes: { ...BASE, 'gen_ai.request.model': 'm' },
        value: 768,
        sum: undefined,
      },
    ]);
  });

  it('without workers: no model attribute, and no per-worker instruments', async () => {
    const { router, metrics } = await instrumented(1, false);
    await router.execute({ model: 'm' }, async (_w, { firstToken, usage }) => {
      firstToken();
      usage({ promptTokens: 3, completionTokens: 4 });
      return { status: 200 };
    });
    const all = await metrics.collect();
    for (const name of ['gen_ai.client.operation.time_to_first_chunk', 'gen_ai.client.token.usage'])
      for (const p of points(all, name))
        expect(p.attributes).not.toHaveProperty('gen_ai.request.model');
    expect(points(all, 'fleetroute.worker.in_flight')).toEqual([]);
    expect(points(all, 'fleetroute.worker.prefilling')).toEqual([]);
  });

  it('in flight and prefilling per worker address, observed at collection; close() stops them', async () => {
    const { router, metrics, tracer } = await instrumented(2);
    const counts = async () => {
      const all = await metrics.collect();
      const read = (name: string): Record<string, number> =>
        Object.fromEntries(
          points(all, name).map((p) => [
            `${p.attributes['server.address']}:${p.attributes['server.port']}`,
            p.value,
          ]),
        );
      return {
        inFlight: read('fleetroute.worker.in_flight'),
        prefilling: read('fleetroute.worker.prefilling'),
      };
    };
    expect(await counts()).toEqual({
      inFlight: { 'w0:8000': 0, 'w1:8000': 0 },
      prefilling: { 'w0:8000': 0, 'w1:8000': 0 },
    });

    // Three calls held open: calls 0 and 2 on one worker (call 0 past its first token).
    const finish: (() => void)[] = [];
    const tokens: (() => void)[] = [];
    const hosts: string[] = [];
    const calls = [0, 1, 2].map(() =>
      router.execute({ model: 'm' }, (worker: Worker, { firstToken }) => {
        hosts.push(`${new URL(worker.baseUrl).host}`);
        tokens.push(firstToken);
        return new Promise<{ status: number }>((resolve) => {
          finish.push(() => resolve({ status: 200 }));
        });
      }),
    );
    await vi.waitFor(() => expect(finish).toHaveLength(3));
    tokens[0]!();
    const [busy, other] = [hosts[0]!, hosts[1]!];
    expect(hosts[2]).toBe(busy);
    expect(await counts()).toEqual({
      inFlight: { [busy]: 2, [other]: 1 },
      prefilling: { [busy]: 1, [other]: 1 },
    });
    for (const f of finish) f();
    await Promise.all(calls);

    expect(await counts()).toEqual({
      inFlight: { [busy]: 0, [other]: 0 },
      prefilling: { [busy]: 0, [other]: 0 },
    });

    // After close(): a call held open is no longer observed (the SDK repeats the last points).
    tracer.close();
    let release = (): void => {};
    const held = router.execute(
      { model: 'm' },
      () =>
        new Promise<{ status: number }>((resolve) => (release = () => resolve({ status: 200 }))),
    );
    const late = await metrics.collect();
    expect(points(late, 'fleetroute.worker.in_flight').some((p) => p.value > 0)).toBe(false);
    release();
    await held;
  });

  it('two workers behind one address (paths of one gateway): their counts are summed', async () => {
    const { router, registry } = await routerFleet(0);
    for (const path of ['/a', '/b'])
      await registry.register({ url: `http://gateway:9000${path}`, models: ['m'] });
    const metrics = memoryMetrics();
    const tracer = await instrumentRouter(router, { meter: metrics.meter, workers: registry });
    open.push(registry, router, metrics, tracer);
    const finish: (() => void)[] = [];
    const calls = [0, 1].map(() =>
      router.execute(
        { model: 'm' },
        () =>
          new Promise<{ status: number }>((resolve) => finish.push(() => resolve({ status: 200 }))),
      ),
    );
    await vi.waitFor(() => expect(finish).toHaveLength(2));
    const inFlight = points(await metrics.collect(), 'fleetroute.worker.in_flight');
    expect(inFlight).toMatchObject([
      { value: 2, attributes: { 'server.address': 'gateway', 'server.port': 9000 } },
    ]);
    for (const f of finish) f();
    await Promise.all(calls);
  });

  it('a meter without observable instruments still gets the rest', async () => {
    const { router, registry } = await routerFleet(1);
    const recorded: string[] = [];
    const meter: OpenTelemetryMeter = {
      createCounter: (name) => ({ add: () => void recorded.push(name) }),
      createHistogram: (name) => ({ record: () => void recorded.push(name) }),
    };
    const tracer = await instrumentRouter(router, { meter, workers: registry });
    open.push(registry, router, tracer);
    await router.execute({ model: 'm' }, async (_w, { firstToken, usage }) => {
      firstToken();
      usage({ promptTokens: 1, completionTokens: 1, cachedTokens: 1 });
      return { status: 200 };
    });
    expect(recorded).toEqual(
      expect.arrayContaining([
        'gen_ai.client.operation.time_to_first_chunk',
        'gen_ai.client.token.usage',
        'fleetroute.usage.cache_read.input_tokens',
      ]),
    );
  });
});

describe('instrumentRouter: first token and usage on the spans', () => {
  it('the call span: time to first chunk from the call’s start and the token counts; the attempt span: its own, with an event', async () => {
    vi.useFakeTimers({ toFake: ['performance'] });
    const { tracing, tracer } = await instrumented(2);
    await tracer.execute({ model: 'm' }, async (_w, { attempt, firstToken, usage }) => {
      vi.advanceTimersByTime(attempt === 1 ? 300 : 50);
      if (attempt === 1) return { status: 503 };
      firstToken();
      firstToken();
      vi.advanceTimersByTime(10);
      usage({ promptTokens: 812, completionTokens: 64, cachedTokens: 512 });
      return { status: 200 };
    });
    const spans = tracing.spans();
    const call = spans.find((s) => s.name === 'chat m')!;
    const [first, second] = spans.filter((s) => s.name === 'fleetroute.attempt');
    const usage = {
      'gen_ai.usage.input_tokens': 812,
      'gen_ai.usage.output_tokens': 64,
      'gen_ai.usage.cache_read.input_tokens': 512,
    };
    expect(call.attributes).toMatchObject({
      'gen_ai.response.time_to_first_chunk': 0.35,
      ...usage,
    });
    expect(second!.attributes).toMatchObject({
      'fleetroute.attempt': 2,
      'gen_ai.response.time_to_first_chunk': 0.05,
      ...usage,
    });
    expect(second!.events.map((e) => e.name)).toEqual(['fleetroute.first_token']);
    expect(first!.attributes).not.toHaveProperty('gen_ai.response.time_to_first_chunk');
    expect(first!.attributes).not.toHaveProperty('gen_ai.usage.input_tokens');
    expect(first!.events).toEqual([]);
  });

  it('a first token or usage reported after the call ended leaves the ended spans alone', async () => {
    const { tracing, tracer } = await instrumented(1);
    let late: AttemptContext | undefined;
    await tracer.execute({ model: 'm' }, async (_w, context) => {
      late = context;
      return { status: 200 };
    });
    const warnings: string[] = [];
    const log = (message: string) => void warnings.push(message);
    const logger = { error: log, warn: log, info: log, debug: log, verbose: log };
    diag.setLogger(logger, DiagLogLevel.WARN);
    try {
      late!.firstToken();
      late!.usage({ promptTokens: 1, completionTokens: 1 });
    } finally {
      diag.disable();
    }
    const [call, attempt] = [
      tracing.spans().find((s) => s.name === 'chat m')!,
      tracing.spans().find((s) => s.name === 'fleetroute.attempt')!,
    ];
    for (const span of [call, attempt]) {
      expect(span.attributes).not.toHaveProperty('gen_ai.response.time_to_first_chunk');
      expect(span.attributes).not.toHaveProperty('gen_ai.usage.input_tokens');
    }
    expect(attempt.events).toEqual([]);
    expect(warnings).toEqual([]); // never written to an ended span
  });
});
