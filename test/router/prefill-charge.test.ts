/**
 * A `Router` over `cache_aware` (`decideBy: 'ttft'`): each lease it takes is charged with the
 * uncached prompt tokens the policy predicted on its worker, until the lease's first token or
 * release; first tokens teach the worker's prefill speed, and an engine restart forgets it.
 */
import { afterEach, describe, expect, it } from 'vitest';
import {
  type CacheAwarePolicy,
  createPolicy,
  type LoadReport,
  Router,
  type Transport,
  type Worker,
  WorkerRegistry,
} from '../../src/index.js';
import { workerInternals } from '../../src/workers/worker.js';

const open: { close(): unknown }[] = [];
afterEach(async () => {
  for (const o of open.splice(0).reverse()) await o.close();
});

const tokensOf = (worker: Worker) => workerInternals.runtimeOf(worker).prefillTokens;
const prompt = (seed: number, length: number) =>
  Array.from({ length }, (_, i) => 7_000 + seed * 10_000 + i);

async function routed() {
  let now = 0;
  const startedAt = new Map<string, number>();
  const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
  open.push(registry);
  for (const url of ['http://a:8000', 'http://b:8000']) await registry.register({ url });
  const policy = createPolicy('cache_aware', {
    prefillTokensPerSecond: 10_000,
    clock: () => now,
  }) as CacheAwarePolicy;
  const transport: Transport = {
    probe: async () => true,
    loads: async (w: Worker): Promise<LoadReport> => ({
      runningRequests: 0,
      startedAt: startedAt.get(w.url) ?? 1_764_000_000_000,
    }),
  };
  const router = new Router({
    registry,
    transport,
    policy,
    health: false,
    loadPolling: { intervalMs: 3_600_000 },
  });
  open.push(router);
  router.start();
  return { router, policy, startedAt, advance: (ms: number) => void (now += ms) };
}

describe('Router: prefill charges', () => {
  it('charges a lease with the uncached tokens predicted on its worker, until its first token; a cache hit is charged only what it adds', async () => {
    // Arrange
    const { router } = await routed();
    const tokens = prompt(1, 256);

    // Act: a miss (all 256 tokens uncached), then the same prompt longer (the first 256 held).
    const first = router.select({ tokens })!;
    const chargedMiss = tokensOf(first.worker);
    first.firstToken();
    const afterFirst = tokensOf(first.worker);
    const second = router.select({ tokens: [...tokens, ...prompt(2, 64)] })!;

    // Assert
    expect(chargedMiss).toBe(256);
    expect(afterFirst).toBe(0);
    expect(second.worker).toBe(first.worker);
    expect(tokensOf(second.worker)).toBe(64);
    second.release();
    expect(tokensOf(second.worker)).toBe(0);
    first.release();
  });

  it('first tokens teach the worker its prefill speed, and an engine restart forgets it', async () => {
    // Arrange: 1,024-token prompts, each 512 ms to its first token (2 tokens per ms; the prior
    // says 10).
    const { router, policy, startedAt, advance } = await routed();
    await router.pollLoads(); // the first start times seen
    let worker: Worker | undefined;
    for (let i = 0; i < 30; i++) {
      const lease = router.select({ tokens: prompt(10 + i, 1_024) })!;
      worker ??= lease.worker;
      advance(512);
      lease.firstToken();
      lease.release();
    }
    const speedOf = () => workerInternals.runtimeOf(worker!).prefillSpeed(10);
    const learned = speedOf();

    // Act: the engine restarts (its start time changes).
    startedAt.set(worker!.url, 1_764_000_090_000);
    await router.pollLoads();

    // Assert
    expect(learned).toBeLessThan(5);
    expect(speedOf()).toBe(10);
    expect(policy.name).toBe('cache_aware');
  });
});
