/**
 * What the front reads from the engines' answers reaches the router: the first token and the
 * engine's usage, as `firstToken` and `usage` events and as Prometheus metrics — streamed or not,
 * whether the client asked for usage or the front did.
 */
import OpenAI from 'openai';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import type { FirstTokenEvent, UsageEvent } from '../../src/index.js';
import { createPrometheusMetrics } from '../../src/prometheus/index.js';
import { metricsServer } from '../prometheus/support/scrape.js';
import { type Gateway, startGateway } from './support/gateway.js';

const open: { close(): unknown }[] = [];
afterEach(async () => {
  for (const o of open.splice(0).reverse()) await o.close();
});

async function observed(): Promise<{
  gateway: Gateway;
  usage: UsageEvent[];
  first: FirstTokenEvent[];
}> {
  const gateway = await startGateway({ engines: 1 });
  open.push(gateway);
  const usage: UsageEvent[] = [];
  const first: FirstTokenEvent[] = [];
  gateway.router.on('usage', (event) => usage.push(event));
  gateway.router.on('firstToken', (event) => first.push(event));
  return { gateway, usage, first };
}

describe('usage and first tokens from the front', () => {
  it('a streamed chat: the usage the front asked for reaches the router, not the client', async () => {
    const { gateway, usage, first } = await observed();
    const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: 'k', maxRetries: 0 });
    const stream = await client.chat.completions.create({
      model: gateway.engines[0]!.model,
      messages: [{ role: 'user', content: 'Count to five.' }],
      stream: true,
      max_tokens: 5,
    });
    let clientSawUsage = false;
    for await (const chunk of stream) clientSawUsage ||= chunk.usage != null;
    expect(clientSawUsage).toBe(false);
    await until(() => usage.length === 1);
    expect(usage[0]).toMatchObject({
      type: 'usage',
      model: gateway.engines[0]!.model,
      completionTokens: 5,
      attempt: 1,
    });
    expect(usage[0]!.promptTokens).toBeGreaterThan(0);
    expect(first).toHaveLength(1);
    expect(first[0]!.worker.url).toBe(gateway.engines[0]!.url);
  });

  it('a streamed completion whose client asked for usage: the client sees it, the router too', async () => {
    const { gateway, usage } = await observed();
    const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: 'k', maxRetries: 0 });
    const stream = await client.completions.create({
      model: gateway.engines[0]!.model,
      prompt: 'abc',
      stream: true,
      stream_options: { include_usage: true },
      max_tokens: 3,
    });
    let seen = 0;
    for await (const chunk of stream) seen = chunk.usage?.completion_tokens ?? seen;
    expect(seen).toBe(3);
    await until(() => usage.length === 1);
    expect(usage[0]!.completionTokens).toBe(3);
  });

  it('a non-streamed answer: usage read from its JSON', async () => {
    const { gateway, usage, first } = await observed();
    const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: 'k', maxRetries: 0 });
    const answer = await client.chat.completions.create({
      model: gateway.engines[0]!.model,
      messages: [{ role: 'user', content: 'x' }],
      max_tokens: 4,
    });
    await until(() => usage.length === 1);
    expect(usage[0]).toMatchObject({
      promptTokens: answer.usage!.prompt_tokens,
      completionTokens: 4,
      cachedTokens: undefined,
    });
    expect(first).toHaveLength(1);
  });

  it('reaches fleetroute/prometheus: token counters and the time-to-first-token histogram', async () => {
    const gateway = await startGateway({ engines: 1 });
    open.push(gateway);
    const registry = new Registry();
    const metrics = await createPrometheusMetrics({
      router: gateway.router,
      workers: gateway.registry,
      registry,
    });
    const server = await metricsServer(registry);
    open.push(metrics, server);
    const model = gateway.engines[0]!.model;
    const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: 'k', maxRetries: 0 });
    for (const max_tokens of [2, 3]) {
      const stream = await client.chat.completions.create({
        model,
        messages: [{ role: 'user', content: 'x' }],
        stream: true,
        max_tokens,
      });
      for await (const _ of stream) {
      }
    }
    await until(() => gateway.registry.getAll()[0]!.load === 0);
    const scrape = await server.scrape();
    expect(scrape.value('fleetroute_completion_tokens_total', { model })).toBe(5);
    expect(scrape.value('fleetroute_prompt_tokens_total', { model })).toBeGreaterThan(0);
    expect(scrape.value('fleetroute_time_to_first_token_seconds_count', { model })).toBe(2);
  });
});

async function until(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !condition(); i++)
    await new Promise((resolve) => setTimeout(resolve, 5));
  expect(condition()).toBe(true);
}
