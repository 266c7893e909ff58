/**
 * `router.ready()` and the startup schedule of the health loop: a new fleet becomes routable in
 * about `startupIntervalMs`, not in `intervalMs`; a worker that keeps failing while pending is
 * probed less and less often; every waiting caller settles.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { FleetRouteError, Router, type Transport, WorkerRegistry } from '../../src/index.js';

/** A transport whose probe answers per URL (default healthy), recording when each probe ran. */
function scripted(answers: Record<string, boolean> = {}) {
  const probes: { url: string; at: number }[] = [];
  const transport: Transport = {
    probe: async (worker) => {
      probes.push({ url: worker.url, at: Date.now() });
      return answers[worker.url] ?? true;
    },
  };
  return { transport, probes, answers };
}

async function fleet(urls: readonly string[], options: object = {}, models?: string[]) {
  const registry = await WorkerRegistry.create();
  for (const url of urls) await registry.register(models === undefined ? { url } : { url, models });
  const t = scripted();
  const router = new Router({ registry, transport: t.transport, loadPolling: false, ...options });
  return { registry, router, t };
}

const tick = (ms: number) => vi.advanceTimersByTimeAsync(ms);

describe('router.ready()', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: 0 });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('with the default health settings, a healthy new worker is routable after startupIntervalMs, not intervalMs', async () => {
    const { registry, router, t } = await fleet(['http://a:1']);
    let readyAt = -1;
    router.start();
    void router.ready().then(() => {
      readyAt = Date.now();
    });

    await tick(0);
    expect(registry.getAll()[0]!.status).toBe('pending'); // one success of two
    await tick(500);

    // Probed at once and 500 ms later (successThreshold 2), then ready: not 30 s.
    expect(readyAt).toBe(500);
    expect(t.probes.map((p) => p.at)).toEqual([0, 500]);
    expect(router.select()).toBeDefined();
    await tick(29_000);
    expect(t.probes).toHaveLength(2); // settled: back to intervalMs (30 s)
    await tick(1_000);
    expect(t.probes).toHaveLength(3);
    await router.close();
  });

  it('starts the router if it was not started', async () => {
    const { router, t } = await fleet(['http://a:1']);
    const waiting = router.ready();
    await tick(500);
    await expect(waiting).resolves.toBeUndefined();
    expect(t.probes.length).toBeGreaterThan(0);
    await router.close();
  });

  it('resolves at once when enough workers are ready already', async () => {
    const { registry, router } = await fleet(['http://a:1'], { health: false });
    await registry.transitionStatus(registry.getAll()[0]!.id, 'ready');
    await expect(router.ready()).resolves.toBeUndefined();
    await router.close();
  });

  it('waits for minWorkers ready workers of the model, counting wildcards', async () => {
    const registry = await WorkerRegistry.create();
    const a = await registry.register({ url: 'http://a:1', models: ['m'] });
    const b = await registry.register({ url: 'http://b:1', models: ['other'] });
    const wildcard = await registry.register({ url: 'http://c:1' });
    const router = new Router({ registry, transport: { probe: async () => true }, health: false });
    let settled = false;
    void router.ready({ model: 'm', minWorkers: 2 }).then(() => {
      settled = true;
    });

    await registry.transitionStatus(a.id, 'ready');
    await registry.transitionStatus(b.id, 'ready'); // serves another model: does not count
    await tick(0);
    expect(settled).toBe(false);
    await registry.transitionStatus(wildcard.id, 'ready');
    await tick(0);
    expect(settled).toBe(true);
    await router.close();
  });

  it('rejects with the signal’s reason when the signal aborts first, and forgets the caller', async () => {
    const { router, t } = await fleet(['http://a:1']);
    t.answers['http://a:1'] = false;
    const controller = new AbortController();
    const waiting = router.ready({ signal: controller.signal });
    const reason = new Error('gave up');
    controller.abort(reason);
    await expect(waiting).rejects.toBe(reason);
    const already = router.ready({ signal: AbortSignal.abort(reason) });
    await expect(already).rejects.toBe(reason);
    await router.close();
  });

  it('rejects every waiting caller with CLOSED at close(), and a call after close()', async () => {
    const { router, t } = await fleet(['http://a:1']);
    t.answers['http://a:1'] = false;
    const waiting = [router.ready(), router.ready({ minWorkers: 3 })];
    const assertions = waiting.map((w) => expect(w).rejects.toMatchObject({ code: 'CLOSED' }));
    await tick(0);
    await router.close();
    await Promise.all(assertions);
    await expect(router.ready()).rejects.toBeInstanceOf(FleetRouteError);
  });

  it.each<[string, object]>([
    ['ready.minWorkers', { minWorkers: 0 }],
    ['ready.minWorkers', { minWorkers: 1.5 }],
    ['ready.model', { model: '' }],
    ['ready.signal', { signal: 'soon' }],
    ['ready options', { toString: 5 } as never],
  ])('rejects a bad %s with INVALID_ARGUMENT', async (field, options) => {
    const { router } = await fleet(['http://a:1'], { health: false });
    if (field === 'ready options') {
      await expect(router.ready(7 as never)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    } else {
      const error = await router.ready(options).catch((e: unknown) => e);
      expect(error).toMatchObject({ code: 'INVALID_ARGUMENT' });
      expect((error as Error).message.startsWith(field)).toBe(true);
    }
    await router.close();
  });
});

describe('health loop: startup schedule', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: 0 });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('a pending worker that keeps failing is probed after startupIntervalMs, doubling up to intervalMs', async () => {
    const { router, t } = await fleet(['http://a:1'], {
      health: { intervalMs: 8_000, startupIntervalMs: 1_000 },
    });
    t.answers['http://a:1'] = false;
    router.start();
    await tick(40_000);
    const gaps = t.probes.slice(1).map((p, i) => p.at - t.probes[i]!.at);
    expect(gaps.slice(0, 7)).toEqual([1_000, 2_000, 4_000, 8_000, 8_000, 8_000, 8_000]);
    await router.close();
  });

  it('a success after failures probes again after startupIntervalMs, so recovery is quick', async () => {
    const { registry, router, t } = await fleet(['http://a:1'], {
      health: { intervalMs: 8_000, startupIntervalMs: 1_000 },
    });
    t.answers['http://a:1'] = false;
    router.start();
    await tick(7_000); // probes at 0, 1 s, 3 s, 7 s
    expect(t.probes.map((p) => p.at)).toEqual([0, 1_000, 3_000, 7_000]);
    t.answers['http://a:1'] = true;
    await tick(15_000 - 7_000); // next at 15 s: success 1
    await tick(1_000); // 16 s: success 2 → ready
    expect(t.probes.map((p) => p.at).slice(4)).toEqual([15_000, 16_000]);
    expect(registry.getAll()[0]!.status).toBe('ready');
    await router.close();
  });

  it('a ready worker keeps intervalMs; startupIntervalMs above intervalMs is capped at it', async () => {
    const { router, t } = await fleet(['http://a:1'], {
      health: { intervalMs: 300, startupIntervalMs: 1_000, successThreshold: 3 },
    });
    router.start();
    await tick(1_200);
    expect(t.probes.map((p) => p.at)).toEqual([0, 300, 600, 900, 1_200]);
    await router.close();
  });
});
