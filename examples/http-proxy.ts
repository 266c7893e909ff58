/**
 * An OpenAI-compatible HTTP proxy in front of a fleet of vLLM or SGLang workers. Copy this file
 * into your project: it needs only `fleetroute` and Node 20 (and `prom-client` for `/metrics`).
 *
 * - `POST /v1/completions` and `POST /v1/chat/completions` are routed by fleetroute
 *   (`cache_aware` on the prompt) and forwarded to the chosen worker with retries. The client's
 *   headers go along (`traceparent`, `x-request-id`, …) except hop-by-hop ones; with a worker
 *   API key the `authorization` header is replaced by it, otherwise the client's is passed on.
 * - Streamed answers (`"stream": true`) are piped through as they arrive; the worker's load counts
 *   the request until its stream ends. A failed attempt's body is read (at most 64 KiB) or
 *   cancelled, so its connection is freed, and the last failure is relayed to the client.
 * - `GET /v1/models` lists the fleet's models (discovered from each worker's own `/v1/models`
 *   when registered by URL alone), `GET /stats` the router's counters, and `GET /metrics` the
 *   router's Prometheus metrics (`fleetroute/prometheus`) when `prom-client` is installed.
 *
 * Against your workers (Ctrl-C stops it):
 *
 *   WORKERS=http://10.0.0.1:8000,http://10.0.0.2:8000 WORKER_API_KEY=secret PORT=8080 \
 *     npx tsx http-proxy.ts
 *
 * Without `WORKERS` it runs a demo on 127.0.0.1: three small fake vLLM workers that want an API
 * key, the proxy in front of them, a few requests (same prefix → same worker, one streamed, one
 * carrying a `traceparent`), then one worker starts resetting connections and every request still
 * succeeds.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { pathToFileURL } from 'node:url';
import {
  FleetRouteError,
  Router,
  type SelectRequest,
  type Worker,
  WorkerRegistry,
} from 'fleetroute';
import { httpTransport } from 'fleetroute/http';
import { createPrometheusMetrics } from 'fleetroute/prometheus';

/** Settings of {@link createProxy}. */
export interface ProxyOptions {
  /** Sent as `Authorization: Bearer …` to workers registered without their own `apiKey`. */
  readonly workerApiKey?: string;
  /** Largest request body accepted (bytes). */
  readonly maxBodyBytes?: number;
  /** Served on `GET /metrics`: a prom-client `Registry` (see {@link prometheusMetrics}). */
  readonly metrics?: MetricsSource;
}

/** What `GET /metrics` serves: a prom-client `Registry` fits. */
export interface MetricsSource {
  readonly contentType: string;
  metrics(): Promise<string>;
}

const ROUTED = new Set(['/v1/completions', '/v1/chat/completions']);
/** Largest error body read from a failed attempt; the rest is cancelled. */
const MAX_ERROR_BODY_BYTES = 64 * 1024;
/** Headers that belong to one connection, never forwarded (RFC 9110 §7.6.1), plus framing. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'host',
  'content-length',
  // fetch decodes compressed bodies, so the encoding no longer applies to what is relayed.
  'content-encoding',
]);

/** What one attempt ended with, when it did not stream a success to the client. */
interface Upstream {
  readonly status: number;
  readonly headers?: Headers;
  readonly body?: Buffer;
}

/** The proxy: one `http.Server` over a started `Router`. */
export function createProxy(
  router: Router,
  registry: WorkerRegistry,
  options: ProxyOptions = {},
): Server {
  return createServer((req, res) => {
    handle(router, registry, options, req, res).catch((error: unknown) => {
      console.error('proxy error:', error);
      if (!res.headersSent) sendJson(res, 500, { error: { message: 'internal error' } });
      else res.destroy();
    });
  });
}

