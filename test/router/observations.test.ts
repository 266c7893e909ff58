/**
 * The Router's observation events: a decision per pick (with `cache_aware`'s branch and matched
 * share), each attempt's outcome, each retry, no-worker, probes, status changes and load rounds
 * — built only when someone listens, and a listener that throws never breaks routing.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  type AttemptEvent,
  createPolicy,
  type DecisionEvent,
  type LoadsPolledEvent,
  type Policy,
  type RetryScheduledEvent,
  Router,
  type RouterObservation,
  type Transport,
  type Worker,
  WorkerRegistry,
} from '../../src/index.js';
import { routerFleet } from '../support/router-fleet.js';

const open: { close(): unknown }[] = [];
afterEach(async () => {
  for (const o of open.splice(0).reverse()) await o.close();
  vi.useRealTimers();
});

function record(router: Router, ...types: RouterObservation['type'][]): RouterObservation[] {
  const seen: RouterObservation[] = [];
  for (const type of types) router.on(type, (e: RouterObservation) => void seen.push(e));
  return seen;
}

describe('Router observations', () => {
  it('a decision per select: the policy, the worker, cache_aware’s branch and matched share', async () => {
    const { router, registry } = await routerFleet(3, { policy: 'cache_aware' });
    open.push(router, registry);
    const seen = record(router, 'decision');
    const text = 'You are a helpful assistant. '.repeat(20);
    const first = router.select({ model: 'm', text });
    first?.release();
    const again = router.select({ model: 'm', text: `${text}And one more question.` });
    again?.release();

    expect(seen).toHaveLength(2);
    expect(seen[0]).toMatchObject({
      type: 'decision',
      model: 'm',
      policy: 'cache_aware',
      worker: first!.worker,
      branch: 'cache_miss',
      attempt: 1,
    });
    expect(seen[1]).toMatchObject({ branch: 'cache_hit', worker: first!.worker });
    const matched = (seen[1] as { matched: number }).matched;
    expect(matched).toBeGreaterThan(0.9);
    expect(matched).toBeLessThan(1);
    for (const e of seen)
      expect((e as { durationMs: number }).durationMs).toBeGreaterThanOrEqual(0);
  });

  it('nobody listening: no event is built, and the policy is never asked to explain', async () => {
    const inner = createPolicy('round_robin');
    const explain = vi.fn(() => ({ branch: 'x', matched: undefined }));
    const policy: Policy = { name: 'round_robin', select: (w) => inner.select(w), explain };
    const { router, registry } = await routerFleet(2, { policy });
    open.push(router, registry);
    router.select({ model: 'm' })?.release();
    expect(explain).not.toHaveBeenCalled();

    const listener = vi.fn();
    router.on('decision', listener);
    router.select({ model: 'm' })?.release();
    expect(explain).toHaveBeenCalledTimes(1);
    expect(listener.mock.calls[0]![0]).toMatchObject({ branch: 'x', policy: 'round_robin' });

    router.off('decision', listener);
    router.select({ model: 'm' })?.release();
    expect(explain).toHaveBeenCalledTimes(1);
    expect(listener).toHaveBeenCalledTimes(1);
  });

  it('execute: a decision and an attempt per try, a retry between them, in order', async () => {
    const { router, registry } = await routerFleet(2, {
      retry: { maxAttempts: 3, initialBackoffMs: 1, maxBackoffMs: 1 },
    });
    open.push(router, registry);
    const seen = record(router, 'decision', 'attempt', 'retry', 'executed');
    let calls = 0;
    const result = await router.execute({ model: 'm' }, async () =>
      ++calls === 1 ? { status: 503 } : { status: 200 },
    );
    expect(result).toEqual({ status: 200 });

    expect(seen.map((e) => e.type)).toEqual([
      'decision',
      'attempt',
      'retry',
      'decision',
      'attempt',
      'executed',
    ]);
    expect(seen[5]).toMatchObject({ outcome: 'success', attempts: 2, status: 200, model: 'm' });
    const [d1, a1, r1, d2, a2] = seen as [
      DecisionEvent,
      AttemptEvent,
      RetryScheduledEvent,
      DecisionEvent,
      AttemptEvent,
    ];
    expect(a1).toMatchObject({
      outcome: 'status',
      status: 503,
      attempt: 1,
      worker: d1.worker,
      model: 'm',
    });
    expect(r1).toMatchObject({ cause: 'status', status: 503, attempt: 1, worker: d1.worker });
    expect(r1.delayMs).toBeGreaterThanOrEqual(0);
    expect(d2).toMatchObject({ attempt: 2 });
    expect(d2.worker).not.toBe(d1.worker);
    expect(a2).toMatchObject({ outcome: 'success', status: 200, attempt: 2, worker: d2.worker });
  });

  it('execute: a thrown error is an error attempt; the caller’s abort an aborted one', async () => {
    const { router, registry } = await routerFleet(1, { retry: { maxAttempts: 1 } });
    open.push(router, registry);
    const seen = record(router, 'attempt');
    const ends = record(router, 'executed');
    const boom = new Error('socket hang up');
    await expect(router.execute({ model: 'm' }, async () => Promise.reject(boom))).rejects.toBe(
      boom,
    );
    const controller = new AbortController();
    const pending = router.execute({ model: 'm' }, () => new Promise(() => {}), {
      signal: controller.signal,
    });
    controller.abort(new Error('client went away'));
    await expect(pending).rejects.toThrow('client went away');
    expect(seen).toMatchObject([
      { type: 'attempt', outcome: 'error', error: boom },
      { type: 'attempt', outcome: 'aborted', error: undefined },
    ]);
    expect(ends).toMatchObject([
      { type: 'executed', outcome: 'error', attempts: 1 },
      { type: 'executed', outcome: 'aborted', attempts: 1 },
    ]);
  });

  it('no worker: select, selectPair and execute each report it with the model', async () => {
    const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
    const router = new Router({
      registry,
      transport: { probe: async () => true },
      health: false,
      loadPolling: false,
    });
    open.push(router, registry);
    router.start();
    const seen = record(router, 'noWorker');
    const ends = record(router, 'executed');
    expect(router.select({ model: 'gone' })).toBeUndefined();
    expect(router.selectPair({ model: 'pd' })).toBeUndefined();
    await expect(
      router.execute({ model: 'x' }, async () => ({ status: 200 })),
    ).rejects.toMatchObject({
      code: 'NO_WORKER',
    });
    expect(seen).toEqual([
      { type: 'noWorker', model: 'gone', reason: 'unknown_model' },
      { type: 'noWorker', model: 'pd', reason: 'unknown_model' },
      { type: 'noWorker', model: 'x', reason: 'unknown_model' },
    ]);
    expect(ends).toMatchObject([
      { type: 'executed', outcome: 'no_worker', model: 'x', attempts: 0 },
    ]);
  });

  it('no worker: the reason is unavailable when workers serve the model but none is available', async () => {
    const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
    const router = new Router({
      registry,
      transport: { probe: async () => true },
      health: false,
      loadPolling: false,
    });
    open.push(router, registry);
    router.start();
    const m = await registry.register({ url: 'http://m:8000', models: ['m'] });
    const wildcard = await registry.register({ url: 'http://any:8000' });
    const prefill = await registry.register({ url: 'http://p:8000', type: 'prefill' });
    const decode = await registry.register({ url: 'http://d:8000', type: 'decode' });
    for (const w of [m, wildcard, prefill, decode])
      await registry.transitionStatus(w.id, 'not_ready');
    const seen = record(router, 'noWorker');

    expect(router.select({ model: 'm' })).toBeUndefined();
    expect(router.select({ model: 'served-by-the-wildcard' })).toBeUndefined();
    expect(router.selectPair({})).toBeUndefined();
    const error = await router
      .execute({ model: 'm' }, async () => ({ status: 200 }))
      .catch((e: unknown) => e);

    expect(error).toMatchObject({ code: 'NO_WORKER', reason: 'unavailable' });
    expect(seen.map((e) => (e.type === 'noWorker' ? e.reason : e.type))).toEqual([
      'unavailable',
      'unavailable',
      'unavailable',
      'unavailable',
    ]);
  });

  it('probes and the status changes they cause, and each load round', async () => {
    vi.useFakeTimers();
    const registry = await WorkerRegistry.create();
    open.push(registry);
    const transport: Transport = {
      probe: async (w: Worker) => w.url.includes('good'),
      loads: async (w: Worker) => (w.url.includes('good') ? { runningRequests: 1 } : undefined),
    };
    const router = new Router({
      registry,
      transport,
      health: { intervalMs: 1_000, startupIntervalMs: 100, successThreshold: 1 },
      loadPolling: { intervalMs: 60_000 },
    });
    open.push(router);
    const seen = record(router, 'probe', 'statusChanged', 'loadsPolled');
    await registry.register({ url: 'http://good:1' });
    await registry.register({ url: 'http://bad:1' });
    router.start();
    await vi.advanceTimersByTimeAsync(50);
    const probes = seen.filter((e) => e.type === 'probe');
    expect(probes).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ url: 'http://good:1', ok: true, timedOut: false }),
        expect.objectContaining({ url: 'http://bad:1', ok: false }),
      ]),
    );
    expect(seen).toContainEqual(
      expect.objectContaining({
        type: 'statusChanged',
        url: 'http://good:1',
        from: 'pending',
        to: 'ready',
      }),
    );
    await router.pollLoads();
    expect(seen).toContainEqual(
      expect.objectContaining({ type: 'loadsPolled', reports: 1, failed: 0 }),
    );
  });

  it('load rounds report freshness: ready workers whose last report is older than staleAfterMs', async () => {
    vi.useFakeTimers({
      toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date', 'performance'],
    });
    const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
    open.push(registry);
    await registry.register({ url: 'http://talks:1' });
    await registry.register({ url: 'http://silent:1' });
    const router = new Router({
      registry,
      transport: {
        probe: async () => true,
        loads: async (w: Worker) => (w.url.includes('talks') ? { runningRequests: 1 } : undefined),
      },
      health: false,
      loadPolling: { intervalMs: 1_000 },
    });
    open.push(router);
    const rounds = record(router, 'loadsPolled') as LoadsPolledEvent[];
    router.start();
    await vi.advanceTimersByTimeAsync(4_500);
    expect(rounds.length).toBeGreaterThanOrEqual(5);
    for (const r of rounds) expect(r).toMatchObject({ reports: 1, failed: 1 });
    // staleAfterMs is 3 × intervalMs: the silent worker turns stale after its fourth round.
    expect(rounds.map((r) => r.stale)).toEqual([0, 0, 0, 0, 1, ...rounds.slice(5).map(() => 1)]);
    expect(rounds[4]!.oldestReportAgeMs).toBeGreaterThan(3_000);
    expect(rounds[0]!.oldestReportAgeMs).toBeLessThan(1_000);
  });

  it('a listener that throws is reported once, and routing goes on', async () => {
    const { router, registry } = await routerFleet(2);
    open.push(router, registry);
    const warnings: string[] = [];
    const onWarning = (w: Error) => void warnings.push(w.message);
    process.on('warning', onWarning);
    try {
      router.on('decision', () => {
        throw new Error('dashboard down');
      });
      const later = vi.fn();
      router.on('decision', later);
      for (let i = 0; i < 3; i++) {
        const lease = router.select({ model: 'm' });
        expect(lease).toBeDefined();
        lease!.release();
      }
      expect(later).toHaveBeenCalledTimes(3); // the next listener still runs
      await new Promise((r) => setImmediate(r));
      expect(warnings.filter((m) => m.includes('dashboard down'))).toHaveLength(1);
    } finally {
      process.off('warning', onWarning);
    }
  });

  it('with a logger, warnings go to it instead of the process: a throwing listener, a throwing retry hook', async () => {
    const lines: [Record<string, unknown>, string][] = [];
    const logger = {
      warn: (fields: Record<string, unknown>, message: string) =>
        void lines.push([fields, message]),
    };
    const { router, registry } = await routerFleet(2, {
      logger,
      retry: {
        maxAttempts: 2,
        shouldRetry: () => {
          throw new Error('bad hook');
        },
      },
    });
    open.push(router, registry);
    const processWarnings: string[] = [];
    const onWarning = (w: Error) => void processWarnings.push(w.message);
    process.on('warning', onWarning);
    try {
      router.on('noWorker', () => {
        throw new Error('listener down');
      });
      await router.execute({ model: 'm' }, async () => ({ status: 503 }));
      router.select({ model: 'none' });
      await new Promise((r) => setImmediate(r));
    } finally {
      process.off('warning', onWarning);
    }
    expect(lines.map(([fields]) => fields.code)).toEqual([
      'FLEETROUTE_RETRY_HOOK',
      'FLEETROUTE_LISTENER_THREW',
    ]);
    expect(lines[0]![1]).toContain('bad hook');
    expect(lines[1]![1]).toContain('listener down');
    expect(
      processWarnings.filter((m) => m.includes('bad hook') || m.includes('listener down')),
    ).toEqual([]);
  });

  it('a logger that is not one is rejected, naming the field', async () => {
    const registry = await WorkerRegistry.create();
    open.push(registry);
    const transport = { probe: async () => true };
    expect(() => new Router({ registry, transport, logger: 'console' as never })).toThrow(/logger/);
    expect(() => new Router({ registry, transport, logger: { warn: 1 } as never })).toThrow(
      /logger\.warn/,
    );
  });
});
