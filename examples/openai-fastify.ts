/**
 * fleetroute's OpenAI-compatible front in a Fastify app: `app.register(openAIFastify, { router })`
 * serves `/v1/chat/completions`, `/v1/completions` and `/v1/models`; the app's other routes are
 * its own.
 *
 *   WORKERS=http://10.0.0.1:8000,http://10.0.0.2:8000 PORT=8080 npx tsx examples/openai-fastify.ts
 *
 * Without `WORKERS`, it starts a stand-in worker, asks the app for one streamed answer, and stops.
 */

import Fastify from 'fastify';
import { Router, WorkerRegistry } from 'fleetroute';
import { httpTransport } from 'fleetroute/http';
import { openAIFastify } from 'fleetroute/openai';

const demo = (process.env.WORKERS ?? '') === '' ? await import('./demo-workers.js') : undefined;
const workers = demo === undefined ? [] : await demo.startDemoWorkers(['gpu-0']);
const urls = demo === undefined ? process.env.WORKERS!.split(',') : workers.map((w) => w.url);
const apiKey = demo?.DEMO_KEY ?? process.env.WORKER_API_KEY;

const registry = await WorkerRegistry.create();
for (const url of urls) await registry.register({ url });
const router = new Router({ registry, transport: httpTransport(apiKey ? { apiKey } : {}) });

const app = Fastify();
app.get('/healthz', async () => 'ok');
await app.register(openAIFastify, { router, ...(apiKey ? { apiKey } : {}) });
const url = await app.listen({
  port: demo ? 0 : Number(process.env.PORT ?? 8080),
  host: demo ? '127.0.0.1' : '0.0.0.0',
});
console.log(`listening on ${url}`);
await router.ready({ signal: AbortSignal.timeout(600_000) });

if (demo !== undefined) {
  await demo.askOnce(url);
  await app.close();
  await router.close();
  await Promise.all(workers.map((w) => w.close()));
}
