/**
 * Two router replicas that agree, because both read the engines' own KV-cache events.
 *
 * Two stand-in engines publish KV events on 127.0.0.1 exactly as vLLM does (ZMQ PUB, frames
 * `[topic, seq, msgpack batch]`). Each replica has its own registry, its own `cache_aware` policy
 * and a `KvEventFeed` subscribed to both engines. Engine B reports caching a long system prompt;
 * both replicas then route that prompt to B, though neither ever routed it before.
 *
 * Needs the optional peers: `npm install zeromq @msgpack/msgpack`.
 *
 * Run: npx tsx examples/kv-events.ts
 */
import { encode } from '@msgpack/msgpack';
import { createPolicy, WorkerRegistry } from 'fleetroute';
import { KvEventFeed } from 'fleetroute/kv-events';
import { Publisher } from 'zeromq';

const MODEL = 'llama-3.1-8b';
const PAGE = 16;

/** A stand-in engine: a PUB socket on a free port and a sequence counter. */
async function engine() {
  const pub = new Publisher({ linger: 0 });
  await pub.bind('tcp://127.0.0.1:*');
  let seq = 0n;
  return {
    endpoint: pub.lastEndpoint!,
    /** Publishes one batch `[ts, events]` at the next sequence number. */
    async publish(events: unknown[]) {
      const frame = Buffer.alloc(8);
      frame.writeBigInt64BE(seq++);
      await pub.send([
        'kv-events',
        frame,
        encode([Date.now() / 1000, events], { useBigInt64: true }),
      ]);
    },
    close: () => pub.close(),
  };
}

const engines = [await engine(), await engine()];

/** One replica of the service: its own registry, policy and feed. */
async function replica() {
  const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
  for (const [i, e] of engines.entries()) {
    // The engine's event endpoint rides on a label here; `source` reads it.
    await registry.register({
      url: `http://127.0.0.1:${8000 + i}`,
      models: [MODEL],
      labels: { kv: e.endpoint },
    });
  }
  const policy = createPolicy('cache_aware', { pageSize: PAGE });
  const feed = await KvEventFeed.start({
    registry,
    target: policy,
    source: (worker) => ({ endpoint: worker.labels.kv!, model: MODEL }),
    pageSize: PAGE,
    reconnectIntervalMs: 20,
  });
  return { registry, policy, feed };
}

const replicas = [await replica(), await replica()];

// A subscriber misses what was published before it connected (ZMQ's slow joiner): wait until
// both replicas hear both engines.
for (let i = 0; i < 500; i++) {
  for (const e of engines) await e.publish([]);
  const heard = replicas.every(({ feed }) => {
    const workers = Object.values(feed.stats().workers);
    return workers.length === 2 && workers.every((s) => s.batches > 0);
  });
  if (heard) break;
  await new Promise((r) => setTimeout(r, 10));
}

// Engine B stores a 256-token system prompt: 16 blocks, as vLLM reports them.
const prompt = Array.from({ length: 256 }, (_, i) => 1_000 + i);
const engineHashes = Array.from({ length: 16 }, (_, i) => 0xa000_0000_0000_0000n + BigInt(i));
await engines[1]!.publish([
  {
    type: 'BlockStored',
    block_hashes: engineHashes,
    parent_block_hash: null,
    token_ids: prompt,
    block_size: PAGE,
    medium: 'GPU',
  },
]);
for (let i = 0; i < 500; i++) {
  const done = replicas.every(
    ({ feed }) =>
      Object.values(feed.stats().workers).reduce((n, s) => n + s.translator.storedBlocks, 0) === 16,
  );
  if (done) break;
  await new Promise((r) => setTimeout(r, 10));
}

const request = { model: MODEL, tokens: [...prompt, 42, 43, 44] };
for (const [i, { registry, policy }] of replicas.entries()) {
  const chosen = policy.select(registry.getByModel(MODEL), request);
  console.log(`replica ${i + 1} routes the cached prompt to ${chosen?.url}`);
}

for (const { registry, policy, feed } of replicas) {
  await feed.close();
  policy.close();
  registry.close();
}
for (const e of engines) e.close();
