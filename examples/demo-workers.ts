/**
 * Small stand-ins for vLLM workers on 127.0.0.1, for the examples' demos: each serves `/health`,
 * `/metrics`, `/v1/models` and the completion routes (streamed as server-sent events on
 * `"stream": true`, with the final usage chunk when asked), names itself in its answers, echoes
 * the `traceparent` it received, and refuses requests without the demo API key. `die()` makes it
 * reset every connection from then on.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export const DEMO_MODEL = 'meta-llama/Llama-3.1-8B-Instruct';
export const DEMO_KEY = 'demo-key';

export interface DemoWorker {
  readonly name: string;
  readonly url: string;
  /** From now on, every connection is reset. */
  die(): void;
  close(): Promise<void>;
}

/** Starts one demo worker per name. */
export function startDemoWorkers(names: readonly string[]): Promise<DemoWorker[]> {
  return Promise.all(names.map((name) => startDemoWorker(name)));
}

async function startDemoWorker(name: string): Promise<DemoWorker> {
  let dying = false;
  let running = 0;
  const server: Server = createServer((req, res) => {
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
      const body = JSON.parse(raw) as {
        stream?: boolean;
        stream_options?: { include_usage?: boolean };
      };
      const chat = path === '/v1/chat/completions';
      const words = ['Hello', ' from', ` ${name}`];
      const usage = {
        prompt_tokens: raw.length >> 2,
        completion_tokens: words.length,
        total_tokens: (raw.length >> 2) + words.length,
      };
      const choice = (text: string) =>
        chat ? { index: 0, delta: { content: text } } : { index: 0, text };
      if (!body.stream) {
        running--;
        res.writeHead(200, { 'content-type': 'application/json', ...echo });
        const text = words.join('');
        const only = chat
          ? { index: 0, message: { role: 'assistant', content: text } }
          : { index: 0, text };
        return void res.end(JSON.stringify({ served_by: name, choices: [only], usage }));
      }
      res.writeHead(200, { 'content-type': 'text/event-stream', ...echo });
      const next = (): void => {
        const word = words.shift();
        if (word !== undefined) {
          res.write(`data: ${JSON.stringify({ choices: [choice(word)] })}\n\n`);
          return void setTimeout(next, 5);
        }
        running--;
        if (body.stream_options?.include_usage)
          res.write(`data: ${JSON.stringify({ choices: [], usage })}\n\n`);
        res.end('data: [DONE]\n\n');
      };
      next();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    name,
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

/** What {@link runProxyDemo} needs of the proxy (`startProxy` in `http-proxy.ts`). */
type StartProxy = (
  urls: readonly string[],
  host: string,
  port: number,
  apiKey?: string,
) => Promise<{
  readonly url: string;
  readonly registry: {
    getAll(): readonly { url: string; load: number; circuitBreaker: { state: string } }[];
    getModels(): readonly string[];
  };
  readonly router: {
    ready(options: { minWorkers: number; signal: AbortSignal }): Promise<void>;
    stats(): { executions: number; attempts: number; retries: number };
  };
  close(): Promise<void>;
}>;

/**
 * The proxy demo: three workers, the proxy in front, requests that show affinity, streaming and a
 * `traceparent` carried along; then the worker holding the SQL prefix dies and every request
 * still succeeds.
 */
export async function runProxyDemo(startProxy: StartProxy): Promise<void> {
  const workers = await startDemoWorkers(['gpu-0', 'gpu-1', 'gpu-2']);
  const nameOf = new Map(workers.map((w) => [w.url, w.name]));
  const proxy = await startProxy(
    workers.map((w) => w.url),
    '127.0.0.1',
    0,
    DEMO_KEY,
  );
  await proxy.router.ready({ minWorkers: 3, signal: AbortSignal.timeout(10_000) });
  while (proxy.registry.getModels().length === 0) await new Promise((r) => setTimeout(r, 10));
  console.log(`proxy on ${proxy.url} in front of ${workers.map((w) => w.name).join(', ')}`);
  const models = (await (await fetch(`${proxy.url}/v1/models`)).json()) as {
    data: { id: string }[];
  };
  console.log(`models: ${models.data.map((m) => m.id).join(', ')}\n`);

  const post = (path: string, body: object, headers: Record<string, string> = {}) =>
    fetch(`${proxy.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ model: DEMO_MODEL, ...body }),
    });
  const prompts = [
    'You are a SQL assistant. Schema: orders(id, total). Question: total revenue?',
    'You are a poet. Write about the sea.',
    'You are a SQL assistant. Schema: orders(id, total). Question: largest order?',
    'You are a poet. Write about the mountains.',
  ];
  let sqlWorker = workers[0]!;
  for (const [i, prompt] of prompts.entries()) {
    const response = await post('/v1/completions', { prompt, max_tokens: 8 });
    await response.arrayBuffer();
    const served = response.headers.get('x-served-by') ?? '';
    if (i === 0) sqlWorker = workers.find((w) => w.url === served) ?? sqlWorker;
    console.log(`${response.status} from ${nameOf.get(served)}: ${prompt.slice(0, 40)}…`);
  }

  const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
  const traced = await post('/v1/completions', { prompt: 'hi' }, { traceparent });
  await traced.arrayBuffer();
  const reached = traced.headers.get('x-seen-traceparent') === traceparent;
  console.log(`traceparent ${reached ? 'reached' : 'did not reach'} the worker`);

  const stream = await post('/v1/chat/completions', {
    stream: true,
    messages: [{ role: 'user', content: [{ type: 'text', text: 'Say hello.' }] }],
  });
  const events = (await stream.text()).split('\n\n').filter((e) => e.startsWith('data: {'));
  const text = events.map(
    (e) =>
      (JSON.parse(e.slice(6)) as { choices: { delta: { content: string } }[] }).choices[0]!.delta
        .content,
  );
  console.log(`streamed ${events.length} events: "${text.join('')}"`);

  sqlWorker.die();
  console.log(`\n${sqlWorker.name} starts resetting connections`);
  let ok = 0;
  for (let i = 0; i < 12; i++) {
    const response = await post('/v1/completions', { prompt: `${prompts[i % 4]} #${i}` });
    await response.arrayBuffer();
    if (response.status === 200) ok++;
  }
  const dead = proxy.registry.getAll().find((w) => w.url === sqlWorker.url)!;
  console.log(
    `${ok}/12 requests succeeded; ${sqlWorker.name}'s breaker is ${dead.circuitBreaker.state}`,
  );
  const stats = proxy.router.stats();
  console.log(
    `router: ${stats.executions} requests, ${stats.attempts} attempts, ${stats.retries} retries`,
  );
  console.log(
    `loads after the run: ${proxy.registry
      .getAll()
      .map((w) => w.load)
      .join(', ')}`,
  );
  const scrape = await (await fetch(`${proxy.url}/metrics`)).text();
  const line = (name: string) => scrape.split('\n').find((l) => l.startsWith(name)) ?? '';
  console.log(`/metrics: ${line(`fleetroute_worker_circuit_state{worker="${dead.url}"}`)}`);
  console.log(`/metrics: ${line('fleetroute_retries_total')}`);
  await proxy.close();
  await Promise.all(workers.map((w) => w.close()));
}

/** Lists the models, then asks for one streamed chat answer and prints it (the framework demos). */
export async function askOnce(url: string): Promise<void> {
  while (true) {
    const models = (await (await fetch(`${url}/v1/models`)).json()) as { data: { id: string }[] };
    if (models.data.length > 0) {
      console.log(`models: ${models.data.map((m) => m.id).join(', ')}`);
      break;
    }
    await new Promise((r) => setTimeout(r, 10)); // discovered from the worker's /v1/models
  }
  const response = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      model: DEMO_MODEL,
      stream: true,
      messages: [{ role: 'user', content: 'Hi' }],
    }),
  });
  const events = (await response.text()).split('\n\n').filter((e) => e.startsWith('data: {'));
  const text = events.map(
    (e) =>
      (JSON.parse(e.slice(6)) as { choices: { delta: { content: string } }[] }).choices[0]!.delta
        .content,
  );
  console.log(`streamed: "${text.join('')}"`);
}
