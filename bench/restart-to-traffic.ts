/**
 * How soon an engine that died and restarted gets traffic again: the time from its restart (it
 * listens again on its port) to the first request the router sends it, under steady traffic,
 * over real HTTP — three stand-in vLLM engines on 127.0.0.1 (`test/support/vllm-engine.ts`),
 * `fleetroute/http`, `round_robin`, a request every 10 ms, the default breaker (`openMs` 30 s).
 *
 * The breaker of the dead engine opens within a few requests. It turns half-open when the health
 * loop sees the engine back — the worker returns from `not_ready` to `ready`, or a probe succeeds
 * after one failed while the breaker was open — and otherwise after `openMs`. The last column is
 * when `openMs` alone would have let a first trial through (30 s after the breaker last opened),
 * counted from the restart: what the router did before health recovery half-opened breakers.
 *
 * Run: `npx tsx bench/restart-to-traffic.ts` (about five minutes: the default probe interval is
 * 30 s). Not part of `bench/run.ts`: its figures are seconds of schedule, not ratios.
 */
import { type HealthConfig, Router, type Worker, WorkerRegistry } from '../src/index.js';
import { httpTransport } from '../src/transport/http/index.js';
import { type StandInEngine, startStandInEngine } from '../test/support/vllm-engine.js';
import { emit, fmt, median } from './harness.js';

const OPEN_MS = 30_000; // the breaker's default
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(what: string, condition: () => boolean, ms: number): Promise<void> {
  const deadline = performance.now() + ms;
  while (!condition()) {
    if (performance.now() > deadline) throw new Error(`not reached in ${ms} ms: ${what}`);
    await sleep(5);
  }
}

interface Trial {
  /** Restart → the first request routed to the engine. */
  readonly routedMs: number;
  /** Restart → when `openMs` alone would have admitted a trial (0: already over). */
  readonly openMsAloneMs: number;
  /** How the breaker came back: `not_ready → ready`, or a probe while it stayed ready. */
  readonly path: string;
}

/** One engine of three dies while traffic flows, stays down `downMs`, and restarts. */
async function trial(health: HealthConfig, downMs: number): Promise<Trial> {
  const engines: StandInEngine[] = [];
  for (let i = 0; i < 3; i++) engines.push(await startStandInEngine());
  const model = engines[0]!.model;
  const registry = await WorkerRegistry.create();
  for (const engine of engines) await registry.register({ url: engine.url, models: [model] });
  const router = new Router({
    registry,
    transport: httpTransport(),
    policy: 'round_robin',
    health,
    loadPolling: false,
  });
  await router.ready({ minWorkers: 3, signal: AbortSignal.timeout(30_000) });
  const victim = engines[1]!;
  const worker = registry.getByUrl(victim.url)!;
  let lastOpenAt = Number.NaN;
  let wentNotReady = false;
  router.on('circuitChanged', (e) => {
    if (e.workerId === worker.id && e.to === 'open') lastOpenAt = performance.now();
  });
  router.on('statusChanged', (e) => {
    if (e.workerId === worker.id && e.to === 'not_ready') wentNotReady = true;
  });

  let flowing = true;
  const send = async (w: Worker, { signal }: { signal: AbortSignal }) => {
    const response = await fetch(`${w.baseUrl}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model, prompt: 'Hello', max_tokens: 2 }),
      signal,
    });
    await response.arrayBuffer();
    return { status: response.status };
  };
  const traffic = (async () => {
    while (flowing) {
      await router.execute({ model }, send).catch(() => undefined);
      await sleep(10);
    }
  })();

  await until('the engine serves', () => victim.requests.length >= 3, 10_000);
  await victim.stop();
  await until('its breaker opens', () => worker.circuitBreaker.state === 'open', 10_000);
  await sleep(downMs);
  const served = victim.requests.length;
  const restartAt = performance.now();
  await victim.restart();
  await victim.received(served + 1);
  const routedMs = performance.now() - restartAt;

  flowing = false;
  await traffic;
  await router.close();
  registry.close();
  for (const engine of engines) await engine.stop();
  return {
    routedMs,
    openMsAloneMs: Math.max(0, lastOpenAt + OPEN_MS - restartAt),
    path: wentNotReady ? 'not_ready → ready' : 'stayed ready',
  };
}

const cases: readonly [string, HealthConfig, number, number][] = [
  ['health.intervalMs 1 s, engine down 5 s', { intervalMs: 1_000 }, 5_000, 5],
  ['default health (30 s), engine down 45 s', {}, 45_000, 3],
  ['default health (30 s), engine down 5 s', {}, 5_000, 2],
];
const rows: string[][] = [];
for (const [label, health, downMs, runs] of cases) {
  const trials: Trial[] = [];
  for (let i = 0; i < runs; i++) trials.push(await trial(health, downMs));
  const routed = trials.map((t) => t.routedMs);
  rows.push([
    label,
    String(runs),
    fmt(median(routed), 0),
    `${fmt(Math.min(...routed), 0)} – ${fmt(Math.max(...routed), 0)}`,
    [...new Set(trials.map((t) => t.path))].join(', '),
    fmt(median(trials.map((t) => t.openMsAloneMs)), 0),
  ]);
}

emit({
  name: 'restart-to-traffic',
  tables: [
    {
      title: 'an engine restarted under steady traffic: restart → its first routed request (ms)',
      columns: ['setting', 'runs', 'median', 'min – max', 'status path', 'openMs alone (median)'],
      rows,
    },
  ],
  notes: [
    'A request every 10 ms over three engines, round_robin; successThreshold 2, failureThreshold 3, openMs 30 s.',
    'openMs alone: when the open period would have let a first trial through, counted from the restart.',
  ],
});
