/**
 * Every error the front answers is in OpenAI's shape, with the status an OpenAI server gives:
 * what the `openai` SDK turns into its typed errors.
 */
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { FRAMEWORKS, type Gateway, startGateway } from './support/gateway.js';

let gateway: Gateway | undefined;
afterEach(async () => {
  await gateway?.close();
  gateway = undefined;
});

interface ErrorBody {
  readonly error: { message: string; type: string; param: string | null; code: string };
}

async function post(g: Gateway, path: string, body: string, headers: Record<string, string> = {}) {
  const response = await fetch(`${g.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body,
  });
  const text = await response.text();
  return {
    status: response.status,
    headers: response.headers,
    body: JSON.parse(text) as ErrorBody,
  };
}

describe('errors in OpenAI’s shape', () => {
  it('an unknown model: 404 model_not_found, which the SDK raises as NotFoundError', async () => {
    gateway = await startGateway();
    const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: 'k', maxRetries: 0 });
    const call = client.chat.completions.create({
      model: 'no-such-model',
      messages: [{ role: 'user', content: 'x' }],
    });
    await expect(call).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(call).rejects.toMatchObject({
      status: 404,
      code: 'model_not_found',
      param: 'model',
    });
    expect(gateway.engines.flatMap((e) => e.requests)).toEqual([]);
  });

  it('every worker of the model unavailable: 503 with Retry-After', async () => {
    gateway = await startGateway({ handler: { retryAfterS: 2 } });
    for (const worker of gateway.registry.getAll())
      await gateway.registry.transitionStatus(worker.id, 'not_ready');
    const { status, headers, body } = await post(
      gateway,
      '/v1/chat/completions',
      JSON.stringify({ model: gateway.engines[0]!.model, messages: [] }),
    );
    expect(status).toBe(503);
    expect(headers.get('retry-after')).toBe('2');
    expect(body.error).toMatchObject({ type: 'server_error', code: 'no_worker_available' });
  });

  it('no worker answered at all: 502 upstream_error', async () => {
    gateway = await startGateway();
    for (const engine of gateway.engines) engine.behave({ kind: 'reset' });
    const { status, body } = await post(
      gateway,
      '/v1/completions',
      JSON.stringify({ model: gateway.engines[0]!.model, prompt: 'x' }),
    );
    expect(status).toBe(502);
    expect(body.error).toMatchObject({ type: 'server_error', code: 'upstream_error' });
  });

  it('bad JSON: 400 invalid_json; truncated JSON too', async () => {
    gateway = await startGateway();
    for (const raw of [
      '{not json',
      '{"model":"m","messages":[{"role":"user","content":"x"}',
      '[]',
      '"text"',
      '',
    ]) {
      const { status, body } = await post(gateway, '/v1/chat/completions', raw);
      expect(status, raw).toBe(400);
      expect(body.error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_json' });
    }
  });

  it('a field of the wrong type: 400 naming it', async () => {
    gateway = await startGateway();
    const { status, body } = await post(
      gateway,
      '/v1/chat/completions',
      JSON.stringify({ model: 'm', messages: 'x' }),
    );
    expect(status).toBe(400);
    expect(body.error.code).toBe('invalid_request');
    expect(body.error.message).toContain('messages');
  });

  it('a compressed request body: 415', async () => {
    gateway = await startGateway();
    const { status, body } = await post(gateway, '/v1/completions', '{}', {
      'content-encoding': 'gzip',
    });
    expect(status).toBe(415);
    expect(body.error.code).toBe('unsupported_media_type');
  });

  it('an unknown path: 404; a known path with the wrong method: 405 with Allow', async () => {
    gateway = await startGateway();
    const unknown = await post(gateway, '/v1/nothing', '{}');
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe('unknown_url');
    const wrong = await fetch(`${gateway.url}/v1/chat/completions`);
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get('allow')).toBe('POST');
    expect(((await wrong.json()) as ErrorBody).error.code).toBe('method_not_allowed');
  });

  it('a closed router: 503', async () => {
    gateway = await startGateway();
    await gateway.router.close();
    const { status, body } = await post(
      gateway,
      '/v1/completions',
      JSON.stringify({ model: gateway.engines[0]!.model, prompt: 'x' }),
    );
    expect(status).toBe(503);
    expect(body.error.code).toBe('shutting_down');
  });
});

describe.each(FRAMEWORKS.filter((f) => f !== 'node'))('%s: other paths', (framework) => {
  it('are left to the application', async () => {
    gateway = await startGateway({ framework });
    const response = await fetch(`${gateway.url}/other`);
    expect(response.status).toBe(200);
    expect(await response.text()).toBe('other');
  });
});
