/**
 * `Router` with admission control: `execute` waits for room, in priority order; sheds, bounds and
 * deadlines turn requests away with `SATURATED`; aborts leave the queue at once; `close()` ends
 * every wait; `select` cannot wait and `admit` does; load reports gate and wake.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  type AdmissionEvent,
  FleetRouteError,
  type LoadReport,
  Router,
  type Worker,
  WorkerRegistry,
} from '../../src/index.js';
import { routerFleet } from '../support/router-fleet.js';

/** A `send` the test ends by hand: each call waits until `finish(i)`. */
function heldSends() {
  const calls: { worker: Worker; tag: string; done: (v: { status: number }) => void }[] = [];
  const send = (tag: string) => (worker: Worker) =>
    new Promise<{ status: number }>((done) => {
      calls.push({ worker, tag, done });
    });
  return { calls, send };
}

async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
}

afterEach(() => {
  vi.useRealTimers();
});

describe('Router admission', () => {
  it('is off by default: no figures, and calls never wait', async () => {
    const { router } = await routerFleet(1);
    expect(router.stats().admission).toBeUndefined();
    const held = heldSends();
    const a = router.execute({ model: 'm' }, held.send('a'));
    const b = router.execute({ model: 'm' }, held.send('b'));
    await settle();
    expect(held.calls.map((c) => c.tag)).toEqual(['a', 'b']);
    for (const c of held.calls) c.done({ status: 200 });
    await Promise.all([a, b]);
    await router.close();
  });

  it('holds a call while every worker is full and starts it when a lease is released', async () => {
    const { router, workers } = await routerFleet(2, { admission: { maxInFlight: 1 } });
    const held = heldSends();
    const calls = ['a', 'b', 'c'].map((tag) => router.execute({ model: 'm' }, held.send(tag)));
    await settle();
    expect(held.calls.map((c) => c.tag)).toEqual(['a', 'b']);
    expect(router.stats().admission?.queued).toBe(1);
    held.calls[0]!.done({ status: 200 });
    await settle();
    expect(held.calls.map((c) => c.tag)).toEqual(['a', 'b', 'c']);
    expect(held.calls[2]!.worker).toBe(held.calls[0]!.worker);
    held.calls[1]!.done({ status: 200 });
    held.calls[2]!.done({ status: 200 });
    await Promise.all(calls);
    expect(workers.map((w) => w.load)).toEqual([0, 0]);
    expect(router.stats().admission).toMatchObject({
      queued: 0,
      admitted: 2,
      admittedAfterWait: 1,
    });
    await router.close();
  });

  it('a first token frees room when the limit is on requests awaiting one', async () => {
    const { router } = await routerFleet(1, { admission: { maxPrefilling: 1 } });
    let markFirst: (() => void) | undefined;
    const started: string[] = [];
    const first = router
      .execute(
        { model: 'm' },
        (_w, { firstToken }) => {
          started.push('a');
          markFirst = firstToken;
          return new Promise<{ status: number }>(() => {});
        },
        { signal: AbortSignal.timeout(60_000) },
      )
      .catch(() => {});
    const second = router.execute({ model: 'm' }, async () => {
      started.push('b');
      return { status: 200 };
    });
    await settle();
    expect(started).toEqual(['a']);
    markFirst!();
    await second;
    expect(started).toEqual(['a', 'b']);
    await router.close();
    await first;
  });

  it('serves the higher priority band first, and tenants of a band in turn', async () => {
    const { router } = await routerFleet(1, { admission: { maxInFlight: 1 } });
    const held = heldSends();
    const all = [router.execute({ model: 'm' }, held.send('first'))];
    await settle();
    const queued: [string, number, string][] = [
      ['low-x1', 0, 'x'],
      ['low-x2', 0, 'x'],
      ['low-x3', 0, 'x'],
      ['low-y1', 0, 'y'],
      ['high', 5, 'x'],
    ];
    for (const [tag, priority, tenant] of queued)
      all.push(router.execute({ model: 'm', priority, tenant, size: 10 }, held.send(tag)));
    await settle();
    for (let i = 0; i < queued.length; i++) {
      held.calls[i]!.done({ status: 200 });
      await settle();
    }
    held.calls.at(-1)!.done({ status: 200 });
    await Promise.all(all);
    expect(held.calls.map((c) => c.tag)).toEqual([
      'first',
      'high',
      'low-x1',
      'low-y1',
      'low-x2',
      'low-x3',
    ]);
    await router.close();
  });

  it('sheds a request below the priority threshold at once while saturated, with a retry time', async () => {
    const { router } = await routerFleet(1, { admission: { maxInFlight: 1, retryAfterMs: 2500 } });
    const events: AdmissionEvent[] = [];
    router.on('admission', (e) => events.push(e));
    const held = heldSends();
    const first = router.execute({ model: 'm', priority: -1 }, held.send('a'));
    await settle();
    const error = await router
      .execute({ model: 'm', priority: -1 }, held.send('b'))
      .catch((e) => e);
    expect(FleetRouteError.is(error, 'SATURATED')).toBe(true);
    expect(error).toMatchObject({ reason: 'shed', retryAfterMs: 2500 });
    expect(events.map((e) => [e.outcome, e.reason])).toEqual([
      ['admitted', undefined],
      ['rejected', 'shed'],
    ]);
    held.calls[0]!.done({ status: 200 });
    await first;
    await router.close();
  });

  it('turns away the lowest band’s newest when the queue is full', async () => {
    const { router } = await routerFleet(1, { admission: { maxInFlight: 1, maxQueued: 2 } });
    const held = heldSends();
    const first = router.execute({ model: 'm' }, held.send('first'));
    await settle();
    const outcome = (p: Promise<unknown>) =>
      p.then(
        () => 'served',
        (e: FleetRouteError) => e.reason,
      );
    const a = outcome(router.execute({ model: 'm', priority: 1 }, held.send('a')));
    const b = outcome(router.execute({ model: 'm', priority: 0 }, held.send('b')));
    const c = outcome(router.execute({ model: 'm', priority: 0 }, held.send('c')));
    const d = outcome(router.execute({ model: 'm', priority: 2 }, held.send('d')));
    await settle();
    // c was refused on arrival (its band is the lowest, it is its newest); d pushed b out.
    held.calls[0]!.done({ status: 200 });
    await settle();
    held.calls[1]!.done({ status: 200 });
    await settle();
    held.calls[2]!.done({ status: 200 });
    await first;
    expect(await Promise.all([a, b, c, d])).toEqual([
      'served',
      'queue_full',
      'queue_full',
      'served',
    ]);
    expect(held.calls.map((x) => x.tag)).toEqual(['first', 'd', 'a']);
    expect(router.stats().admission?.rejected.queue_full).toBe(2);
    await router.close();
  });

  it('turns a request away when its wait runs out', async () => {
    vi.useFakeTimers();
    const { router } = await routerFleet(1, {
      admission: { maxInFlight: 1, maxWaitMs: 1_000, clock: () => Date.now() },
    });
    const held = heldSends();
    const first = router.execute({ model: 'm' }, held.send('a'));
    const second = router.execute({ model: 'm' }, held.send('b')).catch((e) => e);
    await vi.advanceTimersByTimeAsync(999);
    expect(router.stats().admission?.queued).toBe(1);
    await vi.advanceTimersByTimeAsync(2);
    expect(await second).toMatchObject({ code: 'SATURATED', reason: 'timeout' });
    expect(router.stats().admission?.queued).toBe(0);
    held.calls[0]!.done({ status: 200 });
    await first;
    expect(held.calls).toHaveLength(1);
    await router.close();
  });

  it('an abort takes the call out of the queue at once, and it never starts', async () => {
    const { router, workers } = await routerFleet(1, { admission: { maxInFlight: 1 } });
    const held = heldSends();
    const first = router.execute({ model: 'm' }, held.send('a'));
    const controller = new AbortController();
    const second = router
      .execute({ model: 'm' }, held.send('b'), { signal: controller.signal })
      .catch((e) => e);
    await settle();
    controller.abort(new Error('client left'));
    expect((await second).message).toBe('client left');
    expect(router.stats().admission).toMatchObject({ queued: 0, aborted: 1 });
    held.calls[0]!.done({ status: 200 });
    await first;
    await settle();
    expect(held.calls).toHaveLength(1);
    expect(workers[0]!.load).toBe(0);
    await router.close();
  });

  it('close() rejects every queued call with CLOSED', async () => {
    const { router } = await routerFleet(1, { admission: { maxInFlight: 1 } });
    const held = heldSends();
    const first = router.execute({ model: 'm' }, held.send('a')).catch((e) => e);
    const queued = [1, 2, 3].map(() =>
      router.execute({ model: 'm' }, held.send('q')).catch((e) => e),
    );
    await settle();
    await router.close();
    for (const error of await Promise.all(queued)) expect(error).toMatchObject({ code: 'CLOSED' });
    expect(router.stats().admission).toMatchObject({ queued: 0, closed: 3 });
    expect(await first).toMatchObject({ code: 'CLOSED' });
  });

  it('select throws SATURATED instead of jumping the queue; admit waits its turn', async () => {
    const { router } = await routerFleet(1, { admission: { maxInFlight: 1 } });
    const lease = router.select({ model: 'm' })!;
    expect(() => router.select({ model: 'm' })).toThrow(
      expect.objectContaining({ code: 'SATURATED', reason: 'busy' }),
    );
    const waiting = router.admit({ model: 'm' });
    await settle();
    lease.release();
    const next = await waiting;
    expect(next?.worker).toBe(lease.worker);
    next!.release();
    await router.close();
  });

  it('a pool with no available worker is not held: the call meets NO_WORKER', async () => {
    const { router, registry } = await routerFleet(1, { admission: { maxInFlight: 1 } });
    await registry.transitionStatus(registry.getByModel('m')[0]!.id, 'not_ready');
    await expect(
      router.execute({ model: 'm' }, async () => ({ status: 200 })),
    ).rejects.toMatchObject({
      code: 'NO_WORKER',
    });
    await router.close();
  });

  it('refuses a priority, tenant or size out of bounds before queueing anything', async () => {
    const { router } = await routerFleet(1, { admission: true });
    const send = async () => ({ status: 200 });
    for (const bad of [
      { priority: 1.5 },
      { priority: 2_000_000 },
      { tenant: 'x'.repeat(300) },
      { size: -1 },
    ])
      await expect(router.execute({ model: 'm', ...bad }, send)).rejects.toMatchObject({
        code: 'INVALID_ARGUMENT',
      });
    expect(
      () =>
        new Router({
          registry: router.registry,
          transport: { probe: async () => true },
          admission: { maxQueue: 1 } as never,
        }),
    ).toThrow(/admission\.maxQueue is not an option of admission/);
    await router.close();
  });
});

