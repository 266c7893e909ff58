/**
 * A worker the health loop sees come back gets trial requests at once: when the loop moves it
 * from `not_ready` back to `ready`, or a probe succeeds after one failed while its breaker was
 * open, an open breaker turns half-open without waiting out `openMs` (`CircuitBreaker.halfOpen`),
 * and its trial rules then apply. Fake timers; the breakers read the faked `Date.now`.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  type CircuitChangedEvent,
  type CircuitState,
  Router,
  type Transport,
  type Worker,
  WorkerRegistry,
} from '../../src/index.js';
import { createCircuitBreaker } from '../../src/resilience/circuit-breaker.js';
import { resolveCircuitBreakerConfig } from '../../src/resilience/circuit-breaker-config.js';

const TEN_MINUTES = 600_000;
const health = {
  intervalMs: 1_000,
  startupIntervalMs: 1_000,
  timeoutMs: 100,
  successThreshold: 2,
  failureThreshold: 3,
};
const tick = (ms: number) => vi.advanceTimersByTimeAsync(ms);

/** A ready worker probed every second, its breaker open for 10 minutes once opened. */
async function setup() {
  const registry = await WorkerRegistry.create({ clock: () => Date.now() });
  let up = true;
  const transport: Transport = { probe: async () => up };
  const router = new Router({
    registry,
    transport,
    health,
    loadPolling: false,
    circuitBreaker: { openMs: TEN_MINUTES, failureThreshold: 5, successThreshold: 2 },
  });
  const worker = await registry.register({ url: 'http://a:1' });
  const changes: string[] = [];
  router.on('circuitChanged', (e: CircuitChangedEvent) => changes.push(`${e.from}→${e.to}`));
  router.start();
  await tick(1_000); // probes at 0 and 1 s: pending → ready
  expect(worker.status).toBe('ready');
  return {
    registry,
    router,
    worker,
    changes,
    setUp: (value: boolean) => {
      up = value;
    },
  };
}

/** One request on `worker`, ended with `ok`. */
function request(worker: Worker, ok: boolean): void {
  worker.acquire().release(ok ? { ok: true, status: 200 } : { ok: false, status: 503 });
}

