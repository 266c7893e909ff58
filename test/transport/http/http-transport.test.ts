/**
 * The HTTP transport against real HTTP servers on 127.0.0.1 that play vLLM and SGLang workers,
 * or misbehave: hang, reset, fail, answer garbage or far too much. Timeouts are 100 ms here;
 * tests assert outcomes, never durations.
 */
import { describe, expect, it } from 'vitest';
import { httpTransport } from '../../../src/transport/http/index.js';
import { TRANSPORT_FAILED } from '../../../src/transport/http/transport-failure.js';
import { rejectsCode } from '../../support/fixtures.js';
import {
  fixture,
  hang,
  huge,
  json,
  reply,
  reset,
  sglangRoutes,
  stall,
  vllmRoutes,
} from './support/fake-worker.js';
import { useHarness } from './support/harness.js';

const QUICK = { timeoutMs: 100 } as const;
/** Long enough that only the router's signal can end the call within the test's timeout. */
const SLOW = { timeoutMs: 600_000 } as const;

const h = useHarness();

describe('probe', () => {
  it('is true when GET /health answers 200', async () => {
    const server = await h.serve(vllmRoutes());
    const worker = await h.workerFor(server, { runtime: 'vllm' });

    const healthy = await httpTransport().probe(worker, new AbortController().signal);

    expect(healthy).toBe(true);
    expect(server.seen).toEqual([
      { method: 'GET', path: '/health', authorization: undefined, accept: '*/*' },
    ]);
  });

  it.each([500, 503, 404, 429])('is false when /health answers %i', async (status) => {
    const server = await h.serve({ '/health': reply(status, 'no') });
    const worker = await h.workerFor(server);

    expect(await httpTransport().probe(worker)).toBe(false);
  });

  it('does not follow a redirect: a 3xx is unhealthy and the target is never requested', async () => {
    const server = await h.serve({
      '/health': (_request, response) => {
        response.writeHead(302, { location: '/elsewhere' });
        response.end();
      },
      '/elsewhere': reply(200, 'ok'),
    });
    const worker = await h.workerFor(server);

    expect(await httpTransport().probe(worker)).toBe(false);
    expect(server.seen.map((r) => r.path)).toEqual(['/health']);
  });

  it('is false after timeoutMs when the worker never answers, and closes the connection', async () => {
    const server = await h.serve({ '/health': hang });
    const worker = await h.workerFor(server);

    expect(await httpTransport(QUICK).probe(worker)).toBe(false);
    await server.socketsClosed(1);
    expect(server.openSockets()).toBe(0);
  });

  it('is false when the worker resets the connection', async () => {
    const server = await h.serve({ '/health': reset });
    const worker = await h.workerFor(server);

    expect(await httpTransport(QUICK).probe(worker)).toBe(false);
  });

  it('is false when nothing listens at the worker URL', async () => {
    const worker = await h.workerFor({ url: await h.deadUrl() });

    expect(await httpTransport(QUICK).probe(worker)).toBe(false);
  });

  it('is false as soon as the router signal fires during the call', async () => {
    const server = await h.serve({ '/health': hang });
    const worker = await h.workerFor(server);
    const router = new AbortController();

    const probing = httpTransport(SLOW).probe(worker, router.signal);
    await waitUntil(() => server.seen.length === 1);
    router.abort();

    expect(await probing).toBe(false);
    await server.socketsClosed(1);
  });

  it('is false without any request when the signal has already fired', async () => {
    const server = await h.serve(vllmRoutes());
    const worker = await h.workerFor(server);

    expect(await httpTransport().probe(worker, AbortSignal.abort())).toBe(false);
    expect(server.seen).toEqual([]);
  });

  it('drains a small health body so later probes reuse the connection', async () => {
    // A body that arrives in two parts: cancelling it mid-way would cost a connection per probe.
    const server = await h.serve({
      '/health': (_request, response) => {
        response.writeHead(200, { 'content-type': 'application/json' });
        response.write(`{"status":"ok","pad":"${'x'.repeat(16_000)}`);
        setTimeout(() => response.end('"}'), 5);
      },
    });
    const worker = await h.workerFor(server);
    const transport = httpTransport();

    for (let i = 0; i < 6; i++) expect(await transport.probe(worker)).toBe(true);

    // The pool may open a second connection while the first is being released; never one each.
    expect(server.connections()).toBeLessThanOrEqual(3);
  });

  it('cancels a large health body, closing its connection', async () => {
    const server = await h.serve({ '/health': huge(1_048_576) });
    const worker = await h.workerFor(server);

    expect(await httpTransport().probe(worker)).toBe(true);
    await server.socketsClosed(1);
  });

  it('uses healthPath', async () => {
    const server = await h.serve({ '/ready': reply(200, '') });
    const worker = await h.workerFor(server);

    expect(await httpTransport({ healthPath: '/ready' }).probe(worker)).toBe(true);
  });
});

