/**
 * Data-parallel ranks through the OpenAI front, over real HTTP: one stand-in engine registered as
 * several rank workers (`url@rank`, one endpoint); each request reaches the engine with the rank
 * the router chose — `x-data-parallel-rank` for vLLM, that and `routed_dp_rank` in the body for
 * SGLang — and a client cannot pick the rank itself.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { RuntimeType } from '../../src/index.js';
import { type Gateway, startGateway } from './support/gateway.js';

let gateway: Gateway | undefined;
afterEach(async () => {
  await gateway?.close();
  gateway = undefined;
});

/** Sends `count` completions; returns the worker each was routed to and what the engine got. */
async function send(runtime: RuntimeType, ranks: number | undefined, count: number) {
  gateway = await startGateway({
    engines: 1,
    runtime: () => runtime,
    ...(ranks === undefined ? {} : { ranks }),
    handler: { workerHeader: 'x-worker' },
    router: { policy: 'round_robin' },
  });
  const engine = gateway.engines[0]!;
  const routed: string[] = [];
  for (let i = 0; i < count; i++) {
    const response = await fetch(`${gateway.url}/v1/completions`, {
      method: 'POST',
      // The client tries to pick a rank: never forwarded.
      headers: { 'content-type': 'application/json', 'x-data-parallel-rank': '7' },
      body: JSON.stringify({ model: engine.model, prompt: `q${i}` }),
    });
    expect(response.status).toBe(200);
    routed.push(response.headers.get('x-worker')!);
    await response.text();
  }
  return { routed, requests: engine.requests };
}

describe('data-parallel ranks through the OpenAI front', () => {
  it('vLLM: every request carries the rank of the worker it was routed to, in the header', async () => {
    const { routed, requests } = await send('vllm', 3, 6);
    expect(new Set(routed).size).toBe(3); // round robin visits every rank
    for (const [i, request] of requests.entries()) {
      const rank = routed[i]!.slice(routed[i]!.lastIndexOf('@') + 1);
      expect(request.headers['x-data-parallel-rank']).toBe(rank);
      expect(request.body).not.toHaveProperty('routed_dp_rank');
    }
  });

  it('SGLang: the header and routed_dp_rank in the body', async () => {
    const { routed, requests } = await send('sglang', 2, 4);
    for (const [i, request] of requests.entries()) {
      const rank = Number(routed[i]!.slice(routed[i]!.lastIndexOf('@') + 1));
      expect(request.headers['x-data-parallel-rank']).toBe(String(rank));
      expect(request.body).toMatchObject({ routed_dp_rank: rank });
    }
  });

  it('a worker that is no rank: no rank header, not even the one the client sent', async () => {
    const { requests } = await send('vllm', undefined, 2);
    for (const request of requests) {
      expect(request.headers).not.toHaveProperty('x-data-parallel-rank');
      expect(request.body).not.toHaveProperty('routed_dp_rank');
    }
  });
});
