/**
 * Admission over real HTTP: a burst through the OpenAI front against stand-in vLLM engines, one
 * of which reports its own queue full on `/metrics`. What does not fit is answered 429 with a
 * `Retry-After`, what was queued is served once a report shows room, and nothing is lost.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { httpTransport } from '../../src/transport/http/index.js';
import type { StandInEngine } from '../support/vllm-engine.js';
import { type Gateway, startGateway } from './support/gateway.js';

let gateway: Gateway | undefined;
afterEach(async () => {
  await gateway?.close();
  gateway = undefined;
});

/** A gate the engines' answers wait on until the test opens it. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

describe('admission through the OpenAI front', () => {
  it('answers 429 with Retry-After for what does not fit, serves the queued when room frees, and loses nothing', async () => {
    const answers = gate();
    let fullEngineWaiting = 9;
    gateway = await startGateway({
      engines: 2,
      engine: (i) => ({
        beforeOutput: () => answers.opened,
        // Engine 0 reports its own queue full.
        waitingRequests: () => (i === 0 ? fullEngineWaiting : 0),
      }),
      router: {
        transport: httpTransport(),
        loadPolling: { intervalMs: 3_600_000, staleAfterMs: 3_600_000 },
        admission: { maxInFlight: 2, maxWaitingRequests: 4, maxQueued: 3, retryAfterMs: 1_500 },
      },
      handler: { forwardPriority: true },
    });
    const g = gateway;
    await g.router.pollLoads();
    expect(g.router.stats().loads.reports).toBe(2);
    const [full, open] = g.engines as [StandInEngine, StandInEngine];

    const model = g.engines[0]!.model;
    const post = (i: number) =>
      fetch(`${g.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-fleetroute-priority': String(i % 2) },
        body: JSON.stringify({
          model,
          stream: true,
          messages: [{ role: 'user', content: `q${i}` }],
        }),
      }).then(async (response) => ({
        status: response.status,
        retryAfter: response.headers.get('retry-after'),
        body: await response.text(),
      }));
    const settled: Awaited<ReturnType<typeof post>>[] = [];
    const burst = Array.from({ length: 8 }, (_, i) =>
      post(i).then((r) => {
        settled.push(r);
        return r;
      }),
    );

    // Two run on the engine with room; three wait; three are turned away at once.
    await vi.waitFor(() => expect(settled).toHaveLength(3), { timeout: 30_000 });
    for (const r of [...settled]) {
      expect(r.status).toBe(429);
      expect(r.retryAfter).toBe('2');
      expect(JSON.parse(r.body)).toMatchObject({ error: { code: 'saturated' } });
    }
    expect(g.router.stats().admission).toMatchObject({ queued: 3, admitted: 2 });
    expect(open.requests).toHaveLength(2);
    expect(full.requests).toHaveLength(0);

    // The full engine reports room: the report wakes the queue, the waiting go there.
    fullEngineWaiting = 0;
    await g.router.pollLoads();
    answers.open();
    const all = await Promise.all(burst);
    const served = all.filter((r) => r.status === 200);
    expect(served).toHaveLength(5);
    for (const r of served) expect(r.body).toContain('data: [DONE]');
    expect(all.filter((r) => r.status === 429)).toHaveLength(3);
    expect(g.engines.reduce((n, e) => n + e.requests.length, 0)).toBe(5);
    expect(g.router.stats().admission).toMatchObject({
      queued: 0,
      admitted: 2,
      admittedAfterWait: 3,
      rejected: { queue_full: 3 },
    });
    // Priorities reached the engine as vLLM reads them (lower first): 1 → -1; 0 is never written.
    const priorities = g.engines.flatMap((e) => e.requests.map((r) => r.body?.priority));
    expect(new Set(priorities)).toEqual(
      new Set([-1, undefined].filter((p) => priorities.includes(p))),
    );
    expect(priorities.every((p) => p === -1 || p === undefined)).toBe(true);
    // The report gave the full engine room for two at once (its `maxInFlight`); the third queued
    // request went wherever room freed first.
    expect(full.requests.length).toBeGreaterThanOrEqual(2);
  });
});

describe('priority forwarded to the engines', () => {
  async function sentPriority(
    runtime: 'vllm' | 'sglang' | 'trtllm',
    header: string | undefined,
    forwardPriority: boolean,
  ): Promise<unknown> {
    gateway = await startGateway({
      engines: 1,
      runtime: () => runtime,
      handler: { forwardPriority },
    });
    const engine = gateway.engines[0]!;
    const response = await fetch(`${gateway.url}/v1/completions`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...(header === undefined ? {} : { 'x-fleetroute-priority': header }),
      },
      body: JSON.stringify({ model: engine.model, prompt: 'hi' }),
    });
    expect(response.status).toBe(200);
    await response.text();
    const sent = engine.requests[0]!.body!;
    await gateway.close();
    gateway = undefined;
    return 'priority' in sent ? sent.priority : 'absent';
  }

  it('negated for vLLM (lower first), as it is for SGLang (higher first), not at all for others', async () => {
    expect(await sentPriority('vllm', '5', true)).toBe(-5);
    expect(await sentPriority('sglang', '5', true)).toBe(5);
    expect(await sentPriority('sglang', '-2', true)).toBe(-2);
    expect(await sentPriority('trtllm', '5', true)).toBe('absent');
  });

  it('never writes a priority of 0, none given, or with forwarding off', async () => {
    expect(await sentPriority('vllm', '0', true)).toBe('absent');
    expect(await sentPriority('vllm', undefined, true)).toBe('absent');
    expect(await sentPriority('vllm', '5', false)).toBe('absent');
  });

  it('answers 400 for a priority header that is not a bounded integer', async () => {
    gateway = await startGateway({ engines: 1 });
    const response = await fetch(`${gateway.url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-fleetroute-priority': '9999999999' },
      body: JSON.stringify({ model: gateway.engines[0]!.model, prompt: 'hi' }),
    });
    expect(response.status).toBe(400);
    expect(gateway.engines[0]!.requests).toHaveLength(0);
  });
});