describe('loads', () => {
  it('reads a vLLM worker’s /metrics into a load report stamped with the scrape time and the engine start', async () => {
    const server = await h.serve(vllmRoutes());
    const worker = await h.workerFor(server, { runtime: 'vllm' });

    const report = await httpTransport({ clock: () => 42 }).loads(worker);

    expect(report).toEqual({
      runningRequests: 12,
      waitingRequests: 2,
      tokenUsage: 0.6101522842639594,
      at: 42,
      startedAt: 1_754_118_236_470,
      adapters: { running: [], waiting: [], maxAdapters: 1 },
    });
    expect(server.seen[0]).toMatchObject({ path: '/metrics' });
    expect(server.seen[0]!.accept).toContain('text/plain;version=0.0.4');
  });

  it('reads an SGLang worker’s /metrics', async () => {
    const server = await h.serve(sglangRoutes());
    const worker = await h.workerFor(server, { runtime: 'sglang' });

    const report = await httpTransport({ clock: () => 1 }).loads(worker);

    expect(report).toEqual({
      runningRequests: 14,
      waitingRequests: 3,
      tokenUsage: 0.37,
      throughput: 812.5398611326021,
      at: 1,
    });
  });

  it('derives vLLM throughput from the generated-token counter of two scrapes', async () => {
    let tokens = 10_000;
    const server = await h.serve({
      '/metrics': (_request, response) => {
        response.end(`vllm:num_requests_running 2\nvllm:generation_tokens_total ${tokens}\n`);
      },
    });
    const worker = await h.workerFor(server, { runtime: 'vllm' });
    let now = 0;
    const transport = httpTransport({ clock: () => now });

    const first = await transport.loads(worker);
    tokens = 13_000;
    now = 3_000;
    const second = await transport.loads(worker);

    expect(first).toEqual({ runningRequests: 2, at: 0 });
    expect(second).toEqual({ runningRequests: 2, throughput: 1_000, at: 3_000 });
  });

  it.each([
    ['a 500', { '/metrics': reply(500, 'Internal Server Error') }],
    ['a 404 (metrics disabled)', {}],
    ['an HTML error page with status 200', { '/metrics': reply(200, fixture('nginx-502.txt')) }],
    ['JSON', { '/metrics': json({ running: 3 }) }],
    ['a connection reset', { '/metrics': reset }],
    ['no answer', { '/metrics': hang }],
    ['a body that stops halfway', { '/metrics': stall('vllm:num_requests_running 1\n') }],
  ])('is undefined for %s', async (_label, routes) => {
    const server = await h.serve(routes);
    const worker = await h.workerFor(server, { runtime: 'vllm' });

    expect(await httpTransport(QUICK).loads(worker)).toBeUndefined();
  });

  it('is undefined when nothing listens at the worker URL', async () => {
    const worker = await h.workerFor({ url: await h.deadUrl() });

    expect(await httpTransport(QUICK).loads(worker)).toBeUndefined();
  });

  it('is undefined for a body larger than maxBodyBytes, and closes that connection', async () => {
    const server = await h.serve({ '/metrics': huge(8 * 1_048_576) });
    const worker = await h.workerFor(server, { runtime: 'vllm' });

    expect(await httpTransport().loads(worker)).toBeUndefined();
    await server.socketsClosed(1);
  });

  it('is undefined without reading a body whose declared length is too large', async () => {
    const server = await h.serve(vllmRoutes());
    const worker = await h.workerFor(server, { runtime: 'vllm' });
    const size = Buffer.byteLength(fixture('vllm-v1.txt'));

    expect(await httpTransport({ maxBodyBytes: size - 1 }).loads(worker)).toBeUndefined();
    expect(await httpTransport({ maxBodyBytes: size }).loads(worker)).toBeDefined();
  });

  it('is undefined as soon as the router signal fires while the body is arriving', async () => {
    const server = await h.serve({ '/metrics': stall('vllm:num_requests_running 1\n') });
    const worker = await h.workerFor(server, { runtime: 'vllm' });
    const router = new AbortController();

    const loading = httpTransport(SLOW).loads(worker, router.signal);
    await waitUntil(() => server.seen.length === 1);
    router.abort(new Error('router closed'));

    expect(await loading).toBeUndefined();
    await server.socketsClosed(1);
  });
});

