/**
 * Streaming through the front: committed only after a non-failure status, retried before the
 * first byte, never after; a break midway reaches the client as an error; the first output event
 * marks the first token; a slow client slows the engine instead of filling memory.
 */
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { createPolicy } from '../../src/index.js';
import { FRAMEWORKS, type Gateway, startGateway } from './support/gateway.js';

let gateway: Gateway | undefined;
afterEach(async () => {
  await gateway?.close();
  gateway = undefined;
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function chat(
  g: Gateway,
  body: Record<string, unknown> = {},
  headers: Record<string, string> = {},
) {
  return fetch(`${g.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({
      model: g.engines[0]!.model,
      messages: [{ role: 'user', content: 'Hello there' }],
      stream: true,
      max_tokens: 4,
      ...body,
    }),
  });
}

/** Reads a streamed body to its end: its text, or the error it ended with. */
async function drain(response: Response): Promise<{ text: string; error: unknown }> {
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return { text, error: undefined };
      text += decoder.decode(value, { stream: true });
    }
  } catch (error) {
    return { text, error };
  }
}

describe('streaming through the front', () => {
  it('retries a failure status on another worker before anything reaches the client', async () => {
    // A rotation that starts at the first engine, the one that fails.
    const policy = createPolicy('round_robin', { random: () => 0 });
    gateway = await startGateway({ engines: 2, router: { policy } });
    const [a, b] = gateway.engines;
    a!.behave({ kind: 'status', status: 503 });
    const response = await chat(gateway);
    expect(response.status).toBe(200);
    const { text, error } = await drain(response);
    expect(error).toBeUndefined();
    expect(text).toContain('tok3');
    expect(text.endsWith('data: [DONE]\n\n')).toBe(true);
    expect(a!.requests).toHaveLength(1);
    expect(b!.requests).toHaveLength(1);
  });

  it('relays the last failure, status and body, when every worker failed', async () => {
    gateway = await startGateway({ engines: 2 });
    for (const engine of gateway.engines) engine.behave({ kind: 'status', status: 503 });
    const response = await chat(gateway);
    expect(response.status).toBe(503);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('stand_in');
  });

  it('relays an engine’s own 4xx unchanged, without retrying it', async () => {
    gateway = await startGateway({ engines: 2 });
    for (const engine of gateway.engines) engine.behave({ kind: 'status', status: 400 });
    const response = await chat(gateway);
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({
      error: {
        message: 'stand-in status 400',
        type: 'invalid_request_error',
        param: null,
        code: 'stand_in',
      },
    });
    expect(gateway.engines.flatMap((e) => e.requests)).toHaveLength(1);
  });

  it('reports the first token at the first event that carries output', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    gateway = await startGateway({ engines: 1, engine: { beforeOutput: () => held } });
    const worker = gateway.registry.getAll()[0]!;
    const response = await chat(gateway);
    const reader = response.body!.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    expect(first).toContain('"role":"assistant"'); // the role chunk: no output yet
    expect(worker.load).toBe(1);
    expect(worker.prefilling).toBe(1);
    release();
    const second = new TextDecoder().decode((await reader.read()).value);
    expect(second).toContain('tok0');
    expect(worker.prefilling).toBe(0);
    expect(worker.load).toBe(1); // still streaming
    while (!(await reader.read()).done) {}
    for (let i = 0; i < 100 && worker.load !== 0; i++) await sleep(5);
    expect(worker.load).toBe(0);
  });

  it('keeps the usage chunk a client asked for', async () => {
    gateway = await startGateway({ engines: 1 });
    const response = await chat(gateway, { stream_options: { include_usage: true } });
    const { text } = await drain(response);
    expect(text).toContain('"usage":{"prompt_tokens"');
  });

  it('sends the client’s bytes as they came when it changes nothing', async () => {
    gateway = await startGateway({ engines: 1 });
    const raw = `{"model":"${gateway.engines[0]!.model}","messages":[{"role":"user","content":"x"}], "n": 1}`;
    const response = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      body: raw,
    });
    expect(response.status).toBe(200);
    await response.arrayBuffer();
    const seen = gateway.engines[0]!.requests[0]!;
    expect(seen.body).toEqual(JSON.parse(raw));
    expect(seen.headers['content-type']).toBe('application/json');
  });

  it('a client that stops reading slows the engine: nothing piles up in the gateway', async () => {
    const big = 'x'.repeat(64 * 1024);
    gateway = await startGateway({ engines: 1, engine: { chunkText: () => big } });
    const engine = gateway.engines[0]!;
    const response = await chat(gateway, { max_tokens: 10_000 }); // 640 MiB if all were sent
    const reader = response.body!.getReader();
    await reader.read();
    // Wait until the engine stops making progress (its socket is full), bounded.
    let last = -1;
    for (let i = 0; i < 100 && engine.sent !== last; i++) {
      last = engine.sent;
      await sleep(50);
    }
    expect(engine.sent).toBe(last);
    expect(engine.sent).toBeLessThan(1_000); // < 64 MiB in every buffer on the way, together
    await reader.cancel();
    for (let i = 0; i < 200 && engine.abandoned === 0; i++) await sleep(10);
    expect(engine.abandoned).toBe(1);
    expect(gateway.registry.getAll()[0]!.load).toBe(0);
  });
});

describe.each(FRAMEWORKS)('a stream that breaks midway, through %s', (framework) => {
  it('ends with an error the client sees, never a clean end, and is not retried', async () => {
    gateway = await startGateway({ framework, engines: 2 });
    for (const engine of gateway.engines) engine.behave({ kind: 'die-mid-stream', chunks: 2 });
    const response = await chat(gateway, { max_tokens: 10 });
    expect(response.status).toBe(200);
    const { text, error } = await drain(response);
    expect(text).toContain('tok1');
    expect(text).not.toContain('[DONE]');
    expect(text).toContain('upstream_stream_broken');
    expect(error).toBeDefined();
    expect(gateway.engines.flatMap((e) => e.requests)).toHaveLength(1);
  });

  it('raises an error in the openai SDK', async () => {
    gateway = await startGateway({ framework, engines: 1 });
    gateway.engines[0]!.behave({ kind: 'die-mid-stream', chunks: 2 });
    const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: 'k', maxRetries: 0 });
    const stream = await client.chat.completions.create({
      model: gateway.engines[0]!.model,
      messages: [{ role: 'user', content: 'x' }],
      stream: true,
      max_tokens: 10,
    });
    let text = '';
    await expect(
      (async () => {
        for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
      })(),
    ).rejects.toThrow();
    expect(text).toBe('tok0 tok1 ');
  });
});
