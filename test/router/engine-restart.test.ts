/**
 * The Router detects an engine restart two ways — the health loop sees a ready worker fail and
 * come back, or a load report's `startedAt` changes — and tells every policy how it saw it
 * (`workerRestarted(url, { detectedBy })`, on a start-time change before that round's
 * `updateLoads`) and its listeners (`workerRestarted`). An in-memory transport; the same over
 * real HTTP is in `engine-restart-http.test.ts`.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  type CacheAwarePolicy,
  createPolicy,
  type LoadReport,
  type Policy,
  Router,
  type Transport,
  type Worker,
  WorkerRegistry,
  type WorkerRestartedEvent,
} from '../../src/index.js';
import { cacheAwareTreeOf } from '../../src/policies/cache-aware.js';
import { essay } from '../support/fixtures.js';

const open: { close(): unknown }[] = [];
afterEach(async () => {
  for (const o of open.splice(0).reverse()) await o.close();
  vi.useRealTimers();
});

/**
 * A policy that routes round-robin and records the restarts it is told of (`url detectedBy`),
 * and in `calls` every restart and load round in the order they came.
 */
function recordingPolicy(): Policy & { restarted: string[]; calls: string[] } {
  const inner = createPolicy('round_robin');
  const restarted: string[] = [];
  const calls: string[] = [];
  return {
    name: 'round_robin',
    restarted,
    calls,
    select: (workers) => inner.select(workers),
    workerRestarted: (url, restart) => {
      restarted.push(`${url} ${restart.detectedBy}`);
      calls.push(`workerRestarted ${url}`);
    },
    updateLoads: (reports) => void calls.push(`updateLoads ${reports.size}`),
  };
}

/** Engines whose health and reported start time the test sets. */
function engines() {
  const healthy = new Map<string, boolean>();
  const startedAt = new Map<string, number | undefined>();
  const transport: Transport = {
    probe: async (w: Worker) => healthy.get(w.url) ?? true,
    loads: async (w: Worker): Promise<LoadReport> => {
      const s = startedAt.get(w.url);
      return s === undefined ? { runningRequests: 0 } : { runningRequests: 0, startedAt: s };
    },
  };
  return { healthy, startedAt, transport };
}

async function fleet(options: { health: boolean; policy?: Policy }) {
  const registry = await WorkerRegistry.create({
    defaultStatus: options.health ? 'pending' : 'ready',
  });
  open.push(registry);
  const a = await registry.register({ url: 'http://a:8000' });
  const b = await registry.register({ url: 'http://b:8000' });
  const e = engines();
  const policy = options.policy ?? recordingPolicy();
  const router = new Router({
    registry,
    transport: e.transport,
    policy,
    health: options.health
      ? { intervalMs: 100, startupIntervalMs: 100, successThreshold: 1, failureThreshold: 1 }
      : false,
    loadPolling: { intervalMs: 3_600_000 },
  });
  open.push(router);
  const events: WorkerRestartedEvent[] = [];
  router.on('workerRestarted', (event) => void events.push(event));
  router.start();
  return { registry, router, a, b, ...e, policy, events };
}

describe('Router: an engine restart shown by the start time in load reports', () => {
  it('a start time that changes from the one seen before is a restart; the first one seen is not', async () => {
    const { router, a, b, startedAt, policy, events } = await fleet({ health: false });
    const restarted = (policy as ReturnType<typeof recordingPolicy>).restarted;
    startedAt.set(a.url, 1_764_000_000_000);
    startedAt.set(b.url, 1_764_000_000_500);

    await router.pollLoads();
    await router.pollLoads();
    expect(restarted).toEqual([]);

    startedAt.set(a.url, 1_764_000_090_000);
    await router.pollLoads();

    expect(restarted).toEqual([`${a.url} start_time`]);
    expect(events).toEqual([
      { type: 'workerRestarted', workerId: a.id, url: a.url, detectedBy: 'start_time' },
    ]);
    await router.pollLoads(); // the new start time is known now
    expect(restarted).toEqual([`${a.url} start_time`]);
  });

  it('a report without a usable start time neither counts as a restart nor forgets the known one', async () => {
    const { router, a, startedAt, policy } = await fleet({ health: false });
    const restarted = (policy as ReturnType<typeof recordingPolicy>).restarted;
    startedAt.set(a.url, 1_764_000_000_000);
    await router.pollLoads();

    for (const junk of [undefined, Number.NaN, -1, Number.POSITIVE_INFINITY]) {
      startedAt.set(a.url, junk);
      await router.pollLoads();
    }
    expect(restarted).toEqual([]);
    startedAt.set(a.url, 1_764_000_000_000);
    await router.pollLoads();
    expect(restarted).toEqual([]);
  });

  it('a removed worker’s start time is forgotten: registered again, its first report is a first value', async () => {
    const { registry, router, a, startedAt, policy } = await fleet({ health: false });
    const restarted = (policy as ReturnType<typeof recordingPolicy>).restarted;
    startedAt.set(a.url, 1_764_000_000_000);
    await router.pollLoads();

    await registry.remove(a.id);
    await registry.register({ url: a.url });
    startedAt.set(a.url, 1_764_000_090_000);
    await router.pollLoads();

    expect(restarted).toEqual([]);
  });

  it('every policy is told — the default, per-model, prefill and decode ones — even when one throws', async () => {
    const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
    open.push(registry);
    const a = await registry.register({ url: 'http://a:8000', models: ['m'] });
    const e = engines();
    const throwing: Policy = {
      ...recordingPolicy(),
      workerRestarted: () => {
        throw new Error('broken policy');
      },
    };
    const told = [recordingPolicy(), recordingPolicy(), recordingPolicy()];
    const router = new Router({
      registry,
      transport: e.transport,
      policy: throwing,
      policies: { m: told[0]! },
      prefillPolicy: told[1]!,
      decodePolicy: told[2]!,
      health: false,
      loadPolling: { intervalMs: 3_600_000 },
    });
    open.push(router);
    router.start();
    e.startedAt.set(a.url, 1_764_000_000_000);
    await router.pollLoads();

    e.startedAt.set(a.url, 1_764_000_000_001);
    await router.pollLoads();

    for (const policy of told) expect(policy.restarted).toEqual([`${a.url} start_time`]);
  });
});

