/**
 * The front against real local workers: what it forwards (client headers, the worker API key, a
 * JSON content type), what it keeps back (hop-by-hop headers, the client's credentials), and that
 * a failed attempt's body is cut short instead of being left open while the request moves on.
 */
import {
  createServer,
  type IncomingHttpHeaders,
  request,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { Router, WorkerRegistry } from '../../src/index.js';
import { createOpenAINodeHandler, type OpenAIHandlerOptions } from '../../src/openai/index.js';

interface TestWorker {
  readonly url: string;
  readonly seen: IncomingHttpHeaders[];
  /** Responses that closed before their body was fully written. */
  cut: number;
  readonly server: Server;
}

/** A worker that answers 503 with a 4 MiB body written in chunks, or 200 with a small JSON. */
async function worker(kind: 'failing' | 'healthy'): Promise<TestWorker> {
  const state: { cut: number } = { cut: 0 };
  const seen: IncomingHttpHeaders[] = [];
  const server = createServer((req, res) => {
    seen.push(req.headers);
    req.resume();
    req.on('end', () => {
      if (kind === 'healthy') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"served_by":"healthy"}');
        return;
      }
      res.on('close', () => {
        if (!res.writableFinished) state.cut++;
      });
      res.writeHead(503, { 'content-type': 'application/json' });
      writeSlowly(res, 64, 64 * 1024);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return Object.assign(state, { url, seen, server }) as TestWorker;
}

/** `chunks` chunks of `size` bytes, one per tick while the client keeps reading. */
function writeSlowly(res: ServerResponse, chunks: number, size: number): void {
  let left = chunks;
  const next = (): void => {
    if (res.destroyed) return;
    if (left-- === 0) return void res.end();
    res.write(Buffer.alloc(size, 0x61));
    setTimeout(next, 2);
  };
  next();
}

describe('forwarding to workers', () => {
  const servers: Server[] = [];
  const routers: Router[] = [];
  let registry: WorkerRegistry;
  afterEach(async () => {
    for (const router of routers.splice(0)) await router.close();
    for (const server of servers.splice(0)) {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  /** The proxy over `workers` (in that order: passthrough tries the first one first). */
  async function proxyOver(
    workers: TestWorker[],
    options: Omit<OpenAIHandlerOptions, 'router'> = {},
  ) {
    registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
    for (const w of workers) {
      await registry.register({ url: w.url, models: ['m'] });
      servers.push(w.server);
    }
    const router = new Router({
      registry,
      transport: { probe: async () => true },
      health: false,
      policy: 'passthrough',
      retry: { maxAttempts: 2, initialBackoffMs: 0 },
      circuitBreaker: { failureThreshold: 100 },
    });
    routers.push(router);
    router.start();
    const proxy = createServer(createOpenAINodeHandler({ router, ...options }));
    servers.push(proxy);
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
  }

  it('forwards the client’s headers with the worker key and a JSON content type, dropping hop-by-hop ones', async () => {
    const healthy = await worker('healthy');
    const base = await proxyOver([healthy], { apiKey: 'worker-secret' });

    // node:http, since fetch refuses to send a Connection header of its own.
    const response = await postRaw(`${base}/v1/completions`, {
      traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
      'x-request-id': 'req-7',
      authorization: 'Bearer client-secret',
      connection: 'keep-alive, x-hop',
      'x-hop': 'per-connection',
    });

    expect(response.status).toBe(200);
    expect(response.contentType).toBe('application/json');
    const seen = healthy.seen[0]!;
    expect(seen.traceparent).toBe('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01');
    expect(seen['x-request-id']).toBe('req-7');
    expect(seen.authorization).toBe('Bearer worker-secret');
    expect(seen['content-type']).toBe('application/json');
    expect(seen['x-hop']).toBeUndefined();
  });

  it('marks the first token when the first chunk of a streamed answer arrives: prefilling drops, load stays until the end', async () => {
    // A streaming worker: headers at once, then a chunk and the end when the test says.
    const steps: (() => void)[] = [];
    const server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.flushHeaders();
        steps.push(() => res.write('data: {"choices":[{"text":"Hi"}]}\n\n'));
        steps.push(() => res.end('data: [DONE]\n\n'));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const base = await proxyOver([{ url, seen: [], cut: 0, server }]);
    const target = registry.getAll()[0]!;

    const answer = fetch(`${base}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"model":"m","prompt":"x","stream":true}',
    });
    await until(() => steps.length === 2);
    expect([target.prefilling, target.load]).toEqual([1, 1]);

    steps[0]!();
    const response = await answer;
    expect(response.status).toBe(200);
    const reader = response.body!.getReader();
    await reader.read();
    await until(() => target.prefilling === 0, 1_000);
    expect(target.load).toBe(1);

    steps[1]!();
    while (!(await reader.read()).done) {}
    await until(() => target.load === 0);
    expect(target.prefilling).toBe(0);
  });

  it('the client’s credentials never reach a worker, unless forwardHeaders lists them', async () => {
    const healthy = await worker('healthy');
    const send = async (base: string) => {
      const response = await fetch(`${base}/v1/completions`, {
        method: 'POST',
        headers: { authorization: 'Bearer client-secret', cookie: 'session=1', 'x-other': 'o' },
        body: '{"model":"m","prompt":"x"}',
      });
      await response.arrayBuffer();
    };
    await send(await proxyOver([healthy]));
    expect(healthy.seen[0]!.authorization).toBeUndefined();
    expect(healthy.seen[0]!.cookie).toBeUndefined();
    expect(healthy.seen[0]!['x-other']).toBe('o');
    await send(await proxyOver([healthy], { forwardHeaders: ['Authorization'] }));
    expect(healthy.seen[1]!.authorization).toBe('Bearer client-secret');
    expect(healthy.seen[1]!['x-other']).toBeUndefined();
  });

  it('a failed attempt’s large body is cut short while the request is retried elsewhere', async () => {
    const failing = await worker('failing');
    const healthy = await worker('healthy');
    const base = await proxyOver([failing, healthy]);

    const response = await fetch(`${base}/v1/completions`, {
      method: 'POST',
      body: JSON.stringify({ model: 'm', prompt: 'hello' }),
    });

    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ served_by: 'healthy' });
    await until(() => failing.cut === 1);
    expect(failing.seen).toHaveLength(1);
  });

  it('when every attempt fails, relays the last status and at most 64 KiB of its body', async () => {
    const a = await worker('failing');
    const b = await worker('failing');
    const base = await proxyOver([a, b]);

    const response = await fetch(`${base}/v1/completions`, {
      method: 'POST',
      body: JSON.stringify({ model: 'm', prompt: 'hello' }),
    });

    expect(response.status).toBe(503);
    expect(response.headers.get('content-type')).toBe('application/json');
    expect((await response.arrayBuffer()).byteLength).toBe(64 * 1024);
    await until(() => a.cut === 1 && b.cut === 1);
  });
});

/** POSTs a small JSON body with exactly these headers (no content type unless given). */
function postRaw(
  url: string,
  headers: Record<string, string>,
): Promise<{ status: number; contentType: string | undefined }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', headers }, (res) => {
      res.resume();
      res.on('end', () =>
        resolve({ status: res.statusCode!, contentType: res.headers['content-type'] }),
      );
    });
    req.on('error', reject);
    req.end(JSON.stringify({ model: 'm', prompt: 'hello' }));
  });
}

async function until(condition: () => boolean, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
