/**
 * The Router end to end over real HTTP: four local servers playing vLLM and SGLang workers, the
 * ready HTTP transport, health checks, load polling and requests sent with `execute`. One server
 * dies mid-run: its breaker opens, nothing more is routed to it, the health loop takes it out, and
 * every request still succeeds through retries. Shutdown leaves no handle open.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Router, type Worker, WorkerRegistry } from '../../src/index.js';
import { httpTransport } from '../../src/transport/http/index.js';
import {
  type FakeWorker,
  json,
  reset,
  sglangRoutes,
  startFakeWorker,
  vllmRoutes,
} from '../transport/http/support/fake-worker.js';

const servers: FakeWorker[] = [];

afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

/** A worker that also serves completions, naming itself in the answer. */
async function engine(kind: 'vllm' | 'sglang', name: string): Promise<FakeWorker> {
  const server = await startFakeWorker({
    ...(kind === 'vllm' ? vllmRoutes() : sglangRoutes()),
    '/v1/completions': json({ served_by: name }),
  });
  servers.push(server);
  return server;
}

async function complete(
  worker: Worker,
  signal: AbortSignal,
): Promise<{ status: number; body: { served_by?: string } }> {
  const response = await fetch(`${worker.baseUrl}/v1/completions`, {
    method: 'POST',
    body: '{}',
    signal,
  });
  const body = response.ok ? ((await response.json()) as { served_by?: string }) : {};
  return { status: response.status, body };
}

const until = async (condition: () => boolean, ms = 5_000): Promise<void> => {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not reached in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
};

describe('Router over real HTTP workers', () => {
  it('routes through health checks and load polls; a worker dying mid-run is fenced off and no request fails', async () => {
    const fleet = [
      await engine('vllm', 'v0'),
      await engine('vllm', 'v1'),
      await engine('sglang', 's0'),
      await engine('sglang', 's1'),
    ];
    const registry = await WorkerRegistry.create();
    for (const [i, server] of fleet.entries()) {
      await registry.register({
        url: server.url,
        models: ['m'],
        runtime: i < 2 ? 'vllm' : 'sglang',
      });
    }
    const router = new Router({
      registry,
      transport: httpTransport({ timeoutMs: 500 }),
      policy: 'least_load',
      health: { intervalMs: 50, timeoutMs: 500, successThreshold: 1, failureThreshold: 2 },
      loadPolling: { intervalMs: 50 },
      circuitBreaker: { failureThreshold: 2, openMs: 60_000 },
      retry: { maxAttempts: 4, initialBackoffMs: 1 },
    });
    router.start();
    await until(() => registry.getAll().every((w) => w.status === 'ready'));
    await until(() => router.stats().loads.reports >= 4);

    const served = new Map<string, number>();
    const send = (worker: Worker, { signal }: { signal: AbortSignal }) => complete(worker, signal);
    for (let r = 0; r < 40; r++) {
      const { status, body } = await router.execute({ model: 'm' }, send);
      expect(status).toBe(200);
      served.set(body.served_by!, (served.get(body.served_by!) ?? 0) + 1);
    }
    expect(served.size).toBeGreaterThan(1);

    // s0 starts resetting every connection.
    const dying = fleet[2]!;
    for (const path of ['/v1/completions', '/health', '/metrics']) dying.route(path, reset);
    const dead = registry.getByUrl(dying.url)!;
    const completionsBefore = dying.seen.filter((s) => s.path === '/v1/completions').length;
    for (let r = 0; r < 60; r++) {
      const { status, body } = await router.execute({ model: 'm' }, send);
      expect(status).toBe(200);
      expect(body.served_by).not.toBe('s0');
    }
    // Fenced off by whichever came first: two failed requests (breaker) or two failed probes.
    expect(dead.circuitBreaker.state === 'open' || dead.status !== 'ready').toBe(true);
    await until(() => dead.status === 'not_ready' || dead.status === 'failed');
    const completionsToDead =
      dying.seen.filter((s) => s.path === '/v1/completions').length - completionsBefore;
    expect(completionsToDead).toBeLessThanOrEqual(2); // only the failures that opened the breaker

    expect(registry.getAll().map((w) => w.load)).toEqual([0, 0, 0, 0]);
    await router.close();
  });

  it('close() leaves no open handle, even with a probe stuck on a server that never answers', async () => {
    const stuck = await startFakeWorker({ '/health': () => {}, '/metrics': () => {} });
    servers.push(stuck);
    const handles = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const before = handles();
    const registry = await WorkerRegistry.create();
    await registry.register({ url: stuck.url });
    const router = new Router({
      registry,
      transport: httpTransport({ timeoutMs: 10_000 }),
      health: { intervalMs: 50, timeoutMs: 10_000 },
      loadPolling: { intervalMs: 50, timeoutMs: 10_000 },
    });
    router.start();
    await until(() => stuck.seen.length >= 1);
    await router.close();
    // The aborted probe's socket is destroyed at once. (The runtime's fetch pool may then open a
    // fresh idle connection of its own, which it closes on its own keep-alive timer.)
    await stuck.socketsClosed(1);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(handles()).toBeLessThanOrEqual(before);
  });
});
