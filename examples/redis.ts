/**
 * Two router replicas that share state through Redis: in-flight loads and sticky sessions.
 *
 * Each replica has its own registry of the same three workers and its own `SharedState` over its
 * own `RedisSharedStore`, as two processes would. Replica A holds three requests on one worker;
 * replica B then counts them on that worker and its `least_load` sends a new request elsewhere.
 * A session placed by A is kept on the same worker by B. On close, each replica withdraws its
 * counts from Redis.
 *
 * Uses `REDIS_URL` when set; otherwise starts its own `redis-server` (persistence off) on a free
 * loopback port and stops it at the end. Needs the optional peer: `npm install ioredis`.
 *
 * Run: npx tsx examples/redis.ts
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { Router, SharedState, type Worker, WorkerRegistry } from 'fleetroute';
import { RedisSharedStore } from 'fleetroute/redis';
import { Redis } from 'ioredis';

const NAMESPACE = 'example';
const WORKERS = ['http://127.0.0.1:9001', 'http://127.0.0.1:9002', 'http://127.0.0.1:9003'];

/** A free TCP port on 127.0.0.1. */
async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  server.close();
  return typeof address === 'object' && address !== null ? address.port : 0;
}

let server: ChildProcess | undefined;
let url = process.env.REDIS_URL ?? '';
if (url === '') {
  const port = await freePort();
  server = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: 'ignore' },
  );
  process.on('exit', () => server?.kill());
  url = `redis://127.0.0.1:${port}`;
}

// A plain client to wait for the server and, at the end, to look at what the replicas left.
const inspector = new Redis(url, { retryStrategy: () => 50, maxRetriesPerRequest: null });
inspector.on('error', () => {}); // refused while the server starts: it retries every 50 ms
let timer: NodeJS.Timeout | undefined;
await Promise.race([
  inspector.ping(),
  new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer to PING from ${url}`)), 10_000);
  }),
]);
clearTimeout(timer);

/** One replica: its own registry, store and shared state. */
async function replica() {
  const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
  for (const worker of WORKERS)
    await registry.register({ url: worker, models: ['chat', 'summarize'] });
  const store = await RedisSharedStore.create({ url, namespace: NAMESPACE });
  // A session lookup waits 10 ms by default before routing on local state alone; this script
  // waits longer so that its output is the same on a busy machine.
  const shared = new SharedState({ store, sessions: { deadlineMs: 1_000 } });
  const router = new Router({
    registry,
    transport: { probe: async () => true },
    policy: 'least_load',
    policies: { chat: 'manual' },
    health: false,
    loadPolling: false,
    shared,
  });
  router.start();
  return { registry, store, shared, router };
}

const a = await replica();
const b = await replica();

// No model server here: a "request" waits a moment and answers 200.
const send = async (worker: Worker) => {
  await new Promise((resolve) => setTimeout(resolve, 5));
  return { status: 200, worker: worker.url };
};

// (a) Loads. Replica A holds three requests of one `manual` key, so all three on one worker.
const leases = [1, 2, 3].map(() => a.router.select({ model: 'chat', routingKey: 'batch-7' })!);
const busy = leases[0]!.worker.url;
console.log(`replica A holds ${leases.length} requests on ${busy}`);
await a.shared.sync(); // both sync every 100 ms by themselves; here, at once
await b.shared.sync();
const seen = b.registry.getByUrl(busy)!.load;
console.log(`replica B sees ${busy} with ${seen} requests in flight (${seen} from replica A)`);
const elsewhere = b.router.select({ model: 'summarize' })!;
console.log(`replica B's least_load sends a new request to ${elsewhere.worker.url}`);
elsewhere.release();
for (const lease of leases) lease.release();
await a.shared.sync();
await b.shared.sync();
console.log(`after A releases them, replica B sees ${b.registry.getByUrl(busy)!.load} on ${busy}`);

// (b) Sessions. A places user-42; B, asked next, reads the placement before routing.
const first = await a.router.execute({ model: 'chat', routingKey: 'user-42' }, send);
console.log(`replica A places user-42 on ${first.worker}`);
await a.shared.flush(); // written on the next turn of the event loop anyway
const again = await b.router.execute({ model: 'chat', routingKey: 'user-42' }, send);
const found = b.shared.stats().sessions.hits > 0 ? 'read from Redis' : 'not found: placed afresh';
console.log(`replica B keeps user-42 on ${again.worker} (${found})`);

// (c) Close: each replica withdraws its counts and heartbeat.
for (const { router, store, registry } of [a, b]) {
  await router.close();
  await store.close();
  registry.close();
}
const left = await inspector.keys(`{${NAMESPACE}}:load:*`);
const routers = await inspector.exists(`{${NAMESPACE}}:routers`);
console.log(
  left.length === 0 && routers === 0
    ? "closed: no keys left for the replicas' loads"
    : `closed: ${left.length + routers} load keys left`,
);
await inspector.quit();
if (server !== undefined) {
  server.kill('SIGTERM');
  if (server.exitCode === null) await once(server, 'exit');
}
