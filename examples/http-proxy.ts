/**
 * An OpenAI-compatible HTTP proxy in front of a fleet. `POST /v1/completions` and
 * `POST /v1/chat/completions` are routed by fleetroute (`cache_aware` on the prompt) and forwarded
 * to the chosen worker with retries; streamed answers (`"stream": true`) are piped through as
 * they arrive, and the worker's load counts the request until its stream ends. `GET /v1/models`
 * lists the fleet's models, `GET /stats` the router's counters.
 *
 * Against your workers (health checks and load polling over HTTP; Ctrl-C stops it):
 *
 *   WORKERS=http://10.0.0.1:8000,http://10.0.0.2:8000 PORT=8080 npx tsx examples/http-proxy.ts
 *
 * Without `WORKERS` it runs a demo on 127.0.0.1: three fake vLLM workers (the loopback servers
 * the tests use), the proxy in front of them, a few requests (same prefix → same worker, one
 * streamed), then one worker starts resetting connections and the requests still succeed.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  FleetRouteError,
  Router,
  type SelectRequest,
  type Worker,
  WorkerRegistry,
} from 'fleetroute';
import { httpTransport } from 'fleetroute/http';
import {
  type Route,
  reset,
  startFakeWorker,
  vllmRoutes,
} from '../test/transport/http/support/fake-worker.js';

const ROUTED = new Set(['/v1/completions', '/v1/chat/completions']);
const MAX_BODY_BYTES = 16 * 1024 * 1024;

/** What one attempt ended with, when it did not stream a success to the client. */
interface Upstream {
  readonly status: number;
  readonly headers?: Headers;
  readonly body?: string;
}

/** The proxy: one `http.Server` over a started `Router`. */
export function createProxy(router: Router, registry: WorkerRegistry): Server {
  return createServer((req, res) => {
    handle(router, registry, req, res).catch((error: unknown) => {
      console.error('proxy error:', error);
      if (!res.headersSent) sendJson(res, 500, { error: { message: 'internal error' } });
      else res.destroy();
    });
  });
}

async function handle(
  router: Router,
  registry: WorkerRegistry,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const path = (req.url ?? '/').split('?')[0]!;
  if (req.method === 'GET' && path === '/v1/models') {
    const ids = new Set(registry.getAll().flatMap((w) => w.models));
    sendJson(res, 200, { object: 'list', data: [...ids].map((id) => ({ id, object: 'model' })) });
    return;
  }
  if (req.method === 'GET' && path === '/stats') return sendJson(res, 200, router.stats());
  if (req.method !== 'POST' || !ROUTED.has(path)) {
    return sendJson(res, 404, { error: { message: `no route for ${req.method} ${path}` } });
  }

  const raw = await readBody(req);
  if (raw === undefined) return sendJson(res, 413, { error: { message: 'body too large' } });
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(raw.toString('utf8')) as Record<string, unknown>;
    if (typeof body !== 'object' || body === null) throw new Error('not an object');
  } catch {
    return sendJson(res, 400, { error: { message: 'the body is not a JSON object' } });
  }

  // The client going away aborts the attempt in flight (and is not held against the worker).
  const client = new AbortController();
  res.on('close', () => {
    if (!res.writableFinished) client.abort(new Error('the client went away'));
  });
  const prompt = promptOf(body);
  const routed: SelectRequest = {
    headers: req.headers,
    ...(typeof body.model === 'string' ? { model: body.model } : {}),
    ...(prompt === undefined ? {} : { text: prompt }),
  };
  try {
    const last = await router.execute<Upstream>(
      routed,
      (worker, { signal }) => forward(worker, path, raw, signal, res),
      { signal: client.signal },
    );
    // Every attempt failed with a status: relay the last answer.
    if (!res.headersSent && last.body !== undefined) {
      res.writeHead(last.status, {
        'content-type': last.headers?.get('content-type') ?? 'application/json',
      });
      res.end(last.body);
    }
  } catch (error) {
    if (client.signal.aborted) return;
    if (res.headersSent) {
      res.destroy(); // a stream broke midway: the client sees a truncated answer, not a wrong one
      return;
    }
    const noWorker = error instanceof FleetRouteError && error.code === 'NO_WORKER';
    sendJson(res, noWorker ? 503 : 502, {
      error: { message: noWorker ? error.message : 'every attempt failed' },
    });
  }
}

