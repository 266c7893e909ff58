/**
 * The `traceparent` reaches the worker: a real HTTP worker on 127.0.0.1 answers 503 then 200, and
 * the `send` passes `context.headers` to `fetch`. Each request the worker sees names the call's
 * trace and, as its parent, the span of the attempt that sent it.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createPolicy, Router, WorkerRegistry } from '../../src/index.js';
import { instrumentRouter } from '../../src/opentelemetry/index.js';
import { memoryTracing, useW3CPropagator } from './support/otel.js';

const open: { close(): unknown }[] = [];
afterEach(async () => {
  for (const o of open.splice(0).reverse()) await o.close();
});

/** A worker answering `statuses` in turn, recording each request's traceparent. */
async function httpWorker(...statuses: number[]) {
  const seen: (string | undefined)[] = [];
  const server: Server = createServer((request, response) => {
    seen.push(request.headers.traceparent as string | undefined);
    request.resume();
    response.statusCode = statuses[seen.length - 1] ?? 200;
    response.end('{}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  open.push({ close: () => new Promise((resolve) => server.close(resolve)) });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

describe('instrumentRouter: the traceparent reaches the worker', () => {
  it('through fetch with context.headers, one per attempt, parented by the attempt span', async () => {
    const undo = useW3CPropagator();
    open.push({ close: undo });
    const busy = await httpWorker(503);
    const idle = await httpWorker(200);
    const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
    await registry.register({ url: busy.url, models: ['m'] });
    await registry.register({ url: idle.url, models: ['m'] });
    const router = new Router({
      registry,
      transport: { probe: async () => true },
      health: false,
      loadPolling: false,
      // The rotation starts at the first registered worker, as the assertions read it.
      policy: createPolicy('round_robin', { random: () => 0 }),
      retry: { initialBackoffMs: 0 },
    });
    router.start();
    const tracing = memoryTracing();
    const instrumented = await instrumentRouter(router, { tracer: tracing.tracer });
    open.push(registry, router, tracing, instrumented);

    const result = await instrumented.execute(
      { model: 'm', text: 'hello' },
      async (worker, { signal, headers }) => {
        const response = await fetch(`${worker.baseUrl}/v1/chat/completions`, {
          method: 'POST',
          headers: { ...headers, 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'm', messages: [] }),
          signal,
        });
        await response.arrayBuffer();
        return { status: response.status };
      },
    );

    expect(result).toEqual({ status: 200 });
    const spans = tracing.spans();
    const call = spans.find((s) => s.name === 'chat m')!;
    const attempts = spans.filter((s) => s.name === 'fleetroute.attempt');
    expect(attempts).toHaveLength(2);
    const traceId = call.spanContext().traceId;
    for (const [i, worker] of [busy, idle].entries()) {
      expect(worker.seen).toHaveLength(1);
      const [version, trace, parent, flags] = worker.seen[0]!.split('-');
      expect({ version, trace, parent, flags }).toEqual({
        version: '00',
        trace: traceId,
        parent: attempts[i]!.spanContext().spanId,
        flags: '01',
      });
      expect(attempts[i]!.attributes).toMatchObject({
        'server.address': '127.0.0.1',
        'server.port': Number(new URL(worker.url).port),
      });
    }
  });
});
