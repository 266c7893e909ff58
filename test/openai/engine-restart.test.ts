/**
 * A fleet behind the front, with a real health loop over HTTP: an engine dies and every request
 * still succeeds on the others; the engine restarts and is routed to again — long before its
 * breaker's open period would have ended.
 */
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { httpTransport } from '../../src/transport/http/index.js';
import { type Gateway, startGateway } from './support/gateway.js';

let gateway: Gateway | undefined;
afterEach(async () => {
  await gateway?.close();
  gateway = undefined;
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('an engine that dies and restarts behind the front', () => {
  it('requests succeed while it is down, and reach it again once it is back', async () => {
    gateway = await startGateway({
      engines: 2,
      router: {
        transport: httpTransport({ timeoutMs: 500 }),
        policy: 'round_robin',
        health: { intervalMs: 100, timeoutMs: 500, failureThreshold: 2 },
        // Ten minutes open: only the health loop's word can bring the engine back in time.
        circuitBreaker: { failureThreshold: 1, openMs: 600_000 },
      },
    });
    const { router, registry } = gateway;
    await router.ready({ minWorkers: 2, signal: AbortSignal.timeout(10_000) });
    const [a] = gateway.engines;
    const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: 'k', maxRetries: 0 });
    const ask = async (i: number) => {
      const answer = await client.chat.completions.create({
        model: a!.model,
        messages: [{ role: 'user', content: `question ${i}` }],
        max_tokens: 2,
      });
      return answer.choices[0]!.message.content;
    };

    for (let i = 0; i < 4; i++) expect(await ask(i)).toBe('tok0 tok1 ');
    expect(a!.requests.length).toBeGreaterThan(0);

    await a!.stop();
    for (let i = 0; i < 6; i++) expect(await ask(100 + i)).toBe('tok0 tok1 ');
    const worker = registry.getByUrl(a!.url)!;
    for (let i = 0; i < 200 && worker.status === 'ready'; i++) await sleep(10);
    expect(worker.status).toBe('not_ready');

    const before = a!.requests.length;
    await a!.restart();
    // Bounded: the health interval is 100 ms, and requests keep flowing meanwhile.
    for (let i = 0; i < 300 && a!.requests.length === before; i++)
      expect(await ask(200 + i)).toBe('tok0 tok1 ');
    expect(a!.requests.length).toBeGreaterThan(before);
    expect(worker.status).toBe('ready');
  });
});