describe('Router: what a policy is told of a restart shown by the start time', () => {
  it('the round showing the new start time: workerRestarted first, then that round’s updateLoads', async () => {
    const { router, a, b, startedAt, policy } = await fleet({ health: false });
    const calls = (policy as ReturnType<typeof recordingPolicy>).calls;
    startedAt.set(a.url, 1_764_000_000_000);
    startedAt.set(b.url, 1_764_000_000_000);
    await router.pollLoads();

    startedAt.set(a.url, 1_764_000_090_000);
    await router.pollLoads();

    expect(calls).toEqual(['updateLoads 2', `workerRestarted ${a.url}`, 'updateLoads 2']);
  });

  it('cache_aware forgets what it routed to the worker before its previous report, and keeps what it routed since', async () => {
    // Arrange: one worker, so every prompt goes to it.
    const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
    open.push(registry);
    const a = await registry.register({ url: 'http://a:8000', models: ['m'] });
    const e = engines();
    const policy = createPolicy('cache_aware') as CacheAwarePolicy;
    const router = new Router({
      registry,
      transport: e.transport,
      policy,
      health: false,
      loadPolling: { intervalMs: 3_600_000 },
    });
    open.push(router);
    router.start();
    const before = essay(11);
    const since = essay(12);
    const held = (text: string) => {
      const tree = cacheAwareTreeOf(policy, 'm', 'text')!;
      const match = tree.match(text);
      return tree.holdersOf(match).includes(a.url) ? match.matched : 0;
    };
    e.startedAt.set(a.url, 1_764_000_000_000);
    router.select({ model: 'm', text: before })?.release();
    await router.pollLoads(); // the last report with the old start time
    router.select({ model: 'm', text: since })?.release();
    expect(held(before)).toBe(400);

    // Act: the engine restarted; the next poll shows it.
    e.startedAt.set(a.url, 1_764_000_090_000);
    await router.pollLoads();

    // Assert
    expect(held(before)).toBe(0);
    expect(held(since)).toBe(400);
  });
});

describe('Router: an engine restart shown by the health loop', () => {
  it('ready → not_ready on failed probes → ready again is a restart', async () => {
    vi.useFakeTimers();
    const { a, healthy, policy, events } = await fleet({ health: true });
    const restarted = (policy as ReturnType<typeof recordingPolicy>).restarted;
    await vi.advanceTimersByTimeAsync(50);
    expect(a.status).toBe('ready');

    healthy.set(a.url, false);
    await vi.advanceTimersByTimeAsync(100);
    expect(a.status).toBe('not_ready');
    expect(restarted).toEqual([]);
    healthy.set(a.url, true);
    await vi.advanceTimersByTimeAsync(100);

    expect(a.status).toBe('ready');
    expect(restarted).toEqual([`${a.url} health`]);
    expect(events).toEqual([
      { type: 'workerRestarted', workerId: a.id, url: a.url, detectedBy: 'health' },
    ]);
    await vi.advanceTimersByTimeAsync(500); // staying ready is no further restart
    expect(restarted).toEqual([`${a.url} health`]);
  });

  it('after a restart the health loop saw, the new start time in the next report is not a second one', async () => {
    vi.useFakeTimers();
    const { router, a, healthy, startedAt, events } = await fleet({ health: true });
    startedAt.set(a.url, 1_764_000_000_000);
    await vi.advanceTimersByTimeAsync(50);
    await router.pollLoads();

    healthy.set(a.url, false);
    await vi.advanceTimersByTimeAsync(100);
    startedAt.set(a.url, 1_764_000_090_000);
    healthy.set(a.url, true);
    await vi.advanceTimersByTimeAsync(100);
    await router.pollLoads();

    expect(events.map((e) => e.detectedBy)).toEqual(['health']);
  });

  it('a status set by hand (ready → not_ready → ready) is no restart', async () => {
    vi.useFakeTimers();
    const { registry, a, policy } = await fleet({ health: true });
    const restarted = (policy as ReturnType<typeof recordingPolicy>).restarted;
    await vi.advanceTimersByTimeAsync(50);

    await registry.transitionStatus(a.id, 'not_ready');
    await vi.advanceTimersByTimeAsync(100); // the loop's next probe brings it back

    expect(a.status).toBe('ready');
    expect(restarted).toEqual([]);
  });

  it('without a health loop, only start times tell', async () => {
    const { registry, a, policy } = await fleet({ health: false });
    const restarted = (policy as ReturnType<typeof recordingPolicy>).restarted;

    await registry.transitionStatus(a.id, 'not_ready');
    await registry.transitionStatus(a.id, 'ready');

    expect(restarted).toEqual([]);
  });
});