describe('Router admission with load reports', () => {
  async function polledFleet(reports: Map<string, LoadReport>, staleAfterMs = 60_000) {
    const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
    await registry.register({ url: 'http://w0:8000', models: ['m'] });
    let now = 0;
    const router = new Router({
      registry,
      transport: {
        probe: async () => true,
        loads: async (worker: Worker) => reports.get(worker.url),
      },
      health: false,
      loadPolling: { intervalMs: 1_000_000, staleAfterMs },
      admission: { clock: () => now },
    });
    router.start();
    await router.pollLoads();
    return { router, advance: (ms: number) => (now += ms) };
  }

  it('holds calls while the engine reports a full queue, and a report with room starts them', async () => {
    const reports = new Map([['http://w0:8000', { waitingRequests: 9 } as LoadReport]]);
    const { router } = await polledFleet(reports);
    let served = 0;
    const call = router.execute({ model: 'm' }, async () => {
      served++;
      return { status: 200 };
    });
    await settle();
    expect(served).toBe(0);
    reports.set('http://w0:8000', { waitingRequests: 0 });
    await router.pollLoads();
    await call;
    expect(served).toBe(1);
    await router.close();
  });

  it('holds calls while the engine reports its KV cache full', async () => {
    const reports = new Map([['http://w0:8000', { tokenUsage: 0.97 } as LoadReport]]);
    const { router } = await polledFleet(reports);
    expect(() => router.select({ model: 'm' })).toThrow(
      expect.objectContaining({ code: 'SATURATED' }),
    );
    reports.set('http://w0:8000', { tokenUsage: 0.5 });
    await router.pollLoads();
    router.select({ model: 'm' })!.release();
    await router.close();
  });

  it('counts a worker whose last report is stale as saturated', async () => {
    const reports = new Map([['http://w0:8000', { waitingRequests: 0 } as LoadReport]]);
    const { router, advance } = await polledFleet(reports, 5_000);
    router.select({ model: 'm' })!.release();
    advance(5_001);
    expect(() => router.select({ model: 'm' })).toThrow(
      expect.objectContaining({ code: 'SATURATED' }),
    );
    await router.pollLoads();
    router.select({ model: 'm' })!.release();
    await router.close();
  });
});

describe('Router admission: the pick', () => {
  it('never sends an admitted call to a full worker while another has room', async () => {
    const { router, workers } = await routerFleet(3, { admission: { maxInFlight: 1 } });
    const held = heldSends();
    const calls = [0, 1, 2].map(() => router.execute({ model: 'm' }, held.send('x')));
    await settle();
    expect(new Set(held.calls.map((c) => c.worker)).size).toBe(3);
    for (const c of held.calls) c.done({ status: 200 });
    await Promise.all(calls);
    expect(workers.map((w) => w.load)).toEqual([0, 0, 0]);
    await router.close();
  });

  it('a retry may go to a full worker when every worker with room has been tried', async () => {
    const { router, workers } = await routerFleet(2, { admission: { maxInFlight: 1 } });
    const busy = workers[1]!.acquire(); // full, outside the router
    const tried: string[] = [];
    const result = await router.execute({ model: 'm' }, async (worker, { attempt }) => {
      tried.push(worker.url);
      return { status: attempt === 1 ? 503 : 200 };
    });
    expect(result.status).toBe(200);
    expect(tried).toEqual([workers[0]!.url, workers[1]!.url]);
    busy.release();
    await router.close();
  });
});