async function handle(
  router: Router,
  registry: WorkerRegistry,
  options: ProxyOptions,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const path = (req.url ?? '/').split('?')[0]!;
  if (req.method === 'GET' && path === '/v1/models') {
    const data = registry.getModels().map((id) => ({ id, object: 'model' }));
    return sendJson(res, 200, { object: 'list', data });
  }
  if (req.method === 'GET' && path === '/stats') return sendJson(res, 200, router.stats());
  if (req.method === 'GET' && path === '/metrics' && options.metrics !== undefined) {
    const text = await options.metrics.metrics();
    res.writeHead(200, { 'content-type': options.metrics.contentType });
    return void res.end(text);
  }
  if (req.method !== 'POST' || !ROUTED.has(path)) {
    return sendJson(res, 404, { error: { message: `no route for ${req.method} ${path}` } });
  }

  const raw = await readBody(req, options.maxBodyBytes ?? 16 * 1024 * 1024);
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
  const headers = forwardedHeaders(req);
  try {
    const last = await router.execute<Upstream>(
      routed,
      (worker, { signal, firstToken }) =>
        forward(worker, path, raw, headers, options, signal, res, firstToken),
      { signal: client.signal },
    );
    // Every attempt failed with a status: relay the last answer.
    if (!res.headersSent && last.body !== undefined) {
      res.writeHead(last.status, relayedHeaders(last.headers));
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
 * One attempt: a failure status is returned with its (bounded) body, so `execute` retries
 * elsewhere; any other answer is streamed to the client, and a stream that breaks after its
 * first bytes ends the call (`retryable: false`). The first chunk of the body is the first
 * token: `firstToken()` tells the router the worker is past this request's prefill.
 */
async function forward(
  worker: Worker,
  path: string,
  raw: Buffer,
  clientHeaders: Headers,
  options: ProxyOptions,
  signal: AbortSignal,
  res: ServerResponse,
  firstToken: () => void,
): Promise<Upstream> {
  const headers = new Headers(clientHeaders);
  const key = worker.apiKey ?? options.workerApiKey;
  if (key !== undefined) headers.set('authorization', `Bearer ${key}`);
  const upstream = await fetch(`${worker.baseUrl}${path}`, {
    method: 'POST',
    headers,
    body: raw,
    signal,
  });
  if (worker.circuitBreaker.config.failureStatuses.includes(upstream.status)) {
    const body = await readCapped(upstream, MAX_ERROR_BODY_BYTES);
    return { status: upstream.status, headers: upstream.headers, body };
  }
  res.writeHead(upstream.status, {
    ...relayedHeaders(upstream.headers),
    'x-served-by': worker.url,
  });
  if (upstream.body === null) {
    res.end();
    return { status: upstream.status };
  }
  try {
    const body = Readable.fromWeb(upstream.body as WebReadableStream);
    body.once('data', firstToken);
    await pipeline(body, res);
  } catch (cause) {
    throw Object.assign(new Error('the stream broke after it started', { cause }), {
      retryable: false,
    });
  }
  return { status: upstream.status };
}

/** The client's headers worth passing on: all but hop-by-hop ones; JSON unless it says else. */
function forwardedHeaders(req: IncomingMessage): Headers {
  const headers = new Headers();
  const perConnection = new Set(
    String(req.headers.connection ?? '')
      .split(',')
      .map((name) => name.trim().toLowerCase()),
  );
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined || HOP_BY_HOP.has(name) || perConnection.has(name)) continue;
    for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
  }
  if (!headers.has('content-type')) headers.set('content-type', 'application/json');
  return headers;
}

/** A worker's response headers as relayed to the client. */
function relayedHeaders(upstream: Headers | undefined): Record<string, string> {
  const out: Record<string, string> = { 'content-type': 'application/json' };
  upstream?.forEach((value, name) => {
    if (!HOP_BY_HOP.has(name)) out[name] = value;
  });
  return out;
}

/** At most `limit` bytes of a response body; the rest is cancelled, so the connection frees. */
async function readCapped(response: Response, limit: number): Promise<Buffer> {
  if (response.body === null) return Buffer.alloc(0);
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (size < limit) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.byteLength;
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
  return Buffer.concat(chunks).subarray(0, limit);
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

/** The request body, or `undefined` when it is larger than `limit` bytes. */
async function readBody(req: IncomingMessage, limit: number): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) return undefined;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

function sendJson(res: ServerResponse, status: number, value: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(value));
}

/**
 * The router's metrics on a registry of their own, for `GET /metrics`; `undefined` (with a
 * warning) when `prom-client` is not installed.
 */
export async function prometheusMetrics(
  router: Router,
  registry: WorkerRegistry,
): Promise<MetricsSource | undefined> {
  try {
    const { Registry } = await import('prom-client');
    const metrics = new Registry();
    await createPrometheusMetrics({ router, workers: registry, registry: metrics });
    return metrics;
  } catch (error) {
    console.warn(`no /metrics: ${error instanceof Error ? error.message : String(error)}`);
    return undefined;
  }
}

async function listen(server: Server, port: number, host: string): Promise<string> {
  await new Promise<void>((resolve) => server.listen(port, host, resolve));
  return `http://${host}:${(server.address() as AddressInfo).port}`;
}

// ---------------------------------------------------------------------------------------------
// Running it against real workers

