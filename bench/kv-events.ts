/**
 * Engine KV-event ingest: blocks per second through each stage of the path from an engine's
 * ZMQ frames to `cache_aware`'s block index — decode (msgpack + validation), translate (engine
 * hashes → fleetroute's block keys, one xxh64 per 16-token page), apply (`applyKvEvents`) — and
 * end to end. Reference in the same run: `@msgpack/msgpack`'s bare `decode` of the same payload.
 *
 * Batches are what a vLLM engine publishes per step: 16 `BlockStored` events of 16 blocks × 16
 * tokens, each chained to the previous one, then the same blocks removed (so the index stays
 * bounded across iterations); 64-bit engine hashes.
 *
 * Then the translator at its `maxBlocks` cap, where every block stored forgets the least
 * recently stored one: µs per block stored one event at a time, and the time one backlog batch
 * of 65,536 such events holds the event loop.
 */
import { decode, encode } from '@msgpack/msgpack';
import { createPolicy, HashRing, type KvEvent } from '../src/index.js';
import type { EngineEvent } from '../src/kv-events/batch-decoder.js';
import { decodeKvEventBatch } from '../src/kv-events/batch-decoder.js';
import { readKvEventFrames } from '../src/kv-events/frames.js';
import { KvEventTranslator } from '../src/kv-events/translator.js';
import { emit, fmt, timeOps } from './harness.js';

await HashRing.create([]); // loads the hash function

const BLOCK = 16;
const BLOCKS_PER_EVENT = 16;
const EVENTS = 16;
const BLOCKS = BLOCKS_PER_EVENT * EVENTS;

const msgpack = (bytes: Uint8Array): unknown => decode(bytes, { useBigInt64: true });

/** The stored batch and the removing batch of round `r` (distinct hashes and tokens per round). */
function batches(r: number): [Uint8Array, Uint8Array] {
  const events: unknown[] = [];
  const hashes: bigint[] = [];
  let parent: bigint | null = null;
  for (let e = 0; e < EVENTS; e++) {
    const blockHashes: bigint[] = [];
    const tokens: number[] = [];
    for (let b = 0; b < BLOCKS_PER_EVENT; b++) {
      const h = 0x8000_0000_0000_0000n + BigInt(r * BLOCKS + e * BLOCKS_PER_EVENT + b);
      blockHashes.push(h);
      hashes.push(h);
      for (let t = 0; t < BLOCK; t++) tokens.push((r * 7_919 + e * 131 + b * 17 + t) % 150_000);
    }
    events.push({
      type: 'BlockStored',
      block_hashes: blockHashes,
      parent_block_hash: parent,
      token_ids: tokens,
      block_size: BLOCK,
      medium: 'GPU',
    });
    parent = blockHashes.at(-1)!;
  }
  const stored = encode([1_789_000_000.5, events, 0], { useBigInt64: true });
  const removed = encode([1_789_000_001.5, [{ type: 'BlockRemoved', block_hashes: hashes }], 0], {
    useBigInt64: true,
  });
  return [stored, removed];
}

const ROUNDS = 8;
const payloads = Array.from({ length: ROUNDS }, (_, r) => batches(r));
const frames = payloads.map(([stored, removed]) => {
  const seq = new Uint8Array(8);
  return [
    [new TextEncoder().encode('kv-events'), seq, stored],
    [new TextEncoder().encode('kv-events'), seq, removed],
  ];
});

/** Blocks per second for `run`, one call per round of stored + removed batches. */
function rate(run: (round: number) => number): number {
  let round = 0;
  const timing = timeOps(
    (ops) => {
      let check = 0;
      for (let i = 0; i < ops; i++) check += run(round++ % ROUNDS);
      return check;
    },
    { samples: 7, sampleMs: 120 },
  );
  // Each call handles BLOCKS stored and BLOCKS removed blocks.
  return (2 * BLOCKS) / (timing.nsPerOp / 1e9);
}

const decodedRounds = payloads.map(([s, r]) => [
  decodeKvEventBatch(s, msgpack),
  decodeKvEventBatch(r, msgpack),
]);
const translated: KvEvent[][][] = [];
{
  const t = new KvEventTranslator({ model: 'm' });
  for (const [s, r] of decodedRounds)
    translated.push([t.translate(s!.events), t.translate(r!.events)]);
}

