/**
 * The Router: selection and leases, load polling, circuit breakers and their events, a worker
 * dying mid-run, leaked leases, options and shutdown.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import v8 from 'node:v8';
import vm from 'node:vm';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  type CircuitChangedEvent,
  createPolicy,
  FleetRouteError,
  type LoadReport,
  Router,
  type Transport,
  type Worker,
  WorkerRegistry,
} from '../../src/index.js';
import { throwsCode } from '../support/fixtures.js';

const healthy: Transport = { probe: async () => true };

async function fleet(n: number, options: object = {}, registryOptions: object = {}) {
  const registry = await WorkerRegistry.create({
    defaultStatus: 'ready',
    clock: () => Date.now(),
    ...registryOptions,
  });
  for (let i = 0; i < n; i++) await registry.register({ url: `http://w${i}:8000`, models: ['m'] });
  const router = new Router({
    registry,
    transport: healthy,
    health: false,
    loadPolling: false,
    ...options,
  });
  router.start();
  return { registry, router, workers: registry.getByModel('m') };
}

describe('Router.select and leases', () => {
  it('select takes a lease: load +1 now, −1 at release, exactly once', async () => {
    const { router } = await fleet(2, { policy: 'round_robin' });
    const lease = router.select({ model: 'm' })!;
    expect(lease.worker.load).toBe(1);
    expect(lease.release({ ok: true, status: 200 })).toBe(true);
    expect(lease.release({ ok: true })).toBe(false);
    expect(lease.worker.load).toBe(0);
    await router.close();
  });

  it('uses the model’s policy, else the default', async () => {
    const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
    await registry.register({ url: 'http://a:1', models: ['a'] });
    await registry.register({ url: 'http://b:1', models: ['b'] });
    const special = createPolicy('passthrough');
    const spy = vi.spyOn(special, 'select');
    const router = new Router({
      registry,
      transport: healthy,
      health: false,
      policies: { b: special },
    });
    router.select({ model: 'a' });
    expect(spy).not.toHaveBeenCalled();
    expect(router.select({ model: 'b' })!.worker.url).toBe('http://b:1');
    expect(spy).toHaveBeenCalledTimes(1);
    await router.close();
  });

  it('by default routes with cache_aware: the same prompt prefix keeps its worker; the prefill leg too', async () => {
    const { router } = await fleet(8);
    const prefix = 'You are a SQL assistant. Schema: orders(id, total, customer_id, created_at). ';
    const first = router.select({ model: 'm', text: `${prefix}Question: revenue?` })!;
    first.release({ ok: true });
    for (const q of ['largest order?', 'orders per day?', 'top customer?']) {
      const lease = router.select({ model: 'm', text: `${prefix}Question: ${q}` })!;
      expect(lease.worker).toBe(first.worker);
      lease.release({ ok: true });
    }
    await router.close();

    const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
    for (let i = 0; i < 8; i++) await registry.register({ url: `http://p${i}:1`, type: 'prefill' });
    await registry.register({ url: 'http://d0:1', type: 'decode' });
    const pd = new Router({ registry, transport: healthy, health: false, loadPolling: false });
    const pair = pd.selectPair({ text: `${prefix}Question: revenue?` })!;
    pair.prefill.release();
    pair.decode.release();
    for (const q of ['largest order?', 'top customer?']) {
      const next = pd.selectPair({ text: `${prefix}Question: ${q}` })!;
      expect(next.prefill.worker).toBe(pair.prefill.worker);
      next.prefill.release();
      next.decode.release();
    }
    await pd.close();
  });

  it('returns undefined (and counts it) when no worker is available', async () => {
    const { router, registry, workers } = await fleet(1);
    await registry.transitionStatus(workers[0]!.id, 'not_ready');
    expect(router.select({ model: 'm' })).toBeUndefined();
    expect(router.stats().noWorker).toBe(1);
    await router.close();
  });

  it('selectPair leases one prefill and one decode worker, or nothing', async () => {
    const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
    const p = await registry.register({ url: 'http://p:1', type: 'prefill' });
    const d = await registry.register({ url: 'http://d:1', type: 'decode' });
    const router = new Router({ registry, transport: healthy, health: false });
    const pair = router.selectPair({})!;
    expect([pair.prefill.worker, pair.decode.worker]).toEqual([p, d]);
    expect([p.load, d.load]).toEqual([1, 1]);
    await registry.transitionStatus(d.id, 'failed');
    expect(router.selectPair({})).toBeUndefined();
    expect(p.load).toBe(1); // no lease taken for half a pair
    await router.close();
  });

  it('a lease garbage-collected without release() is released and reported', async () => {
    const gc = exposeGc();
    if (gc === undefined) return;
    const { router, workers } = await fleet(1);
    const warnings: string[] = [];
    const onWarning = (w: Error & { code?: string }) => {
      if (w.code === 'FLEETROUTE_LEASE_LEAK') warnings.push(w.message);
    };
    process.on('warning', onWarning);
    (() => {
      router.select({ model: 'm' }); // dropped on the floor
    })();
    expect(workers[0]!.load).toBe(1);
    for (let i = 0; i < 20 && workers[0]!.load > 0; i++) {
      gc();
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    process.off('warning', onWarning);
    expect(workers[0]!.load).toBe(0);
    expect(router.stats().leakedLeases).toBe(1);
    await new Promise((resolve) => setImmediate(resolve));
    expect(warnings.length).toBeGreaterThanOrEqual(1);
    await router.close();
  });
});

describe('Router load polling', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('polls the ready workers every intervalMs and gives the reports to every policy', async () => {
    const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
    const a = await registry.register({ url: 'http://a:1', models: ['m'] });
    const b = await registry.register({ url: 'http://b:1', models: ['m'] });
    await registry.transitionStatus(b.id, 'not_ready');
    const polled: string[] = [];
    const transport: Transport = {
      probe: async () => true,
      loads: async (w: Worker): Promise<LoadReport> => {
        polled.push(w.url);
        return { tokenUsage: 0.5 };
      },
    };
    const policy = createPolicy('power_of_two');
    const delivered: ReadonlyMap<string, LoadReport>[] = [];
    const spy = vi.spyOn(policy, 'updateLoads').mockImplementation((r) => void delivered.push(r));
    const router = new Router({
      registry,
      transport,
      health: false,
      policy,
      loadPolling: { intervalMs: 1_000 },
    });
    router.start();
    await vi.advanceTimersByTimeAsync(0);
    await vi.advanceTimersByTimeAsync(2_000);
    expect(polled).toEqual([a.url, a.url, a.url]); // ready workers only, at 0, 1 and 2 s
    expect(spy).toHaveBeenCalledTimes(3);
    expect([...delivered[0]!.keys()]).toEqual([a.url]);
    expect(router.stats().loads).toMatchObject({ rounds: 3, polls: 3, reports: 3 });
    await router.close();
    await vi.advanceTimersByTimeAsync(5_000);
    expect(polled.length).toBe(3);
  });

  it('a report older than 3 intervals is dropped: the policy falls back to in-flight counts', async () => {
    const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
    const busy = await registry.register({ url: 'http://busy:1', models: ['m'] });
    const idle = await registry.register({ url: 'http://idle:1', models: ['m'] });
    let answering = true;
    const transport: Transport = {
      probe: async () => true,
      loads: async (w: Worker) =>
        answering ? { runningRequests: w.url === busy.url ? 9 : 1 } : undefined,
    };
    const router = new Router({
      registry,
      transport,
      health: false,
      policy: 'power_of_two',
      loadPolling: { intervalMs: 1_000 },
      clock: () => Date.now(),
    });
    router.start();
    await vi.advanceTimersByTimeAsync(0);
    // Three requests held on the idle worker: reports still say it is the lighter one.
    const held = [1, 2, 3].map(() => router.select({ model: 'm' })!);
    expect(held.map((l) => l.worker)).toEqual([idle, idle, idle]);

    answering = false; // the metrics endpoint stops answering
    await vi.advanceTimersByTimeAsync(2_900);
    const fresh = router.select({ model: 'm' })!;
    expect(fresh.worker).toBe(idle); // 2.9 s old: within 3 intervals, still used
    fresh.release();
    await vi.advanceTimersByTimeAsync(200);
    const stale = router.select({ model: 'm' })!;
    expect(stale.worker).toBe(busy); // 3.1 s old: dropped, 0 in flight beats 3
    stale.release();
    for (const lease of held) lease.release();
    await router.close();
  });

  it('a poll that errors, hangs or answers nothing just leaves the worker out of the round', async () => {
    const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
    for (const url of ['http://ok:1', 'http://err:1', 'http://hang:1', 'http://none:1'])
      await registry.register({ url });
    const transport: Transport = {
      probe: async () => true,
      loads: (w: Worker) => {
        if (w.url === 'http://err:1') return Promise.reject(new Error('500'));
        if (w.url === 'http://hang:1') return new Promise<LoadReport>(() => {});
        if (w.url === 'http://none:1') return Promise.resolve(undefined);
        return Promise.resolve({ runningRequests: 3 });
      },
    };
    const policy = createPolicy('least_load');
    const delivered: ReadonlyMap<string, LoadReport>[] = [];
    vi.spyOn(policy, 'updateLoads').mockImplementation((r) => void delivered.push(r));
    const router = new Router({
      registry,
      transport,
      health: false,
      policy,
      loadPolling: { intervalMs: 1_000, timeoutMs: 200 },
    });
    router.start();
    await vi.advanceTimersByTimeAsync(300);
    expect(delivered.length).toBe(1);
    expect([...delivered[0]!.keys()]).toEqual(['http://ok:1']);
    expect(router.stats().loads.failures).toBe(3);
    await router.close();
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe('Router circuit breakers', () => {
  it('applies its circuitBreaker option to every worker and emits circuitChanged on each transition', async () => {
    let now = 0;
    const registry = await WorkerRegistry.create({ defaultStatus: 'ready', clock: () => now });
    const worker = await registry.register({ url: 'http://a:1' });
    const router = new Router({
      registry,
      transport: healthy,
      health: false,
      circuitBreaker: { failureThreshold: 2, openMs: 1_000, successThreshold: 1 },
    });
    const events: CircuitChangedEvent[] = [];
    router.on('circuitChanged', (e) => events.push(e));
    router.start();
    for (let i = 0; i < 2; i++) router.select()!.release({ ok: false, status: 503 });
    expect(worker.circuitBreaker.state).toBe('open');
    expect(router.select()).toBeUndefined();
    now += 1_000;
    router.select()!.release({ ok: true, status: 200 }); // the half-open trial succeeds
    expect(events.map((e) => `${e.from}→${e.to}`)).toEqual([
      'closed→open',
      'open→half_open',
      'half_open→closed',
    ]);
    expect(events[0]).toMatchObject({
      type: 'circuitChanged',
      workerId: worker.id,
      url: worker.url,
    });
    expect(router.stats().circuits[worker.id]).toBe('closed');
    await router.close();
  });

  it('a per-worker { disabled: true } breaker never opens', async () => {
    const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
    const worker = await registry.register({
      url: 'http://a:1',
      circuitBreaker: { disabled: true },
    });
    const router = new Router({
      registry,
      transport: healthy,
      health: false,
      circuitBreaker: { failureThreshold: 1 },
    });
    router.start();
    for (let i = 0; i < 10; i++) router.select()!.release({ ok: false });
    expect(worker.circuitBreaker.state).toBe('closed');
    expect(router.select()).toBeDefined();
    await router.close();
  });

  it('the failure-rate window opens a breaker that never saw failureThreshold failures in a row', async () => {
    const registry = await WorkerRegistry.create({ defaultStatus: 'ready', clock: () => 0 });
    const worker = await registry.register({ url: 'http://a:1' });
    const router = new Router({
      registry,
      transport: healthy,
      health: false,
      circuitBreaker: {
        failureThreshold: 5,
        window: { ms: 10_000, minRequests: 10, failureRate: 0.5 },
      },
    });
    router.start();
    // fail, ok, fail, ok …: never two failures in a row, but half of all requests fail.
    for (let i = 0; i < 9; i++) router.select()!.release({ ok: i % 2 === 1 });
    expect(worker.circuitBreaker.state).toBe('closed'); // 9 requests < minRequests
    router.select()!.release({ ok: false }); // the 10th: 5 of 10 failed
    expect(worker.circuitBreaker.state).toBe('open');
    await router.close();
  });

  it('one of 4 workers dies mid-run: once its breaker opens nothing more goes to it, and every request succeeds', async () => {
    vi.useFakeTimers();
    try {
      const { registry, router, workers } = await fleet(4, {
        policy: 'round_robin',
        circuitBreaker: { failureThreshold: 3, openMs: 60_000 },
        retry: { maxAttempts: 4, initialBackoffMs: 1 },
      });
      const dead = workers[2]!;
      const sentTo: string[] = [];
      let failures = 0;
      const send = async (w: Worker) => {
        sentTo.push(w.url);
        if (w === dead && sentTo.length > 20) throw new Error('ECONNRESET');
        return { status: 200 };
      };
      for (let r = 0; r < 100; r++) {
        const promise = router.execute({ model: 'm' }, send);
        await vi.runAllTimersAsync();
        const result = await promise.catch(() => {
          failures++;
          return undefined;
        });
        expect(result?.status).toBe(200);
      }
      expect(failures).toBe(0);
      expect(dead.circuitBreaker.state).toBe('open');
      const afterOpen = sentTo.slice(sentTo.lastIndexOf(dead.url) + 1);
      expect(afterOpen.length).toBeGreaterThan(40);
      expect(sentTo.filter((u) => u === dead.url).length).toBeLessThanOrEqual(5 + 3);
      expect(registry.getAll().map((w) => w.load)).toEqual([0, 0, 0, 0]);
      await router.close();
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('Router: every promise it hands out settles at close()', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('pollLoads() settles when close() runs while polls wait behind maxConcurrentProbes', async () => {
    const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
    for (let i = 0; i < 4; i++) await registry.register({ url: `http://w${i}:1` });
    let started = 0;
    const router = new Router({
      registry,
      // A poll that never answers and ignores its signal: the first holds the one slot.
      transport: {
        probe: async () => true,
        loads: () => {
          started++;
          return new Promise<LoadReport>(() => {});
        },
      },
      health: false,
      loadPolling: { intervalMs: 60_000, timeoutMs: 60_000 },
      maxConcurrentProbes: 1,
    });
    const round = router.pollLoads();
    let settled = false;
    void round.then(() => {
      settled = true;
    });
    await vi.advanceTimersByTimeAsync(0);
    expect(started).toBe(1); // three more wait for the slot

    await router.close();
    await vi.advanceTimersByTimeAsync(0);

    expect(settled).toBe(true);
    expect(started).toBe(1); // the waiting polls were dropped, never started
  });

  it('pollLoads() after close() resolves at once', async () => {
    const { router } = await fleet(1);
    await router.close();
    await expect(router.pollLoads()).resolves.toBeUndefined();
  });
});

describe('Router.select input', () => {
  it('select(null) and select(undefined) route like select({}); a non-object is INVALID_ARGUMENT', async () => {
    const { router } = await fleet(2, { policy: 'round_robin' });
    const leases = [router.select(null as never), router.select(undefined), router.select()];
    expect(leases.every((l) => l !== undefined)).toBe(true);
    for (const lease of leases) lease!.release();
    expect(() => router.select(5 as never)).toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT' }),
    );
    expect(() => router.selectPair('x' as never)).toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT' }),
    );
    expect(router.selectPair(null as never)).toBeUndefined(); // no prefill/decode workers
    await router.close();
  });
});

describe('Router options and lifecycle', () => {
  it.each([
    ['no registry', { transport: healthy }, /registry must be/],
    ['no transport', {}, /transport must be/],
    ['a transport without probe', { transport: {} }, /transport must be/],
    ['an unknown policy name', { transport: healthy, policy: 'fastest' }, /policy must be/],
    [
      'a bad health interval',
      { transport: healthy, health: { intervalMs: 0 } },
      /health\.intervalMs/,
    ],
    ['a bad retry', { transport: healthy, retry: { maxAttempts: 0 } }, /retry\.maxAttempts/],
    [
      'a bad breaker',
      { transport: healthy, circuitBreaker: { openMs: -1 } },
      /circuitBreaker\.openMs/,
    ],
  ])('rejects %s with INVALID_ARGUMENT naming it', async (_label, options, message) => {
    const registry = await WorkerRegistry.create();
    const full =
      'transport' in options || _label !== 'no registry' ? { registry, ...options } : options;
    try {
      new Router((_label === 'no registry' ? options : full) as never);
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(FleetRouteError);
      expect((error as FleetRouteError).code).toBe('INVALID_ARGUMENT');
      expect((error as Error).message).toMatch(message);
    }
  });

  it('refuses an unknown option (helth: false) with INVALID_ARGUMENT naming it, before building anything', async () => {
    const registry = await WorkerRegistry.create();
    const policy = createPolicy('cache_aware');
    const closeSpy = vi.spyOn(policy, 'close');
    const options = { registry, transport: healthy, policy, helth: false };
    const error = throwsCode(() => new Router(options as never), 'INVALID_ARGUMENT');
    expect(error.message).toMatch(/^helth is not an option of Router \(options: /);
    expect(error.message).toContain('health');
    expect(closeSpy).not.toHaveBeenCalled();
    policy.close?.();
  });

  it('close() stops everything: no timer left, the registry no longer observed, policies closed', async () => {
    vi.useFakeTimers();
    try {
      const registry = await WorkerRegistry.create();
      await registry.register({ url: 'http://a:1' });
      const policy = createPolicy('cache_aware');
      const closeSpy = vi.spyOn(policy, 'close');
      const router = new Router({
        registry,
        transport: { probe: async () => true, loads: async () => ({ tokenUsage: 0.1 }) },
        policy,
        health: { intervalMs: 1_000 },
        loadPolling: { intervalMs: 1_000 },
      });
      router.start();
      await vi.advanceTimersByTimeAsync(5_000);
      await router.close();
      // The only timer left may be the shared 1 ms clock cache of the policies, which expires
      // on its own (it is unref'd and owned by no router).
      await vi.advanceTimersByTimeAsync(1);
      expect(vi.getTimerCount()).toBe(0);
      expect(closeSpy).toHaveBeenCalled();
      expect(registry.stats().subscribers).toBe(0);
      expect(() => router.start()).toThrow(FleetRouteError);
      expect(router.select()).toBeUndefined();
      await router.close(); // idempotent
    } finally {
      vi.useRealTimers();
    }
  });
});

/** `gc()` without `--expose-gc` on the command line. */
function exposeGc(): (() => void) | undefined {
  const existing = (globalThis as { gc?: () => void }).gc;
  if (existing !== undefined) return existing;
  try {
    v8.setFlagsFromString('--expose-gc');
    return vm.runInNewContext('gc') as () => void;
  } catch {
    return undefined;
  }
}

