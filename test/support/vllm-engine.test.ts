/**
 * The stand-in engine speaks vLLM's OpenAI API as the official SDK reads it: the tests of the
 * OpenAI front rest on it.
 */
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { type StandInEngine, startStandInEngine } from './vllm-engine.js';

let engine: StandInEngine | undefined;
afterEach(async () => {
  await engine?.stop();
  engine = undefined;
});

describe('stand-in vLLM engine', () => {
  it('streams chat chunks, then usage when asked, to the openai SDK', async () => {
    engine = await startStandInEngine({ chunks: 3 });
    const client = new OpenAI({ baseURL: `${engine.url}/v1`, apiKey: 'none', maxRetries: 0 });
    const stream = await client.chat.completions.create({
      model: engine.model,
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let completionTokens = 0;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      completionTokens = chunk.usage?.completion_tokens ?? completionTokens;
    }
    expect(text).toBe('tok0 tok1 tok2 ');
    expect(completionTokens).toBe(3);
    expect(engine.requests[0]!.body!.stream).toBe(true);
  });

  it('answers completions without streaming, with usage', async () => {
    engine = await startStandInEngine();
    const client = new OpenAI({ baseURL: `${engine.url}/v1`, apiKey: 'none', maxRetries: 0 });
    const answer = await client.completions.create({
      model: engine.model,
      prompt: 'x',
      max_tokens: 2,
    });
    expect(answer.choices[0]!.text).toBe('tok0 tok1 ');
    expect(answer.usage?.completion_tokens).toBe(2);
  });

  it('restarts on the same port with a new start time', async () => {
    engine = await startStandInEngine();
    const { port, startedAt } = engine;
    await engine.stop();
    await expect(fetch(`${engine.url}/health`)).rejects.toThrow();
    await new Promise((r) => setTimeout(r, 5));
    await engine.restart();
    expect(engine.port).toBe(port);
    expect(engine.startedAt).toBeGreaterThan(startedAt);
    const metrics = await (await fetch(`${engine.url}/metrics`)).text();
    expect(metrics).toContain(`process_start_time_seconds ${engine.startedAt}`);
  });
});
