/**
 * How long a new fleet takes to become routable with the default health settings: from
 * `router.start()` to `router.ready()` resolving, against real local HTTP workers on 127.0.0.1
 * that answer `/health` at once, through `fleetroute/http`. The reference is one probe's round
 * trip measured in the same run, so the figure reads as "schedule + N probes".
 *
 * Before `startupIntervalMs`, the second of the two probes `successThreshold` asks for came one
 * `intervalMs` (30 s) after the first, and nothing could be awaited.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Router, WorkerRegistry } from '../src/index.js';
import { httpTransport } from '../src/transport/http/index.js';
import { emit, fmt, median } from './harness.js';

async function healthyWorker(): Promise<{ url: string; server: Server }> {
  const server = createServer((_req, res) => res.end());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

async function timeToReady(urls: readonly string[], minWorkers: number): Promise<number> {
  const registry = await WorkerRegistry.create();
  for (const url of urls) await registry.register({ url, models: ['m'] });
  const router = new Router({ registry, transport: httpTransport(), loadPolling: false });
  const start = performance.now();
  router.start();
  await router.ready({ minWorkers, signal: AbortSignal.timeout(60_000) });
  const ms = performance.now() - start;
  await router.close();
  registry.close();
  return ms;
}

async function probeRoundTrip(url: string): Promise<number> {
  const registry = await WorkerRegistry.create();
  const worker = await registry.register({ url });
  const transport = httpTransport();
  const times: number[] = [];
  for (let i = 0; i < 20; i++) {
    const start = performance.now();
    await transport.probe(worker, AbortSignal.timeout(5_000));
    times.push(performance.now() - start);
  }
  registry.close();
  return median(times);
}

const workers = await Promise.all(Array.from({ length: 8 }, () => healthyWorker()));
const probe = await probeRoundTrip(workers[0]!.url);
const rows: string[][] = [];
for (const [label, count, min] of [
  ['1 worker, first routable', 1, 1],
  ['8 workers, first routable', 8, 1],
  ['8 workers, all routable', 8, 8],
] as const) {
  const runs: number[] = [];
  for (let i = 0; i < 5; i++)
    runs.push(
      await timeToReady(
        workers.slice(0, count).map((w) => w.url),
        min,
      ),
    );
  const ms = median(runs);
  rows.push([label, fmt(ms, 0), fmt(probe, 2), fmt(ms / probe, 0)]);
}
for (const w of workers) w.server.close();

emit({
  name: 'time-to-ready',
  tables: [
    {
      title:
        'start() → ready(), default health settings (successThreshold 2, startupIntervalMs 500)',
      columns: ['fleet', 'ms (median of 5)', 'one probe ms', 'ratio'],
      rows,
    },
  ],
  notes: [
    'Before startupIntervalMs the same fleet needed the second probe one intervalMs (30 000 ms) later.',
  ],
});
