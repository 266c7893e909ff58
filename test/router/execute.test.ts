/**
 * `Router.execute`: retries on other workers, backoff with jitter and Retry-After, abort,
 * outcomes fed to the breakers, and what it returns or throws in the end.
 */
import { getEventListeners } from 'node:events';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { backoffDelay, FleetRouteError, type Worker } from '../../src/index.js';
import { resolveRetryConfig } from '../../src/resilience/retry-config.js';
import { retryAfterMs } from '../../src/router/retry.js';
import { routerFleet } from '../support/router-fleet.js';

const fleet = routerFleet;

/**
 * What `promise` settled with, given only microtasks (fake time does not move): a call that would
 * wait a timer fails here at once instead of hanging.
 */
async function withoutWaiting<T>(promise: Promise<T>): Promise<T> {
  let settled = false;
  const tracked = promise.finally(() => {
    settled = true;
  });
  for (let i = 0; i < 1_000 && !settled; i++) await Promise.resolve();
  expect(settled, 'the call settled without waiting').toBe(true);
  return tracked;
}

describe('Router.execute', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('returns the first success without retrying, releasing the lease with the outcome', async () => {
    const { router, workers } = await fleet(3);
    const send = vi.fn(async (w: Worker) => ({ status: 200, url: w.url }));

    const result = await router.execute({ model: 'm' }, send);

    expect(result.status).toBe(200);
    expect(send).toHaveBeenCalledTimes(1);
    expect(workers.map((w) => w.load)).toEqual([0, 0, 0]);
    await router.close();
  });

  it('context.firstToken() moves the attempt out of the worker’s prefilling count while load stays until the attempt ends', async () => {
    const { router } = await fleet(3);
    const seen: { prefilling: number; load: number }[] = [];
    const result = await router.execute({ model: 'm' }, async (w, { attempt, firstToken }) => {
      seen.push({ prefilling: w.prefilling, load: w.load });
      firstToken();
      firstToken(); // a second call does nothing
      seen.push({ prefilling: w.prefilling, load: w.load });
      return { status: attempt === 1 ? 200 : 500, worker: w };
    });

    expect(seen).toEqual([
      { prefilling: 1, load: 1 },
      { prefilling: 0, load: 1 },
    ]);
    expect(result.worker.prefilling).toBe(0);
    expect(result.worker.load).toBe(0);
    await router.close();
  });

  it('an attempt that never calls firstToken() leaves prefilling when it ends, success or failure', async () => {
    const { router, workers } = await fleet(3);
    const promise = router.execute({ model: 'm' }, async (w, { attempt }) => {
      expect(w.prefilling).toBe(1);
      if (attempt < 3) throw new Error('network');
      return { status: 200 };
    });
    await vi.runAllTimersAsync();
    expect((await promise).status).toBe(200);
    expect(workers.map((w) => [w.prefilling, w.load])).toEqual([
      [0, 0],
      [0, 0],
      [0, 0],
    ]);
    await router.close();
  });

  it('retries a failure status on a different worker each time, then returns the success', async () => {
    const { router } = await fleet(3);
    const seen: string[] = [];
    const promise = router.execute({ model: 'm' }, async (w, { attempt }) => {
      seen.push(w.url);
      return { status: attempt < 3 ? 503 : 200 };
    });
    await vi.runAllTimersAsync();

    expect((await promise).status).toBe(200);
    expect(new Set(seen).size).toBe(3);
    await router.close();
  });

  it('a thrown error is a failed attempt; when every attempt throws, the last error is thrown', async () => {
    const { router } = await fleet(3);
    let n = 0;
    const promise = router.execute({ model: 'm' }, async () => {
      throw new Error(`boom ${++n}`);
    });
    const assertion = expect(promise).rejects.toThrow('boom 3');
    await vi.runAllTimersAsync();
    await assertion;
    await router.close();
  });

  it('in the end returns the last response that had a status, even if a later attempt threw', async () => {
    const { router } = await fleet(3);
    const promise = router.execute({ model: 'm' }, async (_w, { attempt }) => {
      if (attempt === 2) return { status: 502, attempt };
      if (attempt === 3) throw new Error('network');
      return { status: 503, attempt };
    });
    await vi.runAllTimersAsync();
    expect(await promise).toEqual({ status: 502, attempt: 2 });
    await router.close();
  });

  it('a status outside failureStatuses (404) is returned as is, not retried', async () => {
    const { router } = await fleet(3);
    const send = vi.fn(async () => ({ status: 404 }));
    expect((await router.execute({ model: 'm' }, send)).status).toBe(404);
    expect(send).toHaveBeenCalledTimes(1);
    await router.close();
  });

  it('throws NO_WORKER when no worker is available at all', async () => {
    const { router } = await fleet(0);
    await expect(
      router.execute({ model: 'm' }, async () => ({ status: 200 })),
    ).rejects.toMatchObject({ code: 'NO_WORKER' });
    await router.close();
  });

  it('stops early when every available worker has been tried, returning the last status', async () => {
    const { router } = await fleet(2, { retry: { maxAttempts: 5 } });
    const send = vi.fn(async () => ({ status: 500 }));
    const promise = router.execute({ model: 'm' }, send);
    await vi.runAllTimersAsync();
    expect((await promise).status).toBe(500);
    expect(send).toHaveBeenCalledTimes(2);
    await router.close();
  });

  it('waits initialBackoffMs × multiplier^(n−1) between attempts (jitter at its midpoint)', async () => {
    const { router } = await fleet(4, {
      retry: { maxAttempts: 4, initialBackoffMs: 100, multiplier: 2, maxBackoffMs: 10_000 },
    });
    const times: number[] = [];
    const start = Date.now();
    const promise = router.execute({ model: 'm' }, async () => {
      times.push(Date.now() - start);
      return { status: 503 };
    });
    await vi.runAllTimersAsync();
    await promise;
    expect(times).toEqual([0, 100, 300, 700]);
    await router.close();
  });

  it('a 429 with Retry-After: 1 from A: the call succeeds on B at once, and A takes no request until the clock passes 1 s', async () => {
    // Arrange: two workers; whichever is tried first (A) answers 429 with Retry-After: 1.
    const delays: number[] = [];
    const { router, workers } = await fleet(2, {
      retry: { maxAttempts: 3, initialBackoffMs: 1_000, onRetry: (e) => delays.push(e.delayMs) },
    });
    const retries: number[] = [];
    const circuits: unknown[] = [];
    router.on('retry', (e) => retries.push(e.delayMs));
    router.on('circuitChanged', (e) => circuits.push(e));
    const sent: Worker[] = [];
    const start = Date.now();

    // Act
    const result = await withoutWaiting(
      router.execute({ model: 'm' }, async (worker) => {
        sent.push(worker);
        return sent.length === 1
          ? { status: 429, headers: new Headers({ 'retry-after': '1' }) }
          : { status: 200 };
      }),
    );

    // Assert: B answered, with no wait in between (fake time never moved).
    const [a, b] = sent as [Worker, Worker];
    expect(result.status).toBe(200);
    expect(b).not.toBe(a);
    expect(delays).toEqual([0]);
    expect(retries).toEqual([0]);
    expect(Date.now()).toBe(start);
    // A cools down: not available, its breaker closed and unmoved, the time left in its snapshot.
    expect(a.isAvailable()).toBe(false);
    expect(a.circuitBreaker.canExecute()).toBe(false);
    expect(a.circuitBreaker.state).toBe('closed');
    expect(a.toJSON().circuitBreaker.cooldownMs).toBe(1_000);
    expect(router.stats().cooldowns).toEqual({ [a.id]: 1_000 });
    expect(circuits).toEqual([]);
    const picks = (n: number) =>
      Array.from({ length: n }, () => {
        const lease = router.select({ model: 'm' });
        lease?.release({ ok: true, status: 200 });
        return lease?.worker;
      });
    expect(picks(6)).toEqual(Array(6).fill(b));
    vi.advanceTimersByTime(999);
    expect(picks(6)).toEqual(Array(6).fill(b));
    expect(a.circuitBreaker.snapshot().cooldownMs).toBe(1);

    vi.advanceTimersByTime(1); // the cooldown is over: A is routed again, by itself
    expect(picks(6)).toContain(a);
    expect(a.isAvailable()).toBe(true);
    expect(a.circuitBreaker.snapshot().cooldownMs).toBe(0);
    expect(router.stats().cooldowns).toEqual({});
    expect(circuits).toEqual([]);
    expect(workers.map((w) => w.load)).toEqual([0, 0]);
    await router.close();
  });

  it('a Retry-After cooldown is capped by the breaker’s maxCooldownMs, and maxCooldownMs: 0 turns it off', async () => {
    const answer =
      (retryAfter: string) =>
      async (_w: Worker, { attempt }: { attempt: number }) =>
        attempt === 1 ? { status: 503, headers: { 'retry-after': retryAfter } } : { status: 200 };
    const capped = await fleet(2, { circuitBreaker: { maxCooldownMs: 5_000 } });
    await withoutWaiting(capped.router.execute({ model: 'm' }, answer('3600')));
    expect(capped.workers.map((w) => w.circuitBreaker.snapshot().cooldownMs).sort()).toEqual([
      0, 5_000,
    ]);
    await capped.router.close();

    const off = await fleet(2, { circuitBreaker: { maxCooldownMs: 0 } });
    await withoutWaiting(off.router.execute({ model: 'm' }, answer('30')));
    expect(off.workers.map((w) => w.isAvailable())).toEqual([true, true]);
    await off.router.close();
  });

  it('without Retry-After, a failure status still backs off exponentially and starts no cooldown', async () => {
    const { router, workers } = await fleet(3, {
      retry: { maxAttempts: 3, initialBackoffMs: 10, maxBackoffMs: 5_000 },
    });
    const times: number[] = [];
    const start = Date.now();
    const promise = router.execute({ model: 'm' }, async () => {
      times.push(Date.now() - start);
      return { status: 503 };
    });
    await vi.runAllTimersAsync();
    await promise;
    expect(times).toEqual([0, 10, 30]);
    expect(workers.map((w) => w.circuitBreaker.snapshot().cooldownMs)).toEqual([0, 0, 0]);
    await router.close();
  });

  it('an abort during the backoff stops at once with the signal’s reason, and no more attempts', async () => {
    const { router } = await fleet(3, { retry: { maxAttempts: 3, initialBackoffMs: 1_000 } });
    const controller = new AbortController();
    const send = vi.fn(async () => ({ status: 503 }));
    const promise = router.execute({ model: 'm' }, send, { signal: controller.signal });
    const assertion = expect(promise).rejects.toThrow('stop');
    await vi.advanceTimersByTimeAsync(100);
    controller.abort(new Error('stop'));
    await assertion;
    await vi.runAllTimersAsync();
    expect(send).toHaveBeenCalledTimes(1);
    expect(vi.getTimerCount()).toBe(0);
    await router.close();
  });

  it('passes a signal that aborts with the caller’s, and does not count an aborted attempt against the worker', async () => {
    const { router, workers } = await fleet(1);
    const controller = new AbortController();
    const promise = router.execute(
      { model: 'm' },
      (_w, { signal }) =>
        new Promise((_resolve, reject) => {
          signal.addEventListener('abort', () => reject(signal.reason));
        }),
      { signal: controller.signal },
    );
    controller.abort(new Error('caller gave up'));
    await expect(promise).rejects.toThrow('caller gave up');
    expect(workers[0]!.circuitBreaker.snapshot().consecutiveFailures).toBe(0);
    expect(workers[0]!.load).toBe(0);
    await router.close();
  });

  it('leaves no listener on a long-lived caller signal once calls end, whatever their outcome', async () => {
    const { router } = await fleet(2, { retry: { maxAttempts: 2, initialBackoffMs: 1 } });
    const controller = new AbortController();
    const { signal } = controller;
    for (let i = 0; i < 50; i++) {
      await router.execute({ model: 'm' }, async () => ({ status: 200 }), { signal });
      const failing = router.execute({ model: 'm' }, async () => ({ status: 503 }), { signal });
      await vi.runAllTimersAsync();
      await failing;
      const throwing = router.execute(
        { model: 'm' },
        async () => {
          throw new Error('x');
        },
        { signal },
      );
      const assertion = expect(throwing).rejects.toThrow('x');
      await vi.runAllTimersAsync();
      await assertion;
    }
    expect(getEventListeners(signal, 'abort')).toHaveLength(0);
    await router.close();
  });

  it('close() aborts an execution that passed its own signal', async () => {
    const { router } = await fleet(1);
    const controller = new AbortController();
    let seen: AbortSignal | undefined;
    const promise = router.execute(
      { model: 'm' },
      (_w, { signal }) =>
        new Promise((_resolve, reject) => {
          seen = signal;
          signal.addEventListener('abort', () => reject(signal.reason));
        }),
      { signal: controller.signal },
    );
    const assertion = expect(promise).rejects.toMatchObject({ code: 'CLOSED' });
    await vi.advanceTimersByTimeAsync(0);
    await router.close();
    await assertion;
    expect(seen?.aborted).toBe(true);
    expect(controller.signal.aborted).toBe(false);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });

  it('an error thrown with retryable: false fails the attempt and ends the call at once', async () => {
    const { router, workers } = await fleet(3, { retry: { maxAttempts: 3 } });
    const broken = Object.assign(new Error('stream broke after the first bytes'), {
      retryable: false,
    });
    const send = vi.fn(async () => {
      throw broken;
    });
    await expect(router.execute({ model: 'm' }, send)).rejects.toBe(broken);
    expect(send).toHaveBeenCalledTimes(1);
    expect(workers.map((w) => w.circuitBreaker.snapshot().consecutiveFailures).sort()).toEqual([
      0, 0, 1,
    ]);
    expect(router.stats().retries).toBe(0);
    await router.close();
  });

  it('a send that ignores its signal cannot hold execute: abort ends it at once, a late answer is ignored', async () => {
    const { router, workers } = await fleet(1);
    const controller = new AbortController();
    let answer: (value: { status: number }) => void = () => {};
    const promise = router.execute(
      { model: 'm' },
      () =>
        new Promise<{ status: number }>((resolve) => {
          answer = resolve;
        }),
      { signal: controller.signal },
    );
    const assertion = expect(promise).rejects.toThrow('gave up');
    await vi.advanceTimersByTimeAsync(0);
    controller.abort(new Error('gave up'));
    await assertion;
    expect(workers[0]!.load).toBe(0);
    answer({ status: 500 }); // arrives after the call ended: changes nothing
    await vi.advanceTimersByTimeAsync(0);
    expect(workers[0]!.circuitBreaker.snapshot().consecutiveFailures).toBe(0);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    await router.close();
  });

  it('uses the model’s retry override from the registry', async () => {
    const { registry, router } = await fleet(5, { retry: { maxAttempts: 5 } });
    registry.setModelRetryConfig('m', { maxAttempts: 2 });
    const send = vi.fn(async () => ({ status: 503 }));
    const promise = router.execute({ model: 'm' }, send);
    await vi.runAllTimersAsync();
    await promise;
    expect(send).toHaveBeenCalledTimes(2);
    await router.close();
  });

  it('a model’s override keeps the router’s other retry settings (the fields it gives win)', async () => {
    const { registry, router } = await fleet(6, {
      retry: { maxAttempts: 5, initialBackoffMs: 1_000, jitter: 0 },
    });
    registry.setModelRetryConfig('m', { initialBackoffMs: 0 });
    const send = vi.fn(async () => ({ status: 503 }));

    const promise = router.execute({ model: 'm' }, send);
    await vi.advanceTimersByTimeAsync(0);

    // Five attempts (the router's), with no backoff between them (the override's).
    await promise;
    expect(send).toHaveBeenCalledTimes(5);
    await router.close();
  });

  it('a new override for the model takes effect on the next call (the resolved one is not kept)', async () => {
    const { registry, router } = await fleet(5, { retry: { maxAttempts: 5, initialBackoffMs: 0 } });
    const send = vi.fn(async () => ({ status: 503 }));
    registry.setModelRetryConfig('m', { maxAttempts: 2 });
    const first = router.execute({ model: 'm' }, send);
    await vi.runAllTimersAsync();
    await first;

    registry.setModelRetryConfig('m', { maxAttempts: 4 });
    const second = router.execute({ model: 'm' }, send);
    await vi.runAllTimersAsync();
    await second;

    expect(send).toHaveBeenCalledTimes(2 + 4);
    await router.close();
  });

  it('runs many calls at once without piling listeners on any shared signal (no leak warning)', async () => {
    const { router } = await fleet(4);
    const warnings: Error[] = [];
    const onWarning = (warning: Error): void => {
      warnings.push(warning);
    };
    process.on('warning', onWarning);
    try {
      const gates: (() => void)[] = [];
      const calls = Array.from({ length: 50 }, () =>
        router.execute(
          { model: 'm' },
          () =>
            new Promise<{ status: number }>((resolve) =>
              gates.push(() => resolve({ status: 200 })),
            ),
        ),
      );
      await vi.advanceTimersByTimeAsync(0);
      expect(gates).toHaveLength(50); // all 50 in flight together
      for (const open of gates) open();
      await Promise.all(calls);
      vi.useRealTimers();
      await new Promise((resolve) => setImmediate(resolve)); // warnings are emitted on a later tick
      expect(warnings.map((w) => w.name)).not.toContain('MaxListenersExceededWarning');
    } finally {
      process.off('warning', onWarning);
    }
    await router.close();
  });

  it('close() rejects every call in flight with CLOSED, however many share the router', async () => {
    const { router } = await fleet(2);
    const calls = Array.from({ length: 20 }, () =>
      router.execute({ model: 'm' }, () => new Promise<never>(() => {})),
    );
    const assertions = calls.map((call) => expect(call).rejects.toMatchObject({ code: 'CLOSED' }));
    await vi.advanceTimersByTimeAsync(0);
    await router.close();
    await Promise.all(assertions);
  });

  it.each<[string, unknown]>([
    ['a number', 5],
    ['a string', 'm'],
    ['a function', () => ({})],
  ])('rejects a request that is %s with INVALID_ARGUMENT', async (_label, request) => {
    const { router } = await fleet(1);
    await expect(
      router.execute(request as object, async () => ({ status: 200 })),
    ).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await router.close();
  });

  it('after close() it throws CLOSED, and a pending backoff is cancelled', async () => {
    const { router } = await fleet(3, { retry: { maxAttempts: 3, initialBackoffMs: 1_000 } });
    const promise = router.execute({ model: 'm' }, async () => ({ status: 503 }));
    const assertion = expect(promise).rejects.toMatchObject({ code: 'CLOSED' });
    await vi.advanceTimersByTimeAsync(10);
    await router.close();
    await assertion;
    await expect(router.execute({ model: 'm' }, async () => 1)).rejects.toBeInstanceOf(
      FleetRouteError,
    );
  });
});