async function serve(urls: string[], port: number, workerApiKey: string | undefined) {
  const registry = await WorkerRegistry.create();
  // No models: the router asks each worker's /v1/models once it is healthy.
  for (const url of urls) await registry.register({ url });
  const router = new Router({
    registry,
    transport: httpTransport(workerApiKey === undefined ? {} : { apiKey: workerApiKey }),
    policy: 'cache_aware',
  });
  router.start();
  const metrics = await prometheusMetrics(router, registry);
  const proxy = createProxy(router, registry, {
    ...(workerApiKey === undefined ? {} : { workerApiKey }),
    ...(metrics === undefined ? {} : { metrics }),
  });
  const address = await listen(proxy, port, '0.0.0.0');
  console.log(`proxying ${urls.length} workers on ${address}`);
  await router.ready({ signal: AbortSignal.timeout(600_000) }).then(
    () => console.log(`ready: ${registry.getAll().filter((w) => w.isAvailable()).length} routable`),
    (error: unknown) => console.error(`no worker became ready: ${String(error)}`),
  );
  const stop = async (): Promise<void> => {
    proxy.close();
    await router.close();
    registry.close();
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

// ---------------------------------------------------------------------------------------------
// The demo: three small fake vLLM workers on 127.0.0.1

const DEMO_MODEL = 'meta-llama/Llama-3.1-8B-Instruct';
const DEMO_KEY = 'demo-key';

interface DemoWorker {
  readonly url: string;
  /** From now on, every connection is reset. */
  die(): void;
  close(): Promise<void>;
}

/**
 * A worker that serves `/health`, `/metrics`, `/v1/models` and the completion routes (streamed
 * as server-sent events on `"stream": true`), naming itself in its answers, echoing the
 * `traceparent` it received, and refusing requests without the demo API key.
 */
async function startDemoWorker(name: string): Promise<DemoWorker> {
  let dying = false;
  let running = 0;
  const server = createServer((req, res) => {
    if (dying) return void req.socket.destroy();
    if (req.headers.authorization !== `Bearer ${DEMO_KEY}`) {
      res.writeHead(401, { 'content-type': 'application/json' });
      return void res.end('{"error":{"message":"missing or wrong API key"}}');
    }
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/health') return void res.end();
    if (path === '/metrics') {
      res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' });
      return void res.end(
        `vllm:num_requests_running{model_name="${DEMO_MODEL}"} ${running}\n` +
          `vllm:num_requests_waiting{model_name="${DEMO_MODEL}"} 0\n` +
          `vllm:kv_cache_usage_perc{model_name="${DEMO_MODEL}"} 0.1\n`,
      );
    }
    if (path === '/v1/models') {
      res.writeHead(200, { 'content-type': 'application/json' });
      return void res.end(JSON.stringify({ object: 'list', data: [{ id: DEMO_MODEL }] }));
    }
    let raw = '';
    req.on('data', (chunk: Buffer) => {
      raw += chunk;
    });
    req.on('end', () => {
      running++;
      const echo = { 'x-seen-traceparent': String(req.headers.traceparent ?? '') };
      const body = JSON.parse(raw) as { stream?: boolean };
      if (!body.stream) {
        running--;
        res.writeHead(200, { 'content-type': 'application/json', ...echo });
        return void res.end(JSON.stringify({ served_by: name, choices: [{ text: ' ok' }] }));
      }
      res.writeHead(200, { 'content-type': 'text/event-stream', ...echo });
      const words = ['Hello', ' from', ` ${name}`];
      const next = (): void => {
        const word = words.shift();
        if (word === undefined) {
          running--;
          return void res.end('data: [DONE]\n\n');
        }
        res.write(`data: ${JSON.stringify({ choices: [{ text: word }] })}\n\n`);
        setTimeout(next, 5);
      };
      next();
    });
  });
  const url = await listen(server, 0, '127.0.0.1');
  return {
    url,
    die: () => {
      dying = true;
      server.closeIdleConnections();
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function demo(): Promise<void> {
  const names = ['gpu-0', 'gpu-1', 'gpu-2'];
  const workers = await Promise.all(names.map((name) => startDemoWorker(name)));
  const nameOf = new Map(workers.map((w, i) => [w.url, names[i]!]));

  const registry = await WorkerRegistry.create();
  for (const w of workers) await registry.register({ url: w.url, runtime: 'vllm' });
  const router = new Router({
    registry,
    transport: httpTransport({ apiKey: DEMO_KEY, timeoutMs: 1_000 }),
    policy: 'cache_aware',
    health: { intervalMs: 200, timeoutMs: 500, failureThreshold: 2 },
    loadPolling: { intervalMs: 200 },
    circuitBreaker: { failureThreshold: 2 },
    retry: { initialBackoffMs: 10 },
  });
  await router.ready({ minWorkers: workers.length, signal: AbortSignal.timeout(10_000) });
  while (registry.getModels().length === 0) await sleep(10); // models discovered from /v1/models

  const metrics = await prometheusMetrics(router, registry);
  const proxy = createProxy(router, registry, {
    workerApiKey: DEMO_KEY,
    ...(metrics === undefined ? {} : { metrics }),
  });
  const base = await listen(proxy, 0, '127.0.0.1');
  console.log(`proxy on ${base} in front of ${names.join(', ')}`);
  const models = (await (await fetch(`${base}/v1/models`)).json()) as { data: { id: string }[] };
  console.log(`models: ${models.data.map((m) => m.id).join(', ')}\n`);

  const post = (path: string, body: object, headers: Record<string, string> = {}) =>
    fetch(`${base}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });

  const prompts = [
    'You are a SQL assistant. Schema: orders(id, total). Question: total revenue?',
    'You are a poet. Write about the sea.',
    'You are a SQL assistant. Schema: orders(id, total). Question: largest order?',
    'You are a poet. Write about the mountains.',
  ];
  let sqlWorker = 0; // the worker the SQL prefix went to: the one that will start failing
  for (const [i, prompt] of prompts.entries()) {
    const response = await post('/v1/completions', { model: DEMO_MODEL, prompt, max_tokens: 8 });
    await response.arrayBuffer();
    const url = response.headers.get('x-served-by') ?? '';
    if (i === 0)
      sqlWorker = Math.max(
        0,
        workers.findIndex((w) => w.url === url),
      );
    const served = nameOf.get(url);
    console.log(`${response.status} from ${served}: ${prompt.slice(0, 40)}…`);
  }

  const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
  const traced = await post(
    '/v1/completions',
    { model: DEMO_MODEL, prompt: 'hi' },
    { traceparent },
  );
  await traced.arrayBuffer();
  const seen = traced.headers.get('x-seen-traceparent');
  console.log(`traceparent ${seen === traceparent ? 'reached' : 'did not reach'} the worker`);

  const stream = await post('/v1/chat/completions', {
    model: DEMO_MODEL,
    stream: true,
    messages: [{ role: 'user', content: 'Say hello.' }],
  });
  const events = (await stream.text()).split('\n\n').filter((e) => e.startsWith('data: {'));
  const text = events.map(
    (e) => (JSON.parse(e.slice(6)) as { choices: { text: string }[] }).choices[0]!.text,
  );
  console.log(`streamed ${events.length} events: "${text.join('')}"`);

  // The worker holding the SQL prefix dies: its next SQL requests fail over to another worker.
  workers[sqlWorker]!.die();
  console.log(`\n${names[sqlWorker]} starts resetting connections`);
  let ok = 0;
  for (let i = 0; i < 12; i++) {
    const prompt = `${prompts[i % 4]} #${i}`;
    const response = await post('/v1/completions', { model: DEMO_MODEL, prompt });
    await response.arrayBuffer();
    if (response.status === 200) ok++;
  }
  const dead = registry.getByUrl(workers[sqlWorker]!.url)!;
  console.log(
    `${ok}/12 requests succeeded; ${names[sqlWorker]}'s breaker is ${dead.circuitBreaker.state}`,
  );
  const stats = router.stats();
  console.log(
    `router: ${stats.executions} requests, ${stats.attempts} attempts, ${stats.retries} retries`,
  );
  const loads = registry.getAll().map((w) => w.load);
  console.log(`loads after the run: ${loads.join(', ')}`);
  if (metrics !== undefined) {
    const scrape = await (await fetch(`${base}/metrics`)).text();
    const line = (name: string) => scrape.split('\n').find((l) => l.startsWith(name)) ?? '';
    console.log(`/metrics: ${line(`fleetroute_worker_circuit_state{worker="${dead.url}"}`)}`);
    console.log(`/metrics: ${line('fleetroute_retries_total')}`);
  }

  proxy.close();
  await router.close();
  registry.close();
  await Promise.all(workers.map((w) => w.close()));
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

// Run as a program (not when imported for `createProxy`).
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const urls = (process.env.WORKERS ?? '')
    .split(',')
    .map((u) => u.trim())
    .filter((u) => u !== '');
  if (urls.length > 0) {
    await serve(urls, Number(process.env.PORT ?? 8080), process.env.WORKER_API_KEY || undefined);
  } else {
    await demo();
  }
}