const reference = rate((round) => {
  const [s, r] = payloads[round]!;
  return (msgpack(s) as unknown[]).length + (msgpack(r) as unknown[]).length;
});
const decodeRate = rate((round) => {
  const [s, r] = payloads[round]!;
  return (
    decodeKvEventBatch(s, msgpack).events.length + decodeKvEventBatch(r, msgpack).events.length
  );
});
const translator = new KvEventTranslator({ model: 'm' });
const translateRate = rate((round) => {
  const [s, r] = decodedRounds[round]!;
  return translator.translate(s!.events).length + translator.translate(r!.events).length;
});
const policy = createPolicy('cache_aware');
const applyRate = rate((round) => {
  const [s, r] = translated[round]!;
  policy.applyKvEvents('http://w0:8000', s!);
  policy.applyKvEvents('http://w0:8000', r!);
  return 2;
});
const endToEnd = new KvEventTranslator({ model: 'm' });
const endPolicy = createPolicy('cache_aware');
const endRate = rate((round) => {
  let n = 0;
  for (const message of frames[round]!) {
    const { payload } = readKvEventFrames(message);
    const events = endToEnd.translate(decodeKvEventBatch(payload, msgpack).events);
    endPolicy.applyKvEvents('http://w0:8000', events);
    n += events.length;
  }
  return n;
});
// The subscriber's path: index keys straight from the translator into cache_aware, no bigints.
const keyTranslator = new KvEventTranslator({ model: 'm' });
const keyPolicy = createPolicy('cache_aware');
const keySink = (
  type: 'stored' | 'removed' | 'cleared',
  model: string | undefined,
  keys: readonly number[],
) => {
  if (type !== 'cleared') keyPolicy.applyKvKeys('http://w0:8000', type, model, keys);
};
const ingestRate = rate((round) => {
  const [s, r] = decodedRounds[round]!;
  keyTranslator.translateKeys(s!.events, keySink);
  keyTranslator.translateKeys(r!.events, keySink);
  return 2;
});
const keyEnd = new KvEventTranslator({ model: 'm' });
const keyEndPolicy = createPolicy('cache_aware');
const keyEndSink = (
  type: 'stored' | 'removed' | 'cleared',
  model: string | undefined,
  keys: readonly number[],
) => {
  if (type !== 'cleared') keyEndPolicy.applyKvKeys('http://w0:8000', type, model, keys);
};
const keyEndRate = rate((round) => {
  let n = 0;
  for (const message of frames[round]!) {
    const { payload } = readKvEventFrames(message);
    const batch = decodeKvEventBatch(payload, msgpack);
    keyEnd.translateKeys(batch.events, keyEndSink);
    n += batch.events.length;
  }
  return n;
});
// At the cap: one-block events, hashes cycling through twice the cap, so each stores a block
// forgotten long ago and forgets the oldest one.
const CAP = 65_536;
const capTokens = Array.from({ length: BLOCK }, (_, t) => 1_000 + t);
const capEvent = (hash: bigint): EngineEvent => ({
  type: 'stored',
  hashes: [hash],
  parent: undefined,
  tokenIds: capTokens,
  blockSize: BLOCK,
  loraName: undefined,
  medium: undefined,
  groupIdx: undefined,
  specKind: undefined,
  extraKeys: false,
});
const capPool = Array.from({ length: 2 * CAP }, (_, i) => [
  capEvent(0x9000_0000_0000_0000n + BigInt(i)),
]);
const atCap = new KvEventTranslator({ model: 'm', maxBlocks: CAP });
for (const events of capPool) atCap.translate(events);
let capNext = 0;
const capTiming = timeOps(
  (ops) => {
    let n = 0;
    for (let i = 0; i < ops; i++) n += atCap.translate(capPool[capNext++ % capPool.length]!).length;
    return n;
  },
  { samples: 7, sampleMs: 120 },
);
// A backlog: one batch of CAP such events, each evicting (the two halves of the pool alternate).
const backlog = [capPool.slice(0, CAP).flat(), capPool.slice(CAP).flat()];
let backlogNext = 0;
const backlogTiming = timeOps(
  (ops) => {
    let n = 0;
    for (let i = 0; i < ops; i++) n += atCap.translate(backlog[backlogNext++ % 2]!).length;
    return n;
  },
  { samples: 5, sampleMs: 200 },
);
if (atCap.size !== CAP) throw new Error(`the translator holds ${atCap.size} blocks, cap ${CAP}`);

policy.close();
endPolicy.close();
keyPolicy.close();
keyEndPolicy.close();

const row = (stage: string, blocksPerS: number): string[] => [
  stage,
  fmt(blocksPerS / 1e6, 2),
  `${fmt(blocksPerS / reference, 2)}×`,
];
emit({
  name: 'kv-events',
  tables: [
    {
      title: `KV-event ingest, million blocks/s (stored + removed), batches of ${EVENTS} events × ${BLOCKS_PER_EVENT} blocks × ${BLOCK} tokens`,
      columns: ['stage', 'M blocks/s', 'of bare msgpack decode'],
      rows: [
        row('bare @msgpack/msgpack decode (reference)', reference),
        row('decodeKvEventBatch (decode + validation)', decodeRate),
        row('KvEventTranslator.translate (keys: one xxh64 per page)', translateRate),
        row('cache_aware.applyKvEvents', applyRate),
        row('end to end: frames → decode → translate → apply', endRate),
        row('ingest, the subscriber’s path: decoded batch → keys → index', ingestRate),
        row('end to end, the subscriber’s path: frames → decode → keys → index', keyEndRate),
      ],
    },
    {
      title: `KvEventTranslator at its maxBlocks cap (${CAP.toLocaleString('en-US')}): every block stored forgets the oldest`,
      columns: ['case', 'figure'],
      rows: [
        ['one-block event, µs per block (stored + one forgotten)', fmt(capTiming.nsPerOp / 1e3, 2)],
        [
          `a backlog batch of ${CAP.toLocaleString('en-US')} one-block events, ms`,
          fmt(backlogTiming.nsPerOp / 1e6, 1),
        ],
      ],
    },
  ],
  notes: [
    'Blocks/s counts each engine block once when stored and once when removed; one stage per row, each over the same batches.',
    'At the cap the hashes cycle through twice the cap, so every block stored is new and forgets one.',
  ],
});