describe('Router shutdown with real timers', () => {
  it('after close(), a transport that never settles leaves no timer or handle behind', async () => {
    const timeouts = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const baseline = timeouts();
    const registry = await WorkerRegistry.create();
    for (let i = 0; i < 3; i++) await registry.register({ url: `http://hung${i}:1` });
    const never = () => new Promise<never>(() => {});
    const router = new Router({
      registry,
      transport: { probe: never, loads: never },
      health: { intervalMs: 20, timeoutMs: 10 },
      loadPolling: { intervalMs: 20, timeoutMs: 10 },
    });
    router.start();
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(router.stats().health.timeouts).toBeGreaterThan(3);
    await router.close();
    await new Promise((resolve) => setTimeout(resolve, 20)); // the shared 1 ms clock cache expires
    expect(timeouts()).toBeLessThanOrEqual(baseline);
  });

  it('a transport that throws, rejects or never settles: probes keep their cadence, no unhandled rejection, and the process exits by itself after close()', async () => {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [
        '--import',
        'tsx',
        fileURLToPath(new URL('fixtures/misbehaving-transport.ts', import.meta.url)),
      ],
      { timeout: 30_000 }, // killed (and the test fails) if the process does not end by itself
    );
    const lines = stdout.trim().split('\n');
    expect(lines).toHaveLength(1); // no "unhandled rejection" line
    const figures = JSON.parse(lines[0]!) as Record<string, unknown>;
    // Three bad workers probed every 20 ms for 200 ms: well over one probe each, all failing.
    expect(figures.probes).toBeGreaterThan(9);
    // Every answered probe failed; at most one probe per worker was still in flight at close().
    expect(figures.failures).toBeLessThanOrEqual(figures.probes as number);
    expect(figures.failures).toBeGreaterThanOrEqual((figures.probes as number) - 3);
    expect(figures.timeouts).toBeGreaterThan(3);
    expect(figures).toMatchObject({ stuck: 'CLOSED', backingOff: 'CLOSED' });
  });
});