describe('backoff', () => {
  const config = resolveRetryConfig({
    initialBackoffMs: 50,
    multiplier: 2,
    maxBackoffMs: 5_000,
    jitter: 0.2,
  });

  it.each([
    [1, 0.5, 50],
    [2, 0.5, 100],
    [3, 0.5, 200],
    [1, 0, 40],
    [1, 0.999_999, 60],
    [20, 0.5, 5_000],
  ])('attempt %i with random %d waits %d ms', (attempt, random, expected) => {
    expect(backoffDelay(config, attempt, random)).toBeCloseTo(expected, 3);
  });

  it('Retry-After wins, capped at maxBackoffMs', () => {
    expect(backoffDelay(config, 1, 0.5, 1_500)).toBe(1_500);
    expect(backoffDelay(config, 1, 0.5, 60_000)).toBe(5_000);
  });

  it('reads Retry-After as seconds or an HTTP date, from Headers or a record', () => {
    const now = Date.parse('Mon, 30 Nov 2026 10:00:00 GMT');
    expect(retryAfterMs({ headers: new Headers({ 'Retry-After': '3' }) })).toBe(3_000);
    expect(retryAfterMs({ headers: { 'retry-after': 'Mon, 30 Nov 2026 10:00:07 GMT' } }, now)).toBe(
      7_000,
    );
    expect(retryAfterMs({ headers: { 'retry-after': 'soon' } })).toBeUndefined();
    expect(retryAfterMs({ status: 503 })).toBeUndefined();
    expect(retryAfterMs(undefined)).toBeUndefined();
  });
});
