/**
 * `instrumentRouter` with the real OpenTelemetry SDK: one call span over every attempt, a child
 * span per attempt, parents passed explicitly (no context manager is installed here unless a test
 * says so), the attempt's propagation headers handed to `send`, errors and aborts on the spans,
 * and the options.
 */
import { context, ROOT_CONTEXT, SpanKind, trace } from '@opentelemetry/api';
import { StackContextManager } from '@opentelemetry/sdk-trace';
import { afterEach, describe, expect, it } from 'vitest';
import { FleetRouteError, type Router } from '../../src/index.js';
import { instrumentRouter } from '../../src/opentelemetry/index.js';
import { routerFleet } from '../support/router-fleet.js';
import { byId, memoryTracing, SpanStatusCode, useW3CPropagator } from './support/otel.js';

const open: { close(): unknown }[] = [];
afterEach(async () => {
  for (const o of open.splice(0).reverse()) await o.close();
});

async function traced(n: number, options: Parameters<typeof routerFleet>[1] = {}) {
  const { router, registry, workers } = await routerFleet(n, {
    ...options,
    retry: { initialBackoffMs: 0, ...options.retry },
  });
  const tracing = memoryTracing();
  const instrumented = await instrumentRouter(router, { tracer: tracing.tracer });
  open.push(registry, router, tracing, instrumented);
  return { router, registry, workers, tracing, instrumented };
}

/** A `send` answering each attempt with the next status of `statuses`. */
function answering(...statuses: number[]) {
  return async (_worker: unknown, { attempt }: { attempt: number }) => ({
    status: statuses[attempt - 1]!,
  });
}

