/**
 * Quickstart: the README's Router, runnable anywhere. It starts two tiny stand-in workers on
 * 127.0.0.1 (answering `/health`, `/v1/models` and `/v1/completions` as vLLM does), puts a Router
 * with the HTTP transport and `cache_aware` in front of them, and sends three prompts that share a
 * system prompt: the same worker answers all three.
 *
 * Run: `npx tsx examples/quickstart.ts`.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Router, WorkerRegistry } from 'fleetroute';
import { httpTransport } from 'fleetroute/http';

const MODEL = 'llama-3.1-8b';
const workers = [await startWorker('gpu-a'), await startWorker('gpu-b')];

const registry = await WorkerRegistry.create();
for (const { url } of workers) await registry.register({ url }); // models: from /v1/models
const router = new Router({ registry, transport: httpTransport(), policy: 'cache_aware' });
await router.ready({ minWorkers: 2, signal: AbortSignal.timeout(60_000) }); // about 0.5 s

// The same system prompt, different questions: cache_aware keeps them on one worker's cache.
const system =
  'You are a SQL assistant. Schema: orders(id, total, placed_at), customers(id, name).';
for (const question of ['Total revenue?', 'Revenue by month?', 'Top customers?']) {
  const prompt = `${system} Question: ${question}`;
  const response = await router.execute({ model: MODEL, text: prompt }, (worker, { signal }) =>
    fetch(`${worker.baseUrl}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: MODEL, prompt }),
      signal,
    }),
  );
  const answer = (await response.json()) as { choices: { text: string }[] };
  console.log(`${question.padEnd(18)} → ${answer.choices[0]?.text}`);
}

await router.close();
for (const { server } of workers) {
  server.closeAllConnections();
  server.close();
}

/** A stand-in worker named `name`: healthy, serving MODEL, answering who it is. */
async function startWorker(name: string): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    req.resume(); // the body is not read
    res.setHeader('content-type', 'application/json');
    if (req.url === '/health') return void res.end('{}');
    if (req.url === '/v1/models')
      return void res.end(JSON.stringify({ object: 'list', data: [{ id: MODEL }] }));
    if (req.method === 'POST' && req.url === '/v1/completions')
      return void res.end(
        JSON.stringify({ model: MODEL, choices: [{ text: `${name} answered` }] }),
      );
    res.statusCode = 404;
    res.end('{}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}