describe('models', () => {
  it('lists a vLLM worker’s models, LoRA adapters included', async () => {
    const server = await h.serve(vllmRoutes());
    const worker = await h.workerFor(server, { runtime: 'vllm' });

    const models = await httpTransport().models(worker, new AbortController().signal);

    expect(models).toEqual(['meta-llama/Llama-3.1-8B-Instruct', 'sql-lora']);
    expect(server.seen[0]).toEqual({
      method: 'GET',
      path: '/v1/models',
      authorization: undefined,
      accept: 'application/json',
    });
  });

  it('lists an SGLang worker’s models', async () => {
    const server = await h.serve(sglangRoutes());
    const worker = await h.workerFor(server, { runtime: 'sglang' });

    expect(await httpTransport().models(worker)).toEqual(['Qwen/Qwen2.5-7B-Instruct']);
  });

  it('returns an empty list only when the worker lists no model, and drops repeats', async () => {
    const server = await h.serve({ '/v1/models': json({ object: 'list', data: [] }) });
    const worker = await h.workerFor(server);
    const repeated = await h.serve({
      '/v1/models': json({ data: [{ id: 'a' }, { id: 'b' }, { id: 'a' }] }),
    });

    expect(await httpTransport().models(worker)).toEqual([]);
    expect(await httpTransport().models(await h.workerFor(repeated))).toEqual(['a', 'b']);
  });

  it.each([
    ['a 500', reply(500, 'boom'), 'the worker answered 500'],
    ['a 404', reply(404, 'nope'), 'the worker answered 404'],
    ['text that is not JSON', reply(200, '<html>oops</html>'), 'the body is not JSON'],
    ['a JSON array', json([{ id: 'a' }]), 'not a model list: the body is not a JSON object'],
    ['null', json(null), 'not a model list: the body is not a JSON object'],
    ['no data array', json({ models: ['a'] }), "not a model list: the body has no 'data' array"],
    ['an entry without id', json({ data: [{ id: 'a' }, { name: 'b' }] }), 'data[1].id'],
    ['an empty id', json({ data: [{ id: '' }] }), 'data[0].id'],
    ['a connection reset', reset, 'the request failed'],
    ['no answer', hang, 'timed out after 100 ms'],
  ])('rejects with TRANSPORT_FAILED for %s', async (_label, route, detail) => {
    const server = await h.serve({ '/v1/models': route });
    const worker = await h.workerFor(server);

    const error = await rejectsCode(httpTransport(QUICK).models(worker), TRANSPORT_FAILED);

    expect(error.message).toContain(`GET ${server.url}/v1/models failed: `);
    expect(error.message).toContain(detail);
  });

  it('rejects with TRANSPORT_FAILED naming the error code when nothing listens', async () => {
    const url = await h.deadUrl();
    const worker = await h.workerFor({ url });

    const error = await rejectsCode(httpTransport(QUICK).models(worker), TRANSPORT_FAILED);

    expect(error.message).toBe(`GET ${url}/v1/models failed: the request failed (ECONNREFUSED)`);
    expect(error.cause).toBeInstanceOf(Error);
  });

  it('rejects for a body larger than maxBodyBytes', async () => {
    const server = await h.serve({ '/v1/models': huge(65_536) });
    const worker = await h.workerFor(server);

    const error = await rejectsCode(
      httpTransport({ maxBodyBytes: 1_024 }).models(worker),
      TRANSPORT_FAILED,
    );

    expect(error.message).toContain('the body is larger than 1024 bytes');
  });

  it('rejects with "aborted" and the router’s reason as cause when its signal fires', async () => {
    const server = await h.serve({ '/v1/models': hang });
    const worker = await h.workerFor(server);
    const router = new AbortController();
    const reason = new Error('router closed');

    const listing = httpTransport(SLOW).models(worker, router.signal);
    await waitUntil(() => server.seen.length === 1);
    router.abort(reason);

    const error = await rejectsCode(listing, TRANSPORT_FAILED);
    expect(error.message).toBe(`GET ${server.url}/v1/models failed: aborted`);
    expect(error.cause).toBe(reason);
  });
});

describe('arguments', () => {
  it('rejects a call without a worker, or with something that is not a signal', async () => {
    const server = await h.serve(vllmRoutes());
    const worker = await h.workerFor(server);
    const transport = httpTransport();

    await rejectsCode(transport.probe(undefined as never), 'INVALID_ARGUMENT');
    await rejectsCode(transport.loads({} as never), 'INVALID_ARGUMENT');
    await rejectsCode(transport.models(worker, 'stop' as never), 'INVALID_ARGUMENT');
    expect(server.seen).toEqual([]);
  });
});

/** Polls `condition` on the event loop until it holds. */
async function waitUntil(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 1));
}