describe('instrumentRouter: spans', () => {
  it('one CLIENT span per call over both attempts, a child per attempt with the worker and the outcome', async () => {
    const { instrumented, tracing } = await traced(3);
    // No context manager is installed: `context.with` makes nothing active.
    const marker = trace.wrapSpanContext({
      traceId: '1'.repeat(32),
      spanId: '1'.repeat(16),
      traceFlags: 1,
    });
    expect(context.with(trace.setSpan(ROOT_CONTEXT, marker), () => trace.getActiveSpan())).toBe(
      undefined,
    );

    const sentTo: string[] = [];
    const result = await instrumented.execute({ model: 'm', text: 'hi' }, async (worker, ctx) => {
      sentTo.push(new URL(worker.baseUrl).hostname);
      return { status: ctx.attempt === 1 ? 503 : 200 };
    });

    expect(result).toEqual({ status: 200 });
    const spans = tracing.spans();
    expect(spans).toHaveLength(3);
    const call = spans.find((s) => s.name === 'chat m')!;
    const attempts = spans.filter((s) => s.name === 'fleetroute.attempt');
    expect(call.kind).toBe(SpanKind.CLIENT);
    expect(call.parentSpanContext).toBeUndefined();
    expect(call.attributes).toEqual({
      'gen_ai.operation.name': 'chat',
      'gen_ai.request.model': 'm',
      'fleetroute.attempts': 2,
    });
    expect(call.status.code).toBe(SpanStatusCode.UNSET);

    expect(attempts).toHaveLength(2);
    expect(sentTo[0]).not.toBe(sentTo[1]);
    for (const a of attempts) {
      expect(a.kind).toBe(SpanKind.CLIENT);
      expect(a.spanContext().traceId).toBe(call.spanContext().traceId);
      expect(a.parentSpanContext?.spanId).toBe(call.spanContext().spanId);
    }
    expect(attempts[0]!.attributes).toEqual({
      'fleetroute.attempt': 1,
      'server.address': sentTo[0],
      'server.port': 8000,
      'fleetroute.policy': 'round_robin',
      'http.response.status_code': 503,
      'fleetroute.outcome': 'status',
      'error.type': '503',
    });
    expect(attempts[0]!.status.code).toBe(SpanStatusCode.ERROR);
    expect(attempts[1]!.attributes).toEqual({
      'fleetroute.attempt': 2,
      'server.address': sentTo[1],
      'server.port': 8000,
      'fleetroute.policy': 'round_robin',
      'http.response.status_code': 200,
      'fleetroute.outcome': 'success',
    });
    expect(attempts[1]!.status.code).toBe(SpanStatusCode.UNSET);
    // The call span ends last: it covers both attempts and the wait between them.
    expect(spans.at(-1)).toBe(call);
  });

  it('an attempt span carries the branch of its own decision (cache_aware)', async () => {
    const { instrumented, tracing } = await traced(2, { policy: 'cache_aware' });
    await instrumented.execute(
      { model: 'm', text: 'You are a helpful assistant.' },
      answering(200),
    );
    const [attempt] = tracing.spans().filter((s) => s.name === 'fleetroute.attempt');
    expect(attempt!.attributes).toMatchObject({
      'fleetroute.policy': 'cache_aware',
      'fleetroute.branch': 'cache_miss',
    });
  });

  it('a select made inside send does not put its decision on a later attempt', async () => {
    const { instrumented, tracing, router } = await traced(2);
    await instrumented.execute({ model: 'm' }, async () => {
      router.select({ model: 'm' })?.release(); // a decision nobody sends
      return { status: 200 };
    });
    // The attempt read its own decision before `send` ran; the stray one is dropped after.
    const [attempt] = tracing.spans().filter((s) => s.name === 'fleetroute.attempt');
    expect(attempt!.attributes['fleetroute.policy']).toBe('round_robin');
    await instrumented.execute({ model: 'm' }, answering(200));
    const second = tracing.spans().filter((s) => s.name === 'fleetroute.attempt')[1]!;
    expect(second.attributes['fleetroute.policy']).toBe('round_robin');
  });

  it('every attempt failed with a status: the call returns the last response, its span is ERROR', async () => {
    const { instrumented, tracing } = await traced(2, { retry: { maxAttempts: 2 } });
    const result = await instrumented.execute({ model: 'm' }, answering(503, 429));
    expect(result).toEqual({ status: 429 });
    const call = tracing.spans().find((s) => s.name === 'chat m')!;
    expect(call.status.code).toBe(SpanStatusCode.ERROR);
    expect(call.attributes).toMatchObject({ 'error.type': '429', 'fleetroute.attempts': 2 });
  });

  it('a send that throws: the call span is ERROR with error.type, each attempt too', async () => {
    const { instrumented, tracing } = await traced(2, { retry: { maxAttempts: 2 } });
    const failing = async (): Promise<never> => {
      throw new TypeError('fetch failed');
    };
    await expect(instrumented.execute({ model: 'm' }, failing)).rejects.toThrow('fetch failed');
    const spans = tracing.spans();
    const call = spans.find((s) => s.name === 'chat m')!;
    expect(call.status.code).toBe(SpanStatusCode.ERROR);
    expect(call.attributes).toMatchObject({ 'error.type': 'TypeError', 'fleetroute.attempts': 2 });
    const attempts = spans.filter((s) => s.name === 'fleetroute.attempt');
    expect(attempts.map((s) => s.attributes['fleetroute.outcome'])).toEqual(['error', 'error']);
    expect(attempts.map((s) => s.status.code)).toEqual([
      SpanStatusCode.ERROR,
      SpanStatusCode.ERROR,
    ]);
  });

  it('an aborted call: ERROR with AbortError; the attempt span ends at the abort though send ignores it', async () => {
    const { instrumented, tracing } = await traced(2);
    const controller = new AbortController();
    const call = instrumented.execute(
      { model: 'm' },
      () => {
        queueMicrotask(() => controller.abort());
        return new Promise<never>(() => {}); // never settles, ignores its signal
      },
      { signal: controller.signal },
    );
    await expect(call).rejects.toMatchObject({ name: 'AbortError' });
    const spans = tracing.spans();
    expect(spans).toHaveLength(2);
    const [attempt, parent] = spans;
    expect(attempt!.attributes).toMatchObject({
      'fleetroute.outcome': 'aborted',
      'error.type': 'AbortError',
    });
    expect(parent!.name).toBe('chat m');
    expect(parent!.status.code).toBe(SpanStatusCode.ERROR);
    expect(parent!.attributes).toMatchObject({ 'error.type': 'AbortError' });
  });

  it('no worker: the call span is ERROR with error.type NO_WORKER and no attempt', async () => {
    const { instrumented, tracing } = await traced(2);
    const call = instrumented.execute({ model: 'other' }, answering(200));
    await expect(call).rejects.toMatchObject({ code: 'NO_WORKER' });
    expect(tracing.spans()).toHaveLength(1);
    expect(tracing.spans()[0]!.attributes).toMatchObject({
      'gen_ai.request.model': 'other',
      'error.type': 'NO_WORKER',
      'fleetroute.attempts': 0,
    });
  });

  it('the call span’s parent is the given context; a request without a model names the span by the operation', async () => {
    const { instrumented, tracing } = await traced(1);
    const outer = tracing.tracer.startSpan('outer');
    await instrumented.execute({}, answering(200), {
      context: trace.setSpan(context.active(), outer),
    });
    outer.end();
    const spans = tracing.spans();
    const call = spans.find((s) => s.name === 'chat')!;
    expect(call.attributes['gen_ai.request.model']).toBeUndefined();
    expect(byId(spans, call.parentSpanContext?.spanId).name).toBe('outer');
  });

  it('a model of 1 MiB from a client reaches the span name and attribute cut to 256 characters', async () => {
    const { instrumented, tracing } = await traced(1);
    const long = `${'m'.repeat(255)}\u{1F600}${'x'.repeat(1_048_576)}`;
    const exact = 'n'.repeat(256);

    await expect(instrumented.execute({ model: long }, answering(200))).rejects.toMatchObject({
      code: 'NO_WORKER',
    });
    await expect(instrumented.execute({ model: exact }, answering(200))).rejects.toMatchObject({
      code: 'NO_WORKER',
    });

    const [cut, kept] = tracing.spans();
    // The 256th and 257th code units are one emoji: it is left out whole, never split.
    expect(cut!.attributes['gen_ai.request.model']).toBe('m'.repeat(255));
    expect(cut!.name).toBe(`chat ${'m'.repeat(255)}`);
    expect(kept!.attributes['gen_ai.request.model']).toBe(exact);
    expect(kept!.name).toBe(`chat ${exact}`);
    for (const span of tracing.spans()) {
      const sizes = Object.values(span.attributes).map((v) => String(v).length);
      expect(Math.max(span.name.length, ...sizes)).toBeLessThanOrEqual(261);
    }
  });

  it('send runs inside its attempt span’s context when a context manager is installed', async () => {
    const manager = new StackContextManager().enable();
    context.setGlobalContextManager(manager);
    try {
      const { instrumented, tracing } = await traced(1);
      let active: string | undefined;
      await instrumented.execute({ model: 'm' }, async () => {
        active = trace.getActiveSpan()?.spanContext().spanId;
        return { status: 200 };
      });
      const attempt = tracing.spans().find((s) => s.name === 'fleetroute.attempt')!;
      expect(active).toBe(attempt.spanContext().spanId);
    } finally {
      context.disable();
    }
  });
});

