/**
 * fleetroute's OpenAI-compatible front in an Express app: `app.use(openAIExpress({ router }))`
 * answers `/v1/chat/completions`, `/v1/completions` and `/v1/models` and passes every other path
 * on. Put it before `express.json()`, or after: it uses a body already parsed.
 *
 *   WORKERS=http://10.0.0.1:8000,http://10.0.0.2:8000 PORT=8080 npx tsx examples/openai-express.ts
 *
 * Without `WORKERS`, it starts a stand-in worker, asks the app for one streamed answer, and stops.
 */
import type { AddressInfo } from 'node:net';
import express from 'express';
import { Router, WorkerRegistry } from 'fleetroute';
import { httpTransport } from 'fleetroute/http';
import { openAIExpress } from 'fleetroute/openai';

const demo = (process.env.WORKERS ?? '') === '' ? await import('./demo-workers.js') : undefined;
const workers = demo === undefined ? [] : await demo.startDemoWorkers(['gpu-0']);
const urls = demo === undefined ? process.env.WORKERS!.split(',') : workers.map((w) => w.url);
const apiKey = demo?.DEMO_KEY ?? process.env.WORKER_API_KEY;

const registry = await WorkerRegistry.create();
for (const url of urls) await registry.register({ url });
const router = new Router({ registry, transport: httpTransport(apiKey ? { apiKey } : {}) });

const app = express();
app.get('/healthz', (_req, res) => void res.send('ok'));
app.use(openAIExpress({ router, ...(apiKey ? { apiKey } : {}) }));
const host = demo ? '127.0.0.1' : '0.0.0.0';
const server = app.listen(demo ? 0 : Number(process.env.PORT ?? 8080), host);
await new Promise((resolve) => server.once('listening', resolve));
const url = `http://${host}:${(server.address() as AddressInfo).port}`;
console.log(`listening on ${url}`);
await router.ready({ signal: AbortSignal.timeout(600_000) });

if (demo !== undefined) {
  await demo.askOnce(url);
  server.close();
  server.closeIdleConnections();
  await router.close();
  await Promise.all(workers.map((w) => w.close()));
}
