/**
 * The `firstToken` and `usage` events of `Router.execute`: the time to first token of the call
 * and of the attempt (on a fake clock), once per attempt, in order with the other events; token
 * counts taken from the first valid report and junk ignored without a throw; nothing built — not
 * even a clock read — while nobody listens; and the same figures from a stand-in vLLM engine
 * streaming over a real socket.
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type {
  AttemptContext,
  ExecutedEvent,
  FirstTokenEvent,
  Router,
  RouterObservation,
  TokenUsage,
  UsageEvent,
  Worker,
} from '../../src/index.js';
import { runs } from '../helpers/fc-settings.js';
import { routerFleet } from '../support/router-fleet.js';
import { type StandInEngine, startStandInEngine } from '../support/vllm-engine.js';

const open: { close(): unknown }[] = [];
afterEach(async () => {
  vi.useRealTimers();
  vi.restoreAllMocks();
  for (const o of open.splice(0).reverse()) await o.close();
});

function record(router: Router, ...types: RouterObservation['type'][]): RouterObservation[] {
  const seen: RouterObservation[] = [];
  for (const type of types) router.on(type, (e: RouterObservation) => void seen.push(e));
  return seen;
}

const wait = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function fleet(n: number, options: Parameters<typeof routerFleet>[1] = {}) {
  const { router, registry } = await routerFleet(n, options);
  open.push(registry, router);
  return router;
}

describe('firstToken events', () => {
  it('on a fake clock: the call’s wait (retries and backoff included) and the attempt’s own, once per attempt, in order', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date', 'performance'] });
    // Jitter at its midpoint (routerFleet): the backoff before attempt 2 is exactly 50 ms.
    const router = await fleet(2, {
      retry: { maxAttempts: 2, initialBackoffMs: 50, maxBackoffMs: 50 },
    });
    const seen = record(router, 'firstToken', 'attempt', 'retry', 'usage', 'executed');
    const send = async (_w: Worker, { attempt, firstToken, usage }: AttemptContext) => {
      if (attempt === 1) {
        await wait(40);
        firstToken();
        await wait(60);
        throw new Error('stream broke before its end'); // retryable: the call goes on
      }
      await wait(30);
      firstToken();
      firstToken(); // a second call of the same attempt: no second event
      await wait(20);
      usage({ promptTokens: 812, completionTokens: 64, cachedTokens: 512 });
      return { status: 200 };
    };
    const done = router.execute({ model: 'm' }, send);
    await vi.advanceTimersByTimeAsync(1_000);
    await expect(done).resolves.toEqual({ status: 200 });

    expect(seen.map((e) => `${e.type}${'attempt' in e ? e.attempt : ''}`)).toEqual([
      'firstToken1',
      'attempt1',
      'retry1',
      'firstToken2',
      'usage2',
      'attempt2',
      'executed',
    ]);
    const [first1, attempt1, , first2, , attempt2, executed] = seen as [
      FirstTokenEvent,
      RouterObservation,
      RouterObservation,
      FirstTokenEvent,
      UsageEvent,
      RouterObservation & { worker: Worker },
      ExecutedEvent,
    ];
    expect(first1).toEqual({
      type: 'firstToken',
      model: 'm',
      worker: (attempt1 as { worker: Worker }).worker,
      attempt: 1,
      timeToFirstTokenMs: 40,
      attemptMs: 40,
    });
    // 100 ms for attempt 1, 50 ms of backoff, then 30 ms to attempt 2's first token.
    expect(first2).toEqual({
      type: 'firstToken',
      model: 'm',
      worker: attempt2.worker,
      attempt: 2,
      timeToFirstTokenMs: 180,
      attemptMs: 30,
    });
    expect(first2.worker).not.toBe(first1.worker);
    expect(executed.durationMs).toBe(200);
  });

  it('nobody listening: no event, no clock read, and usage is one shared no-op that reads nothing', async () => {
    const router = await fleet(2);
    const reads = { count: 0 };
    const report = {
      get promptTokens() {
        reads.count++;
        return 10;
      },
      completionTokens: 2,
    };
    const usages = new Set<unknown>();
    const send = async (_w: Worker, { firstToken, usage }: AttemptContext) => {
      usages.add(usage);
      firstToken();
      usage(report);
      return { status: 200 };
    };
    const now = vi.spyOn(performance, 'now');
    for (let i = 0; i < 3; i++) await router.execute({ model: 'm' }, send);
    expect(now).not.toHaveBeenCalled();
    expect(reads.count).toBe(0);
    expect(usages.size).toBe(1);

    // A listener on another event of the call: still no usage read, no firstToken event.
    const attempts = record(router, 'attempt');
    await router.execute({ model: 'm' }, send);
    expect(attempts).toHaveLength(1);
    expect(reads.count).toBe(0);

    const tokens = record(router, 'firstToken', 'usage');
    await router.execute({ model: 'm' }, send);
    expect(tokens.map((e) => e.type)).toEqual(['firstToken', 'usage']);
    expect(reads.count).toBe(1);
    expect(usages.size).toBeGreaterThan(1); // observed attempts get their own
  });

  it('called after send returned (the answer read outside send): still one event each, prefilling untouched', async () => {
    const router = await fleet(1);
    const seen = record(router, 'firstToken', 'usage', 'executed');
    let late: AttemptContext | undefined;
    await router.execute({ model: 'm' }, async (_w, context) => {
      late = context;
      return { status: 200 };
    });
    late!.firstToken();
    late!.firstToken();
    late!.usage({ promptTokens: 9, completionTokens: 1 });
    late!.usage({ promptTokens: 9, completionTokens: 1 });
    expect(seen.map((e) => e.type)).toEqual(['executed', 'firstToken', 'usage']);
    const [executed, first] = seen as [ExecutedEvent, FirstTokenEvent];
    expect(first.timeToFirstTokenMs).toBeGreaterThanOrEqual(executed.durationMs);
    expect(first.worker.prefilling).toBe(0);
    expect(first.worker.load).toBe(0);
  });

  it('a listener removed: its events stop', async () => {
    const router = await fleet(1);
    const listener = vi.fn();
    router.on('firstToken', listener);
    const send = async (_w: Worker, { firstToken }: AttemptContext) => {
      firstToken();
      return { status: 200 };
    };
    await router.execute({ model: 'm' }, send);
    router.off('firstToken', listener);
    await router.execute({ model: 'm' }, send);
    expect(listener).toHaveBeenCalledTimes(1);
  });

  it('a listener that throws never reaches send', async () => {
    const router = await fleet(1);
    router.on('firstToken', () => {
      throw new Error('dashboard down');
    });
    router.on('usage', () => {
      throw new Error('dashboard down');
    });
    const warned = new Promise((resolve) => process.once('warning', resolve));
    const answer = await router.execute({ model: 'm' }, async (_w, { firstToken, usage }) => {
      firstToken();
      usage({ promptTokens: 1, completionTokens: 1 });
      return { status: 200 };
    });
    expect(answer).toEqual({ status: 200 });
    await warned;
  });
});

describe('usage events', () => {
  const JUNK: unknown[] = [
    undefined,
    null,
    5,
    'prompt_tokens=10',
    {},
    { promptTokens: 10 },
    { promptTokens: -1, completionTokens: 1 },
    { promptTokens: 1.5, completionTokens: 1 },
    { promptTokens: Number.NaN, completionTokens: 1 },
    { promptTokens: Number.POSITIVE_INFINITY, completionTokens: 1 },
    { promptTokens: 2 ** 31 + 1, completionTokens: 1 },
    { promptTokens: '10', completionTokens: 1 },
    { promptTokens: 10, completionTokens: 1n },
    { promptTokens: 10, completionTokens: 1, cachedTokens: 11 },
    { promptTokens: 10, completionTokens: 1, cachedTokens: null },
    { promptTokens: 10, completionTokens: 1, cachedTokens: -2 },
    {
      get promptTokens(): number {
        throw new Error('hostile getter');
      },
      completionTokens: 1,
    },
    new Proxy(
      {},
      {
        get() {
          throw new Error('hostile proxy');
        },
      },
    ),
  ];

  it('junk is ignored without a throw; the first valid report counts, later ones do not', async () => {
    const router = await fleet(1);
    const seen = record(router, 'usage') as UsageEvent[];
    const answer = await router.execute({ model: 'm' }, async (_w, { usage }) => {
      for (const junk of JUNK) usage(junk as TokenUsage);
      usage({ promptTokens: 2 ** 31, completionTokens: 0 });
      usage({ promptTokens: 7, completionTokens: 7, cachedTokens: 7 });
      return { status: 200 };
    });
    expect(answer).toEqual({ status: 200 });
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({
      type: 'usage',
      model: 'm',
      attempt: 1,
      promptTokens: 2 ** 31,
      completionTokens: 0,
      cachedTokens: undefined,
    });
  });

  it('each attempt reports its own; the event carries copies, not the caller’s object', async () => {
    const router = await fleet(2, { retry: { maxAttempts: 2, initialBackoffMs: 0 } });
    const seen = record(router, 'usage') as UsageEvent[];
    const reported = { promptTokens: 100, completionTokens: 3, cachedTokens: 64 };
    await router.execute({ model: 'm' }, async (_w, { attempt, usage }) => {
      usage(reported);
      return { status: attempt === 1 ? 503 : 200 };
    });
    expect(seen.map((e) => e.attempt)).toEqual([1, 2]);
    expect(seen[0]!.worker).not.toBe(seen[1]!.worker);
    expect(seen[1]).toMatchObject({ promptTokens: 100, completionTokens: 3, cachedTokens: 64 });
    expect(seen[1]).not.toBe(reported);
    expect(Object.keys(seen[1]!).sort()).toEqual(
      [
        'attempt',
        'cachedTokens',
        'completionTokens',
        'model',
        'promptTokens',
        'type',
        'worker',
      ].sort(),
    );
  });

  it('property: any value reported never throws, and is taken exactly when it is valid', async () => {
    const router = await fleet(1);
    const seen = record(router, 'usage') as UsageEvent[];
    const count = fc.oneof(
      { arbitrary: fc.integer({ min: 0, max: 2 ** 31 }), weight: 6 },
      { arbitrary: fc.integer({ min: 0, max: 16 }), weight: 6 },
      fc.integer({ min: -10, max: 2 ** 32 }),
      fc.double(),
      fc.constantFrom(undefined, null, '1', 2 ** 31 + 1),
    );
    const report = fc.oneof(
      fc.record(
        { promptTokens: count, completionTokens: count, cachedTokens: count },
        { requiredKeys: [] },
      ),
      fc.anything(),
    );
    const isCount = (v: unknown): v is number =>
      typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= 2 ** 31;
    await fc.assert(
      fc.asyncProperty(report, async (value) => {
        seen.length = 0;
        const v = (typeof value === 'object' && value !== null ? value : {}) as Record<
          string,
          unknown
        >;
        const valid =
          typeof value === 'object' &&
          value !== null &&
          isCount(v.promptTokens) &&
          isCount(v.completionTokens) &&
          (v.cachedTokens === undefined ||
            (isCount(v.cachedTokens) && v.cachedTokens <= v.promptTokens));
        await router.execute({ model: 'm' }, async (_w, { usage }) => {
          usage(value as TokenUsage);
          return { status: 200 };
        });
        expect(seen).toHaveLength(valid ? 1 : 0);
        if (valid) {
          expect(seen[0]).toMatchObject({
            promptTokens: v.promptTokens,
            completionTokens: v.completionTokens,
            cachedTokens: v.cachedTokens,
          });
        }
      }),
      runs(200, 1_000),
    );
  });
});

describe('from a stand-in vLLM engine over a real socket', () => {
  let engine: StandInEngine;

  it('streaming: the first chunk is the first token, the final usage chunk the counts', async () => {
    engine = await startStandInEngine({ chunks: 5, firstChunkDelayMs: 20, chunkDelayMs: 5 });
    open.push({ close: () => engine.stop() });
    const { router, registry } = await routerFleet(0);
    open.push(registry, router);
    await registry.register({ url: engine.url, models: [engine.model] });
    const seen = record(router, 'firstToken', 'usage', 'attempt', 'executed');

    const text = await router.execute({ model: engine.model }, async (worker, context) => {
      const response = await fetch(`${worker.baseUrl}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          model: engine.model,
          messages: [{ role: 'user', content: 'What is a KV cache?' }],
          stream: true,
          stream_options: { include_usage: true },
        }),
        signal: context.signal,
      });
      return readStream(response, context);
    });

    expect(text).toBe('tok0 tok1 tok2 tok3 tok4 ');
    expect(seen.map((e) => e.type)).toEqual(['firstToken', 'usage', 'attempt', 'executed']);
    const [first, usage, attempt, executed] = seen as [
      FirstTokenEvent,
      UsageEvent,
      { durationMs: number; worker: Worker },
      ExecutedEvent,
    ];
    expect(first.worker).toBe(attempt.worker);
    expect(first.attemptMs).toBeGreaterThan(0);
    expect(first.timeToFirstTokenMs).toBeGreaterThanOrEqual(first.attemptMs);
    expect(first.attemptMs).toBeLessThanOrEqual(attempt.durationMs);
    expect(first.timeToFirstTokenMs).toBeLessThanOrEqual(executed.durationMs);
    const sent = engine.requests[0]!.body!;
    expect(usage).toMatchObject({
      promptTokens: Math.ceil(JSON.stringify(sent.messages).length / 4),
      completionTokens: 5,
      cachedTokens: undefined,
    });
  });
});

/** Reads an OpenAI chat stream: the text, with `firstToken()` on the first content and `usage()` from the usage chunk. */
async function readStream(response: Response, context: AttemptContext): Promise<string> {
  const decoder = new TextDecoder();
  let buffer = '';
  let text = '';
  for await (const bytes of response.body as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(bytes, { stream: true });
    let end = buffer.indexOf('\n\n');
    while (end >= 0) {
      const line = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      end = buffer.indexOf('\n\n');
      const data = line.replace(/^data: /, '');
      if (data === '[DONE]') continue;
      const chunk = JSON.parse(data) as {
        choices: { delta: { content?: string } }[];
        usage?: { prompt_tokens: number; completion_tokens: number };
      };
      const content = chunk.choices[0]?.delta.content ?? '';
      if (content !== '') {
        if (text === '') context.firstToken();
        text += content;
      }
      if (chunk.usage !== undefined) {
        context.usage({
          promptTokens: chunk.usage.prompt_tokens,
          completionTokens: chunk.usage.completion_tokens,
        });
      }
    }
  }
  return text;
}