describe('instrumentRouter: propagation headers', () => {
  it('send gets the attempt span’s traceparent, a new object per attempt', async () => {
    const undo = useW3CPropagator();
    try {
      const { instrumented, tracing } = await traced(2);
      const seen: Record<string, string>[] = [];
      await instrumented.execute({ model: 'm' }, async (_worker, { attempt, headers }) => {
        seen.push(headers);
        return { status: attempt === 1 ? 503 : 200 };
      });
      const attempts = tracing.spans().filter((s) => s.name === 'fleetroute.attempt');
      expect(seen).toHaveLength(2);
      expect(seen[0]).not.toBe(seen[1]);
      for (const [i, span] of attempts.entries()) {
        const { traceId, spanId } = span.spanContext();
        expect(seen[i]).toEqual({ traceparent: `00-${traceId}-${spanId}-01` });
      }
    } finally {
      undo();
    }
  });

  it('without a registered propagator the headers are empty', async () => {
    const { instrumented } = await traced(1);
    let headers: Record<string, string> | undefined;
    await instrumented.execute({ model: 'm' }, async (_worker, context) => {
      headers = context.headers;
      return { status: 200 };
    });
    expect(headers).toEqual({});
  });
});

describe('instrumentRouter: defaults, options, close', () => {
  it('without a tracer, the global one named fleetroute with the package version', async () => {
    const tracing = memoryTracing();
    trace.setGlobalTracerProvider(tracing.provider);
    try {
      const { router, registry } = await routerFleet(1);
      const instrumented = await instrumentRouter(router);
      open.push(registry, router, tracing, instrumented);
      await instrumented.execute({ model: 'm' }, answering(200));
      const { version } = (await import('../../package.json', { with: { type: 'json' } })).default;
      expect(tracing.spans().map((s) => s.instrumentationScope)).toEqual([
        expect.objectContaining({ name: 'fleetroute', version }),
        expect.objectContaining({ name: 'fleetroute', version }),
      ]);
    } finally {
      trace.disable();
    }
  });

  it('operationName and providerName name the call span and its attributes', async () => {
    const { router, registry } = await routerFleet(1);
    const tracing = memoryTracing();
    const instrumented = await instrumentRouter(router, {
      tracer: tracing.tracer,
      operationName: 'text_completion',
      providerName: 'vllm',
    });
    open.push(registry, router, tracing, instrumented);
    await instrumented.execute({ model: 'm' }, answering(200));
    const call = tracing.spans().at(-1)!;
    expect(call.name).toBe('text_completion m');
    expect(call.attributes).toMatchObject({
      'gen_ai.operation.name': 'text_completion',
      'gen_ai.provider.name': 'vllm',
    });
  });

  it('rejects a bad router or option with INVALID_ARGUMENT naming it', async () => {
    const { router, registry } = await routerFleet(1);
    open.push(registry, router);
    const cases: [unknown, Record<string, unknown>, RegExp][] = [
      [{}, {}, /^router must be a Router/],
      [router, { operationName: '' }, /^instrumentRouter\.operationName must be/],
      [router, { tracer: {} }, /^instrumentRouter\.tracer must be a Tracer/],
      [router, { workers: 'registry' }, /^instrumentRouter\.workers must be a WorkerRegistry/],
      [router, { trace: {} }, /instrumentRouter\.trace is not an option of instrumentRouter/],
    ];
    for (const [r, options, message] of cases) {
      const error = await instrumentRouter(r as Router, options).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(FleetRouteError);
      expect(error).toMatchObject({
        code: 'INVALID_ARGUMENT',
        message: expect.stringMatching(message),
      });
    }
    const tracing = memoryTracing();
    const instrumented = await instrumentRouter(router, { tracer: tracing.tracer });
    open.push(instrumented);
    await expect(instrumented.execute({}, 'send' as never)).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    await expect(
      instrumented.execute({}, answering(200), { context: {} as never }),
    ).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: /^context must be/ });
    expect(tracing.spans()).toEqual([]);
  });

  it('close() is idempotent; afterwards execute rejects with CLOSED and the router still routes', async () => {
    const { instrumented, router, tracing } = await traced(1);
    instrumented.close();
    instrumented.close();
    await expect(instrumented.execute({ model: 'm' }, answering(200))).rejects.toMatchObject({
      code: 'CLOSED',
    });
    await expect(router.execute({ model: 'm' }, answering(200))).resolves.toEqual({ status: 200 });
    expect(tracing.spans()).toEqual([]);
  });
});
