/**
 * The HTTP transport against a tiny fake vLLM server that this script starts on 127.0.0.1:
 * probe its health, poll its load (twice, so throughput can be derived from the token counter),
 * list its models, feed the loads to a policy, then close everything.
 *
 * Run: `npx tsx examples/http-transport.ts`.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createPolicy, type LoadReport, WorkerRegistry } from 'fleetroute';
import { httpTransport } from 'fleetroute/http';

const API_KEY = 'sk-example-only';

// A fake vLLM: /health, /metrics (Prometheus text) and /v1/models, behind a bearer key.
const startedAt = performance.now();
const server = createServer((request, response) => {
  if (request.headers.authorization !== `Bearer ${API_KEY}`) {
    response.writeHead(401, { 'content-type': 'application/json' });
    response.end('{"error":"Unauthorized"}');
    return;
  }
  if (request.url === '/health') {
    response.end();
  } else if (request.url === '/metrics') {
    // About 400 generated tokens per second since the server started.
    const generated = Math.round((performance.now() - startedAt) * 0.4);
    response.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' });
    response.end(
      [
        '# HELP vllm:num_requests_running Number of requests in model execution batches.',
        '# TYPE vllm:num_requests_running gauge',
        'vllm:num_requests_running{engine="0",model_name="llama-3.1-8b"} 6.0',
        '# TYPE vllm:num_requests_waiting gauge',
        'vllm:num_requests_waiting{engine="0",model_name="llama-3.1-8b"} 1.0',
        '# TYPE vllm:kv_cache_usage_perc gauge',
        'vllm:kv_cache_usage_perc{engine="0",model_name="llama-3.1-8b"} 0.42',
        '# TYPE vllm:generation_tokens_total counter',
        `vllm:generation_tokens_total{engine="0",model_name="llama-3.1-8b"} ${generated}.0`,
        '',
      ].join('\n'),
    );
  } else if (request.url === '/v1/models') {
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(
      JSON.stringify({ object: 'list', data: [{ id: 'llama-3.1-8b', object: 'model' }] }),
    );
  } else {
    response.writeHead(404);
    response.end();
  }
});
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const { port } = server.address() as AddressInfo;

const registry = await WorkerRegistry.create({ defaultStatus: 'pending' });
const worker = await registry.register({
  url: `http://127.0.0.1:${port}`,
  models: ['llama-3.1-8b'],
  runtime: 'vllm',
  apiKey: API_KEY, // the worker's own key wins over the transport's `apiKey`
});
const transport = httpTransport({ timeoutMs: 2_000 });

// Health: a router does this on an interval; here, once.
const healthy = await transport.probe(worker);
console.log(`probe ${worker.url}/health → ${healthy}`);
if (healthy) await registry.transitionStatus(worker.id, 'ready');

// Load: two scrapes a little more than a second apart, so throughput can be derived.
let report: LoadReport | undefined;
for (let poll = 1; poll <= 2; poll++) {
  if (poll > 1) await new Promise((resolve) => setTimeout(resolve, 1_100));
  report = await transport.loads(worker);
  console.log(`loads #${poll} →`, report);
}

// Models, in OpenAI format.
console.log('models →', await transport.models(worker));

// A policy reads the polled loads by worker URL.
const policy = createPolicy('power_of_two');
if (report !== undefined) policy.updateLoads(new Map([[worker.url, report]]));
console.log('selected →', policy.select(registry.getByModel('llama-3.1-8b'))?.url);

// A router's signal ends a call early; with no answer, probe is false rather than throwing.
const closing = new AbortController();
closing.abort();
console.log('probe after abort →', await transport.probe(worker, closing.signal));

registry.close();
server.closeAllConnections();
await new Promise<void>((resolve) => server.close(() => resolve()));
console.log('closed');
