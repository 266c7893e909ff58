/**
 * The router's health loop under fake timers: the state machine, revisions, bootstrap, the
 * probe cap, hung and throwing transports, and shutdown.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Router, type Transport, type Worker, WorkerRegistry } from '../../src/index.js';

/** A transport whose answers the test decides per URL; records every probe. */
function scripted(initial: Record<string, boolean | 'hang' | 'throw' | 'reject'> = {}) {
  const answers = new Map<string, boolean | 'hang' | 'throw' | 'reject'>(Object.entries(initial));
  const probes: string[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const transport: Transport = {
    probe(worker: Worker, signal: AbortSignal) {
      probes.push(worker.url);
      const answer = answers.get(worker.url) ?? true;
      if (answer === 'throw') throw new Error('sync failure');
      if (answer === 'reject') return Promise.reject(new Error('async failure'));
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      if (answer === 'hang') {
        // Never settles, even when aborted: the loop must abandon it.
        signal.addEventListener('abort', () => inFlight--, { once: true });
        return new Promise<boolean>(() => {});
      }
      inFlight--;
      return Promise.resolve(answer);
    },
  };
  return {
    transport,
    probes,
    set: (url: string, answer: boolean | 'hang' | 'throw' | 'reject') => answers.set(url, answer),
    get maxInFlight() {
      return maxInFlight;
    },
  };
}

// startupIntervalMs = intervalMs: these tests follow the state machine at one cadence.
const health = {
  intervalMs: 1_000,
  startupIntervalMs: 1_000,
  timeoutMs: 100,
  successThreshold: 2,
  failureThreshold: 3,
};

async function setup(
  urls: string[],
  answers: Record<string, boolean | 'hang' | 'throw' | 'reject'> = {},
  extra: object = {},
) {
  const registry = await WorkerRegistry.create();
  const workers: Worker[] = [];
  for (const url of urls) workers.push(await registry.register({ url }));
  const t = scripted(answers);
  const router = new Router({
    registry,
    transport: t.transport,
    health,
    loadPolling: false,
    ...extra,
  });
  return { registry, workers, router, t };
}

const tick = (ms: number) => vi.advanceTimersByTimeAsync(ms);

describe('health loop', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('pending → ready after successThreshold successes, probing new workers at once', async () => {
    const { registry, workers, router } = await setup(['http://a:1']);
    router.start();
    await tick(0);
    expect(registry.get(workers[0]!.id)!.status).toBe('pending'); // one success so far
    await tick(1_000);
    expect(registry.get(workers[0]!.id)!.status).toBe('ready');
    await router.close();
  });

  it('ready → not_ready after failureThreshold consecutive failures, → ready after successThreshold successes', async () => {
    const { registry, workers, router, t } = await setup(['http://a:1']);
    router.start();
    await tick(1_000);
    expect(workers[0]!.status).toBe('ready');
    t.set('http://a:1', false);
    await tick(2_000);
    expect(registry.get(workers[0]!.id)!.status).toBe('ready'); // 2 failures
    await tick(1_000);
    expect(registry.get(workers[0]!.id)!.status).toBe('not_ready'); // 3
    t.set('http://a:1', true);
    await tick(1_000);
    expect(registry.get(workers[0]!.id)!.status).toBe('not_ready');
    await tick(1_000);
    expect(registry.get(workers[0]!.id)!.status).toBe('ready');
    await router.close();
  });

  it('not_ready → failed after 3 × failureThreshold failures; failed is terminal (no more probes)', async () => {
    const { workers, router, t } = await setup(['http://a:1']);
    router.start();
    await tick(1_000);
    t.set('http://a:1', false);
    await tick(8 * 1_000);
    expect(workers[0]!.status).toBe('not_ready'); // 8 failures
    await tick(1_000);
    expect(workers[0]!.status).toBe('failed'); // 9 = 3 × 3
    const probes = t.probes.length;
    await tick(10_000);
    expect(t.probes.length).toBe(probes);
    await router.close();
  });

  it('pending → failed after 10 × failureThreshold failed probes', async () => {
    const { workers, router } = await setup(['http://a:1'], { 'http://a:1': false });
    router.start();
    await tick(28 * 1_000);
    expect(workers[0]!.status).toBe('pending'); // 29 probes
    await tick(1_000);
    expect(workers[0]!.status).toBe('failed'); // 30
    await router.close();
  });

  it('removeFailed removes a failed worker from the registry', async () => {
    const { registry, router } = await setup(
      ['http://a:1'],
      { 'http://a:1': false },
      { health: { ...health, removeFailed: true } },
    );
    router.start();
    await tick(30 * 1_000);
    expect(registry.size).toBe(0);
    await router.close();
  });

  it('a flapping worker does not thrash: alternating answers never cross a threshold', async () => {
    const { registry, workers, router, t } = await setup(['http://a:1']);
    const transitions: string[] = [];
    router.start();
    await tick(1_000);
    registry.on('statusChanged', (e) => transitions.push(`${e.from}→${e.to}`));
    for (let i = 0; i < 20; i++) {
      t.set('http://a:1', i % 2 !== 0);
      await tick(1_000);
    }
    expect(workers[0]!.status).toBe('ready');
    expect(transitions).toEqual([]);
    await router.close();
  });

  it('draining set from outside stops probing', async () => {
    const { registry, workers, router, t } = await setup(['http://a:1']);
    router.start();
    await tick(1_000);
    await registry.transitionStatus(workers[0]!.id, 'draining');
    const probes = t.probes.length;
    await tick(5_000);
    expect(t.probes.length).toBe(probes);
    expect(workers[0]!.status).toBe('draining');
    await router.close();
  });

  it('bootstraps from the registry: workers registered before start() are probed', async () => {
    const { registry, router, t } = await setup(['http://a:1', 'http://b:1']);
    router.start();
    await tick(0);
    expect(new Set(t.probes)).toEqual(new Set(['http://a:1', 'http://b:1']));
    await registry.register({ url: 'http://c:1' });
    await tick(0);
    expect(t.probes).toContain('http://c:1');
    await router.close();
  });

  it('an answer about a replaced worker is discarded, and the new revision is probed at once', async () => {
    const { registry, workers, router, t } = await setup(['http://a:1'], { 'http://a:1': 'hang' });
    router.start();
    await tick(0); // the probe of revision 0 hangs
    t.set('http://a:1', true);
    const next = await registry.replace(workers[0]!.id, { url: 'http://a:1', models: ['m'] });
    await tick(0);
    expect(t.probes.filter((u) => u === 'http://a:1').length).toBe(2); // probed again at once
    await tick(1_000);
    expect(next.status).toBe('ready');
    await router.close();
  });

  it('at most maxConcurrentProbes probes are in flight; hung workers do not delay the others', async () => {
    const urls = ['http://h1:1', 'http://h2:1', 'http://h3:1', 'http://ok:1'];
    const { registry, router, t } = await setup(
      urls,
      { 'http://h1:1': 'hang', 'http://h2:1': 'hang', 'http://h3:1': 'hang' },
      { maxConcurrentProbes: 2 },
    );
    router.start();
    await tick(3_000);
    expect(t.maxInFlight).toBeLessThanOrEqual(2);
    expect(registry.getByUrl('http://ok:1')!.status).toBe('ready');
    await router.close();
  });

  it('a transport that throws synchronously, rejects or never settles: the loop keeps its cadence and close() resolves', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    const { router, t } = await setup(['http://t:1', 'http://r:1', 'http://h:1'], {
      'http://t:1': 'throw',
      'http://r:1': 'reject',
      'http://h:1': 'hang',
    });
    router.start();
    await tick(5_000);
    const count = (url: string) => t.probes.filter((u) => u === url).length;
    // Failing at once: probed at 0 s and every second after. Hung: each probe is abandoned at
    // its 100 ms timeout, and the next comes an interval after that (0, 1.1, 2.2, 3.3, 4.4 s).
    expect([count('http://t:1'), count('http://r:1'), count('http://h:1')]).toEqual([6, 6, 5]);
    await router.close();
    await tick(10_000);
    expect(t.probes.length).toBe(17); // nothing after close
    expect(vi.getTimerCount()).toBe(0);
    process.off('unhandledRejection', onUnhandled);
    expect(unhandled).toEqual([]);
  });

  it('health: false leaves statuses to the caller', async () => {
    const registry = await WorkerRegistry.create();
    await registry.register({ url: 'http://a:1' });
    const t = scripted();
    const router = new Router({
      registry,
      transport: t.transport,
      health: false,
      loadPolling: false,
    });
    router.start();
    await tick(5_000);
    expect(t.probes).toEqual([]);
    await router.close();
  });
});
