/**
 * `KvEventSubscriber` over real ZMQ sockets on 127.0.0.1: blocks per second from an engine-like
 * publisher's frames into `cache_aware`'s block index, end to end (socket, frames, decode,
 * sequence checks, translation, index). Reference in the same run: the same batches through
 * `@msgpack/msgpack`'s bare `decode`, in memory.
 *
 * Batches are an engine step's: 16 `BlockStored` events of 16 blocks × 16 tokens, chained, then
 * one batch removing them (so the index stays bounded); pre-encoded, so the publisher costs only
 * its sends. Publisher and subscriber share this process (and its CPU): the figure is a floor.
 * Neither side drops (high-water marks off), so every batch is applied.
 */
import { decode, encode } from '@msgpack/msgpack';
import { Publisher } from 'zeromq';
import { createPolicy, HashRing } from '../src/index.js';
import { KvEventSubscriber } from '../src/kv-events/subscriber.js';
import { emit, fmt, timeOps } from './harness.js';

await HashRing.create([]);

const BLOCK = 16;
const PER_EVENT = 16;
const EVENTS = 16;
const BLOCKS = PER_EVENT * EVENTS;
const ROUNDS = 400; // 400 × (stored + removed) batches = 204,800 block events

function batches(r: number): [Uint8Array, Uint8Array] {
  const events: unknown[] = [];
  const hashes: bigint[] = [];
  let parent: bigint | null = null;
  for (let e = 0; e < EVENTS; e++) {
    const bh: bigint[] = [];
    const tokens: number[] = [];
    for (let b = 0; b < PER_EVENT; b++) {
      const h = 0x8000_0000_0000_0000n + BigInt(r * BLOCKS + e * PER_EVENT + b);
      bh.push(h);
      hashes.push(h);
      for (let t = 0; t < BLOCK; t++) tokens.push((r * 7_919 + e * 131 + b * 17 + t) % 150_000);
    }
    events.push({
      type: 'BlockStored',
      block_hashes: bh,
      parent_block_hash: parent,
      token_ids: tokens,
      block_size: BLOCK,
      medium: 'GPU',
    });
    parent = bh.at(-1)!;
  }
  return [
    encode([1_789_000_000.5, events, 0], { useBigInt64: true }),
    encode([1_789_000_001.5, [{ type: 'BlockRemoved', block_hashes: hashes }], 0], {
      useBigInt64: true,
    }),
  ];
}

const payloads = Array.from({ length: ROUNDS }, (_, r) => batches(r)).flat();
const seqFrame = (seq: number) => {
  const b = Buffer.alloc(8);
  b.writeBigInt64BE(BigInt(seq));
  return b;
};

const reference = (() => {
  let i = 0;
  const t = timeOps(
    (ops) => {
      let n = 0;
      for (let k = 0; k < ops; k++)
        n += (decode(payloads[i++ % payloads.length]!, { useBigInt64: true }) as unknown[]).length;
      return n;
    },
    { samples: 7, sampleMs: 80 },
  );
  return BLOCKS / (t.nsPerOp / 1e9); // each batch carries BLOCKS block events
})();

const rates: number[] = [];
for (let run = 0; run < 3; run++) {
  const pub = new Publisher({ linger: 0, sendHighWaterMark: 0 });
  await pub.bind('tcp://127.0.0.1:*');
  const policy = createPolicy('cache_aware');
  const subscriber = await KvEventSubscriber.open({
    workerUrl: 'http://127.0.0.1:8000',
    endpoint: pub.lastEndpoint!,
    target: policy,
    highWaterMark: 0,
    warmup: false,
  });
  // Join: probe until the subscriber hears the publisher (ZMQ's slow joiner).
  let seq = 0;
  const empty = encode([0, [], 0]);
  for (let i = 0; i < 500 && subscriber.stats().batches === 0; i++) {
    await pub.send(['kv', seqFrame(seq++), empty]);
    await new Promise((r) => setTimeout(r, 5));
  }
  const start = performance.now();
  for (const payload of payloads) await pub.send(['kv', seqFrame(seq++), payload]);
  const last = BigInt(seq - 1);
  while (subscriber.stats().lastSeq !== last) await new Promise((r) => setImmediate(r));
  const seconds = (performance.now() - start) / 1000;
  rates.push((payloads.length * BLOCKS) / seconds);
  const stats = subscriber.stats();
  if (stats.gaps !== 0 || stats.clears !== 0)
    throw new Error(`lost batches: ${JSON.stringify(stats.gaps)}`);
  await subscriber.close();
  policy.close();
  pub.close();
}
rates.sort((a, b) => a - b);
const median = rates[1]!;

emit({
  name: 'kv-subscriber',
  tables: [
    {
      title: `KvEventSubscriber over loopback ZMQ, million blocks/s (stored + removed), ${payloads.length} batches of ${BLOCKS} blocks`,
      columns: ['path', 'M blocks/s', 'of bare msgpack decode'],
      rows: [
        ['bare @msgpack/msgpack decode, in memory (reference)', fmt(reference / 1e6, 2), '1.00×'],
        [
          'publisher → socket → subscriber → cache_aware index (median of 3)',
          fmt(median / 1e6, 2),
          `${fmt(median / reference, 2)}×`,
        ],
      ],
    },
  ],
  notes: [
    'Publisher and subscriber in one process share its CPU; every batch applied, none dropped.',
  ],
});
