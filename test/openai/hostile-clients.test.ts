/**
 * Clients that send too much, too many, or every kind of thing: the front refuses what is over its
 * limits without reading it, routes what is within them, and passes bodies to the engine intact.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { FRAMEWORKS, type Gateway, startGateway } from './support/gateway.js';

let gateway: Gateway | undefined;
afterEach(async () => {
  await gateway?.close();
  gateway = undefined;
});

const MB = 1024 * 1024;

async function completion(g: Gateway): Promise<number> {
  const response = await fetch(`${g.url}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: g.engines[0]!.model, prompt: 'still there?', max_tokens: 1 }),
  });
  await response.arrayBuffer();
  return response.status;
}

describe.each(FRAMEWORKS)('hostile clients through %s', (framework) => {
  it('a 100 MB body with its length declared: 413 without reading it; the gateway carries on', async () => {
    gateway = await startGateway({ framework });
    const response = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: new Uint8Array(100 * MB).fill(0x20),
    });
    expect(response.status).toBe(413);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe(
      'request_too_large',
    );
    expect(gateway.engines.flatMap((e) => e.requests)).toEqual([]);
    expect(await completion(gateway)).toBe(200);
  });

  it('a 100 MB body streamed without a length: refused past the limit (a 413, or the connection closed while it still sends)', async () => {
    gateway = await startGateway({ framework });
    let sent = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent >= 100) return controller.close();
        sent++;
        controller.enqueue(new Uint8Array(MB).fill(0x20));
      },
    });
    const outcome = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
      duplex: 'half',
    } as RequestInit).then(
      (response) => response.status,
      () => 'closed',
    );
    expect([413, 'closed']).toContain(outcome);
    expect(gateway.engines.flatMap((e) => e.requests)).toEqual([]);
    expect(await completion(gateway)).toBe(200);
  });

  it('10,000 messages: routed, and the engine gets them all', async () => {
    gateway = await startGateway({ framework });
    const messages = Array.from({ length: 10_000 }, (_, i) => ({
      role: i % 2 === 0 ? 'user' : 'assistant',
      content: `message ${i}`,
    }));
    const response = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: gateway.engines[0]!.model, messages, max_tokens: 1 }),
    });
    expect(response.status).toBe(200);
    await response.arrayBuffer();
    const seen = gateway.engines.flatMap((e) => e.requests)[0]!;
    expect((seen.body!.messages as unknown[]).length).toBe(10_000);
  });
});

describe('a content part of every kind', () => {
  it('reaches the engine exactly as sent', async () => {
    gateway = await startGateway();
    const body = {
      model: gateway.engines[0]!.model,
      max_tokens: 1,
      tools: [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object' } } }],
      messages: [
        { role: 'system', content: 'You are terse.' },
        { role: 'developer', content: [{ type: 'text', text: 'Be exact.' }] },
        {
          role: 'user',
          name: 'ada',
          content: [
            { type: 'text', text: 'Look:' },
            {
              type: 'image_url',
              image_url: { url: 'data:image/png;base64,iVBORw0KGgo=', detail: 'low' },
            },
            { type: 'input_audio', input_audio: { data: 'UklGRg==', format: 'wav' } },
            { type: 'file', file: { file_data: 'JVBERi0=', filename: 'a.pdf' } },
            { type: 'video_url', video_url: { url: 'https://example.invalid/v.mp4' } },
            { type: 'something_new', payload: [1, 2, { deep: [[[]]] }] },
          ],
        },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: 'c1', type: 'function', function: { name: 'lookup', arguments: '{"q":"x"}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'c1', content: [{ type: 'text', text: '42' }] },
        { role: 'assistant', content: [{ type: 'refusal', refusal: 'No.' }] },
        { role: 'user', content: 'π ≠ 3 — \ud83d\ude00 and a lone \ud800 surrogate' },
      ],
    };
    const response = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect(response.status).toBe(200);
    await response.arrayBuffer();
    const seen = gateway.engines.flatMap((e) => e.requests)[0]!;
    expect(seen.body).toEqual(JSON.parse(JSON.stringify(body)));
  });
});