describe('health recovery half-opens an open breaker at once', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('an engine that dies and restarts: its open breaker turns half-open by the time it is ready, and two successful trials close it', async () => {
    // Arrange: the engine dies; requests open the breaker, probes mark it not_ready.
    const { router, worker, changes, setUp } = await setup();
    setUp(false);
    for (let i = 0; i < 5; i++) request(worker, false);
    expect(worker.circuitBreaker.state).toBe('open');
    await tick(3_000);
    expect(worker.status).toBe('not_ready');

    // Act: it restarts; two successful probes make it ready.
    setUp(true);
    await tick(2_000);

    // Assert: ready, half-open long before openMs, and the trial rules apply.
    expect(worker.status).toBe('ready');
    expect(worker.circuitBreaker.state).toBe('half_open');
    expect(worker.isAvailable()).toBe(true);
    expect(changes).toEqual(['closed→open', 'open→half_open']);
    const trial = worker.acquire();
    expect(worker.isAvailable()).toBe(false); // halfOpenMaxRequests: 1
    trial.release({ ok: true, status: 200 });
    request(worker, true);
    expect(worker.circuitBreaker.state).toBe('closed');
    expect(changes).toEqual(['closed→open', 'open→half_open', 'half_open→closed']);
    await router.close();
  });

  it('not_ready → ready half-opens a breaker that opened after every failed probe', async () => {
    // Arrange: probes fail while the breaker is closed (not_ready), then requests open it.
    const { router, worker, changes, setUp } = await setup();
    setUp(false);
    await tick(3_000);
    expect(worker.status).toBe('not_ready');
    for (let i = 0; i < 5; i++) request(worker, false);
    expect(worker.circuitBreaker.state).toBe('open');

    // Act
    setUp(true);
    await tick(1_000); // one success: not ready yet, the breaker still open
    const beforeReady = worker.circuitBreaker.state;
    await tick(1_000);

    // Assert
    expect(beforeReady).toBe('open');
    expect(worker.status).toBe('ready');
    expect(worker.circuitBreaker.state).toBe('half_open');
    expect(changes).toEqual(['closed→open', 'open→half_open']);
    await router.close();
  });

  it('a probe that succeeds after one failed while the breaker was open half-opens it, though the worker stayed ready', async () => {
    const { router, worker, changes, setUp } = await setup();
    for (let i = 0; i < 5; i++) request(worker, false);
    setUp(false);
    await tick(1_000); // one failed probe, the breaker open: still ready (failureThreshold 3)
    expect(worker.status).toBe('ready');
    expect(worker.circuitBreaker.state).toBe('open');

    setUp(true);
    await tick(1_000);

    expect(worker.circuitBreaker.state).toBe('half_open');
    expect(changes).toEqual(['closed→open', 'open→half_open']);
    await router.close();
  });

  it('a failed trial reopens it for a full openMs, until the next recovery the probes see', async () => {
    const { router, worker, setUp } = await setup();
    for (let i = 0; i < 5; i++) request(worker, false);
    setUp(false);
    await tick(1_000);
    setUp(true);
    await tick(1_000);
    expect(worker.circuitBreaker.state).toBe('half_open');

    request(worker, false); // the trial fails
    await tick(5_000); // probes keep succeeding: none failed while it was open

    expect(worker.circuitBreaker.state).toBe('open');
    setUp(false);
    await tick(1_000);
    setUp(true);
    await tick(1_000);
    expect(worker.circuitBreaker.state).toBe('half_open');
    await router.close();
  });

  it('probes that failed while the breaker was still closed do not half-open it once it opened', async () => {
    const { router, worker, setUp } = await setup();
    setUp(false);
    await tick(1_000); // a failed probe, the breaker closed
    for (let i = 0; i < 5; i++) request(worker, false);
    setUp(true);
    await tick(3_000);

    expect(worker.status).toBe('ready');
    expect(worker.circuitBreaker.state).toBe('open');
    await router.close();
  });

  it('not_ready → ready with a closed breaker changes nothing in it', async () => {
    const { router, worker, changes, setUp } = await setup();
    setUp(false);
    await tick(3_000);
    expect(worker.status).toBe('not_ready');
    setUp(true);
    await tick(2_000);

    expect(worker.status).toBe('ready');
    expect(worker.circuitBreaker.state).toBe('closed');
    expect(changes).toEqual([]);
    await router.close();
  });
});

describe('CircuitBreaker.halfOpen', () => {
  let now = 0;
  const breaker = (config = {}) => {
    now = 0;
    const b = createCircuitBreaker(resolveCircuitBreakerConfig(config), () => now);
    const changes: [CircuitState, CircuitState][] = [];
    b.addObserver((from, to) => changes.push([from, to]));
    return { b, changes };
  };

  it('turns an open breaker half-open now, with a fresh trial period', () => {
    const { b, changes } = breaker({ failureThreshold: 1, openMs: TEN_MINUTES });
    b.recordFailure();
    now = 5;

    b.halfOpen();

    expect(b.state).toBe('half_open');
    expect(b.canExecute()).toBe(true);
    expect(changes).toEqual([
      ['closed', 'open'],
      ['open', 'half_open'],
    ]);
    b.recordFailure(); // a failure reopens it, from now
    expect(b.state).toBe('open');
    now = 5 + TEN_MINUTES - 1;
    expect(b.state).toBe('open');
  });

  it('does nothing to a closed or half-open breaker (trials in flight are kept)', () => {
    const { b, changes } = breaker({ failureThreshold: 1, openMs: 10, halfOpenMaxRequests: 1 });
    b.halfOpen();
    expect(b.state).toBe('closed');
    b.recordFailure();
    now = 10;
    expect(b.onAcquire()).toBeGreaterThanOrEqual(0); // a trial in flight
    b.halfOpen();
    expect(b.snapshot().trialsInFlight).toBe(1);
    expect(b.canExecute()).toBe(false);
    expect(changes).toEqual([
      ['closed', 'open'],
      ['open', 'half_open'],
    ]);
  });

  it('a disabled breaker ignores it', () => {
    const { b, changes } = breaker({ disabled: true });
    b.forceOpen();
    b.halfOpen();
    expect(b.state).toBe('closed');
    expect(changes).toEqual([]);
  });
});
