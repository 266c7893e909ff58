/**
 * The retry loop behind `Router.execute` with its replaceable parts: `retry.shouldRetry` decides
 * whether and when to try again, `retry.onRetry` sees every retry, and neither can break a call.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  defaultShouldRetry,
  type RetryEvent,
  type RetryOutcome,
  Router,
  type RouterRetryConfig,
  type ShouldRetry,
  type Worker,
  WorkerRegistry,
} from '../../src/index.js';
import { throwsCode } from '../support/fixtures.js';
import { routerFleet } from '../support/router-fleet.js';

const transport = { probe: async () => true };
const fleet = (n: number, retry: RouterRetryConfig = {}) => routerFleet(n, { retry });

/** An answer per attempt: a status, or an error to throw. */
type Script = readonly (number | Error)[];

/** Runs one call through `script`, timers and all; what came back and when each attempt started. */
async function play(router: Router, script: Script, request: object = { model: 'm' }) {
  const times: number[] = [];
  const start = Date.now();
  const call = router.execute(request, async (_w, { attempt }) => {
    times.push(Date.now() - start);
    const step = script[attempt - 1] ?? 200;
    if (step instanceof Error) throw step;
    return { status: step, headers: new Headers(step === 429 ? { 'retry-after': '2' } : {}) };
  });
  const settled = call.then(
    (value) => ({ status: value.status as number | undefined, error: undefined as unknown }),
    (error: unknown) => ({ status: undefined, error }),
  );
  await vi.runAllTimersAsync();
  return { ...(await settled), times, stats: router.stats() };
}

const reset = new Error('ECONNRESET');

