/**
 * The Router over an in-memory transport: workers become ready through health probes, one of
 * them starts failing, its breaker opens, and every request still succeeds through retries.
 *
 * Run: `npx tsx examples/router.ts`.
 */
import { Router, type Transport, type Worker, WorkerRegistry } from 'fleetroute';

const broken = new Set<string>();
const transport: Transport = {
  probe: async (worker: Worker) => !broken.has(worker.url),
  loads: async (worker: Worker) => ({
    runningRequests: worker.load,
    tokenUsage: Math.random() * 0.5,
  }),
};

const registry = await WorkerRegistry.create(); // workers start 'pending'
for (let i = 1; i <= 4; i++)
  await registry.register({ url: `http://10.0.0.${i}:8000`, models: ['llama-3.1-8b'] });

const router = new Router({
  registry,
  transport,
  policy: 'least_load',
  health: { intervalMs: 50, timeoutMs: 20, successThreshold: 2, failureThreshold: 2 },
  loadPolling: { intervalMs: 100 },
  circuitBreaker: { failureThreshold: 2, openMs: 10_000 },
  retry: { maxAttempts: 3, initialBackoffMs: 5 },
});
router.on('circuitChanged', ({ url, from, to }) => console.log(`breaker ${url}: ${from} → ${to}`));
registry.on('statusChanged', ({ worker, from, to }) =>
  console.log(`status  ${worker.url}: ${from} → ${to}`),
);
router.start();
await new Promise((resolve) => setTimeout(resolve, 120)); // two probes each: pending → ready

// The "model server": worker 3 starts resetting connections.
broken.add('http://10.0.0.3:8000');
const send = async (worker: Worker) => {
  if (broken.has(worker.url)) throw new Error('ECONNRESET');
  return { status: 200, servedBy: worker.url };
};

const servedBy = new Map<string, number>();
for (let r = 0; r < 40; r++) {
  const response = await router.execute({ model: 'llama-3.1-8b' }, send);
  servedBy.set(response.servedBy, (servedBy.get(response.servedBy) ?? 0) + 1);
}
console.log('\n40 requests, all succeeded:', Object.fromEntries(servedBy));
await new Promise((resolve) => setTimeout(resolve, 150)); // the health loop notices too
console.log('stats:', JSON.stringify(router.stats(), null, 1).slice(0, 400), '…');
await router.close();
