/**
 * An engine restart over real HTTP: two stand-in vLLM engines on 127.0.0.1, the HTTP transport,
 * `cache_aware`, and the engine that holds a prompt restarting — slowly enough for the health
 * loop to take it out, or so quickly that only its new `process_start_time_seconds` tells. Either
 * way the router's `cache_aware` stops sending the prompt there as a cache hit.
 */
import { afterEach, describe, expect, it } from 'vitest';
import {
  type CacheAwarePolicy,
  createPolicy,
  type DecisionEvent,
  Router,
  type RouterOptions,
  type Worker,
  WorkerRegistry,
  type WorkerRestartedEvent,
  type WorkerStatusEvent,
} from '../../src/index.js';
import { cacheAwareTreeOf } from '../../src/policies/cache-aware.js';
import { httpTransport } from '../../src/transport/http/index.js';
import { type StandInEngine, startStandInEngine } from '../support/vllm-engine.js';

const open: { close(): unknown }[] = [];
const engines: StandInEngine[] = [];
afterEach(async () => {
  for (const o of open.splice(0).reverse()) await o.close();
  await Promise.all(engines.splice(0).map((e) => e.stop()));
});

const prompt = 'You are a careful SQL assistant. Schema: orders(id, total, placed_at). '.repeat(8);

/** Two engines, a router over them with `cache_aware`, ready to route. */
async function fleet(options: Pick<RouterOptions, 'health' | 'loadPolling'>) {
  for (let i = 0; i < 2; i++) engines.push(await startStandInEngine());
  const model = engines[0]!.model;
  const registry = await WorkerRegistry.create();
  open.push(registry);
  for (const engine of engines)
    await registry.register({ url: engine.url, models: [model], runtime: 'vllm' });
  const policy = createPolicy('cache_aware') as CacheAwarePolicy;
  const router = new Router({ registry, transport: httpTransport(), policy, ...options });
  open.push(router);
  const decisions: DecisionEvent[] = [];
  const restarts: WorkerRestartedEvent[] = [];
  const statuses: WorkerStatusEvent[] = [];
  router.on('decision', (e) => void decisions.push(e));
  router.on('workerRestarted', (e) => void restarts.push(e));
  router.on('statusChanged', (e) => void statuses.push(e));
  await router.ready({ minWorkers: 2, signal: AbortSignal.timeout(30_000) });

  /** Sends the prompt through the router; @returns the worker that served it. */
  const send = async (): Promise<Worker> => {
    let served: Worker | undefined;
    const response = await router.execute({ model, text: prompt }, async (worker, { signal }) => {
      served = worker;
      return fetch(`${worker.baseUrl}/v1/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model, prompt, max_tokens: 2 }),
        signal,
      });
    });
    expect(response.status).toBe(200);
    await response.text();
    return served!;
  };
  const engineOf = (worker: Worker) => engines.find((e) => e.url === worker.baseUrl)!;
  const lastBranch = () => decisions.at(-1)?.branch;
  return {
    router,
    registry,
    policy,
    model,
    decisions,
    restarts,
    statuses,
    send,
    engineOf,
    lastBranch,
  };
}

/** Resolves at the first `statusChanged` of `url` to `to`. */
function statusOf(router: Router, url: string, to: WorkerStatusEvent['to']): Promise<void> {
  return new Promise((resolve) => {
    const listener = (e: WorkerStatusEvent) => {
      if (e.url !== url || e.to !== to) return;
      router.off('statusChanged', listener);
      resolve();
    };
    router.on('statusChanged', listener);
  });
}

describe('Router over real HTTP: an engine restart empties what cache_aware believes', () => {
  it('the health loop sees the engine fail and come back (ready → not_ready → ready)', async () => {
    // Arrange: probes every 50 ms, one failure takes a worker out; no load polling, so only the
    // health loop can tell.
    const f = await fleet({
      health: { intervalMs: 50, startupIntervalMs: 50, successThreshold: 1, failureThreshold: 1 },
      loadPolling: false,
    });
    const holder = await f.send();
    expect(await f.send()).toBe(holder);
    expect(f.lastBranch()).toBe('cache_hit');
    const engine = f.engineOf(holder);

    // Act: the engine dies, the health loop takes it out, it comes back.
    const down = statusOf(f.router, holder.url, 'not_ready');
    await engine.stop();
    await down;
    const back = statusOf(f.router, holder.url, 'ready');
    await engine.restart();
    await back;

    // Assert
    expect(f.restarts).toEqual([
      { type: 'workerRestarted', workerId: holder.id, url: holder.url, detectedBy: 'health' },
    ]);
    expect(cacheAwareTreeOf(f.policy, f.model, 'text')?.sizeOf(holder.url) ?? 0).toBe(0);
    f.router.select({ model: f.model, text: prompt })?.release();
    expect(f.lastBranch()).toBe('cache_miss');
  });

  it('a restart too quick for the health loop shows in the next load poll (process_start_time_seconds)', async () => {
    // Arrange: after startup the health loop probes once an hour, and loads are polled by hand.
    const f = await fleet({
      health: {
        intervalMs: 3_600_000,
        startupIntervalMs: 50,
        successThreshold: 1,
        failureThreshold: 1,
      },
      loadPolling: { intervalMs: 3_600_000 },
    });
    const holder = await f.send();
    expect(await f.send()).toBe(holder);
    expect(f.lastBranch()).toBe('cache_hit');
    await f.router.pollLoads(); // the engines' first start times: no restart
    expect(f.restarts).toEqual([]);
    const engine = f.engineOf(holder);
    const before = engine.startedAt;
    const statusesBefore = f.statuses.length;

    // Act: stop and start again at once, with a new start time (in another millisecond).
    await engine.stop();
    while (Date.now() <= before * 1000 + 1) await new Promise((r) => setTimeout(r, 1));
    await engine.restart();
    expect(engine.startedAt).not.toBe(before);
    // Until a round in which both engines answer: the client's pooled connection to the engine
    // that went away may fail the first poll after it (as a scrape between two polls would).
    for (let round = 0; round < 100; round++) {
      const failures = f.router.stats().loads.failures;
      await f.router.pollLoads();
      if (f.router.stats().loads.failures === failures) break;
    }

    // Assert: the worker never left ready, yet the restart was seen.
    expect(f.statuses.slice(statusesBefore)).toEqual([]);
    expect(f.restarts).toEqual([
      { type: 'workerRestarted', workerId: holder.id, url: holder.url, detectedBy: 'start_time' },
    ]);
    expect(cacheAwareTreeOf(f.policy, f.model, 'text')?.sizeOf(holder.url) ?? 0).toBe(0);
    f.router.select({ model: f.model, text: prompt })?.release();
    expect(f.lastBranch()).toBe('cache_miss');
  });
});