/**
 * One attempt: a failure status is returned (so `execute` retries elsewhere), a success is
 * streamed to the client, and a stream that breaks after its first bytes ends the call.
 */
async function forward(
  worker: Worker,
  path: string,
  raw: Buffer,
  signal: AbortSignal,
  res: ServerResponse,
): Promise<Upstream> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (worker.apiKey !== undefined) headers.authorization = `Bearer ${worker.apiKey}`;
  const upstream = await fetch(`${worker.baseUrl}${path}`, {
    method: 'POST',
    headers,
    body: raw,
    signal,
  });
  if (worker.circuitBreaker.config.failureStatuses.includes(upstream.status)) {
    return { status: upstream.status, headers: upstream.headers, body: await upstream.text() };
  }
  res.writeHead(upstream.status, {
    'content-type': upstream.headers.get('content-type') ?? 'application/json',
    'x-served-by': worker.url,
  });
  if (upstream.body === null) {
    res.end();
    return { status: upstream.status };
  }
  try {
    await pipeline(
      Readable.fromWeb(upstream.body as import('node:stream/web').ReadableStream),
      res,
    );
  } catch (cause) {
    throw Object.assign(new Error('the stream broke after it started', { cause }), {
      retryable: false,
    });
  }
  return { status: upstream.status };
}

/** The text the cache-aware policy matches on: the prompt, or the chat messages in order. */
function promptOf(body: Record<string, unknown>): string | undefined {
  if (typeof body.prompt === 'string') return body.prompt;
  if (!Array.isArray(body.messages)) return undefined;
  let text = '';
  for (const message of body.messages as { role?: unknown; content?: unknown }[]) {
    if (typeof message?.content === 'string')
      text += `${String(message.role)}: ${message.content}\n`;
  }
  return text;
}

/** The request body, or `undefined` when it is larger than {@link MAX_BODY_BYTES}. */
async function readBody(req: IncomingMessage): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) return undefined;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

function sendJson(res: ServerResponse, status: number, value: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(value));
}

async function listen(server: Server, port: number): Promise<string> {
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

// ---------------------------------------------------------------------------------------------
// Running it

async function serve(urls: string[], port: number): Promise<void> {
  const registry = await WorkerRegistry.create();
  for (const url of urls) await registry.register({ url }); // no models: serves every model
  const router = new Router({ registry, transport: httpTransport(), policy: 'cache_aware' });
  router.start();
  const proxy = createProxy(router, registry);
  console.log(`proxying ${urls.length} workers on ${await listen(proxy, port)}`);
  const stop = async (): Promise<void> => {
    proxy.close();
    await router.close();
    registry.close();
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

/** A completion route that names its worker; `"stream": true` answers in server-sent events. */
function completions(name: string): Route {
  return (req, res) => {
    let raw = '';
    req.on('data', (chunk: Buffer) => {
      raw += chunk;
    });
    req.on('end', () => {
      const body = JSON.parse(raw) as { stream?: boolean };
      if (!body.stream) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            object: 'text_completion',
            served_by: name,
            choices: [{ text: ' ok' }],
          }),
        );
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const words = ['Hello', ' from', ` ${name}`];
      const next = (): void => {
        const word = words.shift();
        if (word === undefined) {
          res.end('data: [DONE]\n\n');
          return;
        }
        res.write(`data: ${JSON.stringify({ choices: [{ text: word }] })}\n\n`);
        setTimeout(next, 5);
      };
      next();
    });
  };
}

