/**
 * An OpenAI-compatible proxy in front of a fleet of vLLM or SGLang workers, on Node's `http`
 * server. `fleetroute/openai` carries every request: routed by `cache_aware` on the prompt,
 * retried on another worker until the first byte, streamed as it comes, aborted when the client
 * goes away, errors in OpenAI's shape. This file adds `/metrics` (prom-client) and `/stats`.
 *
 *   WORKERS=http://10.0.0.1:8000,http://10.0.0.2:8000 WORKER_API_KEY=secret PORT=8080 \
 *     npx tsx examples/http-proxy.ts
 *
 * Without `WORKERS` it runs a demo on 127.0.0.1 against three stand-in workers
 * (`demo-workers.ts`): same prefix → same worker, a streamed answer, a `traceparent` carried to
 * the worker, then one worker starts resetting connections and every request still succeeds.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import { Router, WorkerRegistry } from 'fleetroute';
import { httpTransport } from 'fleetroute/http';
import { createOpenAINodeHandler } from 'fleetroute/openai';
import { createPrometheusMetrics } from 'fleetroute/prometheus';
import { Registry } from 'prom-client';

/** The proxy: a started router over `urls`, served on `host:port` (0: any free port). */
export async function startProxy(
  urls: readonly string[],
  host: string,
  port: number,
  apiKey?: string,
) {
  const registry = await WorkerRegistry.create();
  for (const url of urls) await registry.register({ url }); // models: from each /v1/models
  const key = apiKey === undefined ? {} : { apiKey };
  const router = new Router({ registry, transport: httpTransport(key), policy: 'cache_aware' });
  const metrics = new Registry();
  await createPrometheusMetrics({ router, workers: registry, registry: metrics });
  const openai = createOpenAINodeHandler({ router, workerHeader: 'x-served-by', ...key });

  const server = createServer(async (req, res) => {
    if (req.method === 'GET' && req.url === '/metrics') {
      res.writeHead(200, { 'content-type': metrics.contentType });
      res.end(await metrics.metrics());
    } else if (req.method === 'GET' && req.url === '/stats') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(router.stats()));
    } else {
      await openai(req, res);
    }
  });
  await new Promise<void>((resolve) => server.listen(port, host, resolve));
  const close = async (): Promise<void> => {
    server.close();
    server.closeIdleConnections();
    await router.close();
    registry.close();
  };
  const url = `http://${host}:${(server.address() as AddressInfo).port}`;
  return { url, registry, router, close };
}

// Run as a program (not when imported).
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const urls = (process.env.WORKERS ?? '')
    .split(',')
    .map((u) => u.trim())
    .filter((u) => u !== '');
  if (urls.length > 0) {
    const port = Number(process.env.PORT ?? 8080);
    const proxy = await startProxy(urls, '0.0.0.0', port, process.env.WORKER_API_KEY || undefined);
    console.log(`proxying ${urls.length} workers on ${proxy.url}`);
    process.once('SIGINT', proxy.close);
    process.once('SIGTERM', proxy.close);
    await proxy.router.ready({ signal: AbortSignal.timeout(600_000) });
    console.log(`ready: ${proxy.registry.getAll().filter((w) => w.isAvailable()).length} routable`);
  } else {
    const { runProxyDemo } = await import('./demo-workers.js');
    await runProxyDemo(startProxy);
  }
}
