/**
 * Quickstart: register a few in-process workers, route a handful of requests, and print the
 * decisions and the events the registry emitted.
 *
 * Run: `npx tsx examples/quickstart.ts`.
 */
import { FleetRouteError, type WorkerEvent, WorkerRegistry } from 'fleetroute';

const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });

const seen: WorkerEvent[] = [];
registry.on('event', (event) => seen.push(event));

// Three workers for one model, one wildcard worker that serves any model.
for (const port of [8001, 8002, 8003]) {
  await registry.register({ url: `127.0.0.1:${port}`, models: ['llama-3.1-8b'], runtime: 'vllm' });
}
await registry.register({ url: 'http://127.0.0.1:9000', runtime: 'sglang' });

// Bad input is rejected with a typed error and leaves the registry unchanged.
try {
  await registry.register({ url: 'ftp://127.0.0.1:21' });
} catch (error) {
  if (error instanceof FleetRouteError) console.log(`rejected: ${error.code} (${error.message})`);
}

// Route by session: the same key always lands on the same worker (prefix-cache affinity).
const ring = registry.getHashRing('llama-3.1-8b');
const sessions = ['alice', 'bob', 'carol', 'alice', 'bob', 'dave'];
console.log('\nrouting llama-3.1-8b by session key:');
for (const session of sessions) {
  const url = ring.find(
    session,
    (candidate) => registry.getByUrl(candidate)?.isAvailable() ?? false,
  );
  const worker = url === undefined ? undefined : registry.getByUrl(url);
  const lease = worker?.acquire();
  console.log(`  ${session.padEnd(6)} → ${url ?? 'no worker'} (in flight: ${worker?.load ?? 0})`);
  lease?.release({ ok: true, status: 200 });
}

// A worker goes unhealthy: its keys fail over clockwise, everyone else's stay put.
const victim = ring.find('alice')!;
await registry.transitionStatus(registry.getIdByUrl(victim)!, 'not_ready');
const failover = ring.find(
  'alice',
  (candidate) => registry.getByUrl(candidate)?.isAvailable() ?? false,
);
console.log(`\n${victim} is not ready: alice → ${failover}`);

// A model nobody names explicitly is served by the wildcard worker.
console.log(
  '\nworkers for an unknown model:',
  registry.getByModel('mistral-7b').map((w) => w.url),
);
console.log('models:', registry.getModels(), '· workers:', registry.size);

console.log('\nevents seen:');
for (const event of seen) {
  const detail = event.type === 'statusChanged' ? ` ${event.from} → ${event.to}` : '';
  console.log(`  #${event.seq} ${event.type} ${event.workerId}${detail}`);
}
registry.close();