async function demo(): Promise<void> {
  const model = 'meta-llama/Llama-3.1-8B-Instruct';
  const names = ['gpu-0', 'gpu-1', 'gpu-2'];
  const workers = await Promise.all(
    names.map((name) =>
      startFakeWorker({
        ...vllmRoutes(),
        '/v1/completions': completions(name),
        '/v1/chat/completions': completions(name),
      }),
    ),
  );
  const nameOf = new Map(workers.map((w, i) => [w.url, names[i]!]));

  const registry = await WorkerRegistry.create();
  for (const w of workers)
    await registry.register({ url: w.url, models: [model], runtime: 'vllm' });
  const router = new Router({
    registry,
    transport: httpTransport({ timeoutMs: 1_000 }),
    policy: 'cache_aware',
    health: { intervalMs: 200, timeoutMs: 500, successThreshold: 1, failureThreshold: 2 },
    loadPolling: { intervalMs: 200 },
    circuitBreaker: { failureThreshold: 2 },
    retry: { initialBackoffMs: 10 },
    reportLeakedLeases: true,
  });
  router.start();
  while (!registry.getAll().every((w) => w.status === 'ready')) await sleep(20);

  const proxy = createProxy(router, registry);
  const base = await listen(proxy, 0);
  console.log(`proxy on ${base} in front of ${names.join(', ')}\n`);

  const post = async (path: string, body: object): Promise<Response> =>
    fetch(`${base}${path}`, { method: 'POST', body: JSON.stringify(body) });

  const prompts = [
    'You are a SQL assistant. Schema: orders(id, total). Question: total revenue?',
    'You are a poet. Write about the sea.',
    'You are a SQL assistant. Schema: orders(id, total). Question: largest order?',
    'You are a poet. Write about the mountains.',
  ];
  for (const prompt of prompts) {
    const response = await post('/v1/completions', { model, prompt, max_tokens: 8 });
    const served = nameOf.get(response.headers.get('x-served-by') ?? '');
    console.log(`${response.status} from ${served}: ${prompt.slice(0, 40)}…`);
  }

  const stream = await post('/v1/chat/completions', {
    model,
    stream: true,
    messages: [{ role: 'user', content: 'Say hello.' }],
  });
  const events = (await stream.text()).split('\n\n').filter((e) => e.startsWith('data: {'));
  const text = events.map(
    (e) => (JSON.parse(e.slice(6)) as { choices: { text: string }[] }).choices[0]!.text,
  );
  console.log(`\nstreamed ${events.length} events: "${text.join('')}"`);

  // One worker starts resetting every connection.
  const dying = workers[0]!;
  for (const path of ['/v1/completions', '/v1/chat/completions', '/health', '/metrics'])
    dying.route(path, reset);
  console.log(`\n${names[0]} starts resetting connections`);
  let ok = 0;
  for (let i = 0; i < 12; i++) {
    const response = await post('/v1/completions', { model, prompt: `${prompts[i % 4]} #${i}` });
    if (response.status === 200) ok++;
    await response.arrayBuffer();
  }
  const dead = registry.getByUrl(dying.url)!;
  console.log(`${ok}/12 requests succeeded; ${names[0]}'s breaker is ${dead.circuitBreaker.state}`);
  const stats = router.stats();
  console.log(
    `router: ${stats.executions} requests, ${stats.attempts} attempts, ${stats.retries} retries`,
  );
  console.log(
    `loads after the run: ${registry
      .getAll()
      .map((w) => w.load)
      .join(', ')}`,
  );

  proxy.close();
  await router.close();
  registry.close();
  await Promise.all(workers.map((w) => w.close()));
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

const urls = (process.env.WORKERS ?? '')
  .split(',')
  .map((u) => u.trim())
  .filter((u) => u !== '');
if (urls.length > 0) await serve(urls, Number(process.env.PORT ?? 8080));
else await demo();
