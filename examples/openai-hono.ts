/**
 * fleetroute's OpenAI-compatible front in a Hono app. `createOpenAIHandler` is a fetch-standard
 * handler (`Request → Promise<Response>`): Hono mounts it as is, and so do Bun (`Bun.serve({
 * fetch })`), Deno (`Deno.serve(handler)`) and other WinterCG runtimes. Here Hono runs on Node
 * with `@hono/node-server`.
 *
 *   WORKERS=http://10.0.0.1:8000,http://10.0.0.2:8000 PORT=8080 npx tsx examples/openai-hono.ts
 *
 * Without `WORKERS`, it starts a stand-in worker, asks the app for one streamed answer, and stops.
 */
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { Router, WorkerRegistry } from 'fleetroute';
import { httpTransport } from 'fleetroute/http';
import { createOpenAIHandler } from 'fleetroute/openai';
import { Hono } from 'hono';

const demo = (process.env.WORKERS ?? '') === '' ? await import('./demo-workers.js') : undefined;
const workers = demo === undefined ? [] : await demo.startDemoWorkers(['gpu-0']);
const urls = demo === undefined ? process.env.WORKERS!.split(',') : workers.map((w) => w.url);
const apiKey = demo?.DEMO_KEY ?? process.env.WORKER_API_KEY;

const registry = await WorkerRegistry.create();
for (const url of urls) await registry.register({ url });
const router = new Router({ registry, transport: httpTransport(apiKey ? { apiKey } : {}) });

const app = new Hono();
app.get('/healthz', (c) => c.text('ok'));
app.mount('/', createOpenAIHandler({ router, ...(apiKey ? { apiKey } : {}) }));
const hostname = demo ? '127.0.0.1' : '0.0.0.0';
const port = demo ? 0 : Number(process.env.PORT ?? 8080);
const server = await new Promise<ReturnType<typeof serve>>((resolve) => {
  const s = serve({ fetch: app.fetch, hostname, port }, () => resolve(s));
});
const url = `http://${hostname}:${(server.address() as AddressInfo).port}`;
console.log(`listening on ${url}`);
await router.ready({ signal: AbortSignal.timeout(600_000) });

if (demo !== undefined) {
  await demo.askOnce(url);
  server.close();
  await router.close();
  await Promise.all(workers.map((w) => w.close()));
}