describe('Router.execute with retry.shouldRetry and retry.onRetry', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
    vi.restoreAllMocks();
  });

  const settings = { maxAttempts: 4, initialBackoffMs: 100, maxBackoffMs: 5_000 };
  const passThrough: ShouldRetry = (outcome, attempt, byDefault) => byDefault(outcome, attempt);

  describe.each<[string, RouterRetryConfig]>([
    ['no shouldRetry', settings],
    ['a shouldRetry handing every case to byDefault', { ...settings, shouldRetry: passThrough }],
    [
      'defaultShouldRetry over the same settings',
      { ...settings, shouldRetry: defaultShouldRetry(settings, () => 0.5) },
    ],
  ])('%s reproduces the built-in behaviour', (_label, retry) => {
    it.each<[string, Script, number | undefined, number[], number]>([
      ['success at once', [200], 200, [0], 0],
      ['503, 503, then success: backoff ×2', [503, 503, 200], 200, [0, 100, 300], 2],
      ['429 with Retry-After: 2 s: the retry goes at once', [429, 200], 200, [0, 0], 1],
      ['errors are retried like statuses', [reset, 502, 200], 200, [0, 100, 300], 2],
      ['404 is not a failure status', [404], 404, [0], 0],
      [
        'every attempt fails: the last status wins',
        [503, 502, reset, reset],
        502,
        [0, 100, 300, 700],
        3,
      ],
    ])('%s', async (_case, script, status, times, retries) => {
      const { router } = await fleet(4, retry);
      const result = await play(router, script);
      expect(result.status).toBe(status);
      expect(result.times).toEqual(times);
      expect(result.stats.retries).toBe(retries);
      await router.close();
    });

    it('every attempt throws: the last error is thrown', async () => {
      const { router } = await fleet(4, retry);
      const result = await play(router, [new Error('1'), new Error('2'), new Error('3'), reset]);
      expect(result.error).toBe(reset);
      await router.close();
    });
  });

  it('a shouldRetry that stops on 429 returns the 429 at once', async () => {
    const stopOn429: ShouldRetry = (outcome, attempt, byDefault) =>
      outcome.kind === 'status' && outcome.status === 429 ? false : byDefault(outcome, attempt);
    const { router, workers } = await fleet(3, { shouldRetry: stopOn429 });
    expect((await play(router, [429, 200])).status).toBe(429);
    expect((await play(router, [503, 200])).status).toBe(200); // other failures still retried
    expect(workers.map((w) => w.load)).toEqual([0, 0, 0]);
    await router.close();
  });

  it('a shouldRetry can retry only idempotent requests (by their idempotency-key header)', async () => {
    const idempotentOnly: ShouldRetry = (outcome, attempt, byDefault) => {
      const headers = outcome.request.headers as Record<string, string> | undefined;
      return headers?.['idempotency-key'] === undefined ? false : byDefault(outcome, attempt);
    };
    const { router } = await fleet(3, { shouldRetry: idempotentOnly });
    const post = await play(router, [reset, 200], { model: 'm' });
    expect(post.error).toBe(reset);
    expect(post.times).toHaveLength(1);
    const keyed = await play(router, [reset, 200], {
      model: 'm',
      headers: { 'idempotency-key': 'k1' },
    });
    expect(keyed.status).toBe(200);
    expect(keyed.times).toHaveLength(2);
    await router.close();
  });

  it('waits the delays shouldRetry returns, whatever Retry-After says', async () => {
    const { router } = await fleet(4, {
      maxAttempts: 4,
      shouldRetry: (_outcome, attempt) => attempt * 1_000,
    });
    expect((await play(router, [429, 503, reset, 200])).times).toEqual([0, 1_000, 3_000, 6_000]);
    await router.close();
  });

  it('a delay of 0 retries at once; shouldRetry is asked with each outcome and attempt', async () => {
    const asked: [RetryOutcome['kind'], number][] = [];
    const { router } = await fleet(3, {
      shouldRetry: (outcome, attempt) => {
        asked.push([outcome.kind, attempt]);
        return 0;
      },
    });
    const result = await play(router, [503, reset, 502]);
    expect(result.times).toEqual([0, 0, 0]);
    // Not asked after the last of maxAttempts (3): maxAttempts stays the ceiling.
    expect(asked).toEqual([
      ['status', 1],
      ['error', 2],
    ]);
    expect(result.status).toBe(502);
    await router.close();
  });

  it('maxAttempts stays the ceiling, and the model’s override still sets it and the default delays', async () => {
    const { registry, router } = await fleet(6, {
      maxAttempts: 6,
      initialBackoffMs: 1_000,
      shouldRetry: passThrough,
    });
    registry.setModelRetryConfig('m', { maxAttempts: 3, initialBackoffMs: 10 });
    const result = await play(router, [503, 503, 503, 503]);
    expect(result.times).toEqual([0, 10, 30]);
    await router.close();
  });

  it('onRetry sees every retry before its wait, with the attempt, delay, cause and worker', async () => {
    const events: RetryEvent[] = [];
    const at: number[] = [];
    const start = Date.now();
    const { router, workers } = await fleet(4, {
      ...settings,
      onRetry: (event) => {
        events.push(event);
        at.push(Date.now() - start);
      },
    });
    const seen: Worker[] = [];
    const call = router.execute({ model: 'm' }, async (worker, { attempt }) => {
      seen.push(worker);
      if (attempt === 1) throw reset;
      if (attempt === 2) return { status: 503, headers: { 'retry-after': '1' } };
      return { status: attempt === 3 ? 502 : 200 };
    });
    await vi.runAllTimersAsync();
    expect((await call).status).toBe(200);

    expect(events.map(({ attempt, delayMs }) => [attempt, delayMs])).toEqual([
      [1, 100],
      [2, 0], // a Retry-After: that worker cools down, the call does not wait
      [3, 400],
    ]);
    expect(at).toEqual([0, 100, 100]); // each before its wait
    expect(events[0]!.outcome).toMatchObject({ kind: 'error', error: reset });
    expect(events[1]!.outcome).toMatchObject({ kind: 'status', status: 503, retryAfterMs: 1_000 });
    expect(events[2]!.outcome).toMatchObject({ kind: 'status', status: 502 });
    expect(events[2]!.outcome.request).toEqual({ model: 'm' });
    expect(events.map((e) => e.worker)).toEqual(seen.slice(0, 3));
    expect(events.every((e) => e.worker === e.outcome.worker)).toBe(true);
    expect(new Set(seen).size).toBe(4);
    expect(router.stats().retries).toBe(3);
    expect(workers.map((w) => w.load)).toEqual([0, 0, 0, 0]);
    await router.close();
  });

  it('onRetry is not called when nothing is retried', async () => {
    const onRetry = vi.fn();
    const { router } = await fleet(3, { onRetry, shouldRetry: () => false });
    await play(router, [503]);
    await play(router, [200]);
    expect(onRetry).not.toHaveBeenCalled();
    await router.close();
  });

  it('an onRetry that throws or rejects does not break the call, and is reported once', async () => {
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    const throwing = vi.fn(() => {
      throw new Error('logger down');
    });
    const { router } = await fleet(3, { onRetry: throwing });
    expect((await play(router, [503, reset, 200])).status).toBe(200);
    expect((await play(router, [503, 200])).status).toBe(200);
    expect(throwing).toHaveBeenCalledTimes(3);
    expect(warn).toHaveBeenCalledTimes(1);
    expect(warn).toHaveBeenCalledWith(expect.stringContaining('logger down'), {
      code: 'FLEETROUTE_RETRY_HOOK',
    });
    await router.close();

    const rejecting = fleet(3, { onRetry: async () => Promise.reject(new Error('async logger')) });
    const second = await rejecting;
    expect((await play(second.router, [503, 200])).status).toBe(200);
    await vi.runAllTimersAsync();
    expect(warn).toHaveBeenLastCalledWith(expect.stringContaining('async logger'), {
      code: 'FLEETROUTE_RETRY_HOOK',
    });
    await second.router.close();
  });

  it.each<[string, unknown]>([
    ['NaN', Number.NaN],
    ['a negative delay', -1],
    ['Infinity', Number.POSITIVE_INFINITY],
    ['a delay past what a timer holds', 2 ** 31],
    ['a string', '100'],
    ['true', true],
    ['undefined', undefined],
    ['null', null],
    ['an object', { delayMs: 10 }],
  ])(
    'a shouldRetry answering %s stops retrying (last result kept), reported once',
    async (_label, answer) => {
      const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
      const onRetry = vi.fn();
      const shouldRetry = vi.fn(() => answer as number);
      const { router } = await fleet(3, { shouldRetry, onRetry });
      const first = await play(router, [503, 200]);
      expect(first.status).toBe(503);
      expect(first.times).toEqual([0]);
      expect((await play(router, [reset, 200])).error).toBe(reset);
      expect(shouldRetry).toHaveBeenCalledTimes(2);
      expect(onRetry).not.toHaveBeenCalled();
      expect(warn).toHaveBeenCalledTimes(1);
      expect(warn.mock.calls[0]![0]).toMatch(/^retry\.shouldRetry returned .+, not a delay/);
      await router.close();
    },
  );

  it('a shouldRetry that throws stops retrying and the call ends with its last result', async () => {
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    const { router } = await fleet(3, {
      shouldRetry: () => {
        throw new TypeError('bug in the decision');
      },
    });
    expect((await play(router, [502, 200])).status).toBe(502);
    expect((await play(router, [reset, 200])).error).toBe(reset);
    expect(warn).toHaveBeenCalledTimes(1);
    expect(warn.mock.calls[0]![0]).toContain('TypeError: bug in the decision');
    await router.close();
  });

  it('an error thrown with retryable: false ends the call without asking shouldRetry', async () => {
    const shouldRetry = vi.fn(() => 0);
    const onRetry = vi.fn();
    const { router } = await fleet(3, { shouldRetry, onRetry });
    const broken = Object.assign(new Error('stream broke'), { retryable: false });
    expect((await play(router, [broken, 200])).error).toBe(broken);
    expect(shouldRetry).not.toHaveBeenCalled();
    expect(onRetry).not.toHaveBeenCalled();
    await router.close();
  });

  it('an abort during a delay shouldRetry chose stops at once, timer cleared', async () => {
    const { router } = await fleet(3, { shouldRetry: () => 60_000 });
    const controller = new AbortController();
    const send = vi.fn(async () => ({ status: 503 }));
    const call = router.execute({ model: 'm' }, send, { signal: controller.signal });
    const assertion = expect(call).rejects.toThrow('enough');
    await vi.advanceTimersByTimeAsync(100);
    controller.abort(new Error('enough'));
    await assertion;
    expect(vi.getTimerCount()).toBe(0);
    expect(send).toHaveBeenCalledTimes(1);
    await router.close();
  });

  it('a caller’s abort from inside shouldRetry or onRetry ends the call with its reason', async () => {
    for (const hook of ['shouldRetry', 'onRetry'] as const) {
      const controller = new AbortController();
      const abort = (): false => {
        controller.abort(new Error(`aborted in ${hook}`));
        return false;
      };
      const retry = hook === 'shouldRetry' ? { shouldRetry: abort } : { onRetry: abort };
      const { router } = await fleet(3, retry);
      const call = router.execute({ model: 'm' }, async () => ({ status: 503 }), {
        signal: controller.signal,
      });
      await expect(call).rejects.toThrow(`aborted in ${hook}`);
      await router.close();
    }
  });

  it('close() during a delay shouldRetry chose rejects with CLOSED', async () => {
    const { router } = await fleet(3, { shouldRetry: () => 60_000 });
    const call = router.execute({ model: 'm' }, async () => ({ status: 503 }));
    const assertion = expect(call).rejects.toMatchObject({ code: 'CLOSED' });
    await vi.advanceTimersByTimeAsync(10);
    await router.close();
    await assertion;
    expect(vi.getTimerCount()).toBe(0);
  });

  it.each([
    ['retry.shouldRetry', { shouldRetry: 100 }],
    ['retry.shouldRetry', { shouldRetry: 'default' }],
    ['retry.onRetry', { onRetry: {} }],
  ])('rejects a %s that is not a function with INVALID_ARGUMENT', async (field, retry) => {
    const registry = await WorkerRegistry.create();
    const error = throwsCode(
      () => new Router({ registry, transport, health: false, retry: retry as RouterRetryConfig }),
      'INVALID_ARGUMENT',
    );
    expect(error.message.startsWith(`${field} must be a function`)).toBe(true);
  });
});
