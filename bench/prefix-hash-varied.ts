/**
 * `prefix_hash` on varied prompts: select ns per request over 4,096 distinct 256-token prompts in
 * 64 groups that share their first 128 tokens, at 16 and 2,048 workers, tokens as a `Uint32Array`
 * and as a plain array; beside it, one prompt sent over and over (what `policy-select` measures
 * when its few prefixes stay in the caches). The reference, in the same run, is xxh64 of the same
 * prompts' 1 KB alone: the hash every select must compute. Beside it, the key alone as a select
 * computes it (the tokens loaded into the block hasher, then its xxh64), for both token types.
 *
 * Why: a router sees a different prompt on almost every request, so its prompt bytes, its ring
 * point and its worker are rarely in the CPU caches. Targets at 2,048 workers: ≤ 600 ns with
 * `Uint32Array`, ≤ 750 ns with plain arrays.
 *
 * Setup: a registry of ready workers serving model `m` with 0–7 leases in flight each (as in
 * `policy-select`), its hash ring built before timing; candidates are `registry.getByModel('m')`.
 * The prompts are visited in a
 * seeded random order, so consecutive requests belong to different groups. With the default
 * `prefixTokens` (256) each prompt is one block: the key is its hash.
 */
import { blockHasher } from '../src/core/block-hasher.js';
import { loadHasher } from '../src/core/hash.js';
import { createPolicy, type SelectRequest, type WorkerRegistry } from '../src/index.js';
import { loadedFleet, seededRandom, selectRunner } from './fixtures.js';
import { emit, fmt, timeOps } from './harness.js';

const FLEETS = [16, 2_048] as const;
const GROUPS = 64;
const PROMPTS = 4_096;
const TOKENS = 256;
const SHARED = 128;

/** `PROMPTS` prompts of `TOKENS` token ids: group `i % GROUPS`'s head, then a tail of their own. */
function prompts(): number[][] {
  const random = seededRandom(22);
  const token = () => Math.floor(random() * 150_000);
  const heads = Array.from({ length: GROUPS }, () => Array.from({ length: SHARED }, token));
  const out = Array.from({ length: PROMPTS }, (_, i) => [
    ...heads[i % GROUPS]!,
    ...Array.from({ length: TOKENS - SHARED }, token),
  ]);
  // A seeded shuffle: consecutive requests come from different groups, in no fixed pattern.
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

async function fleet(size: number): Promise<WorkerRegistry> {
  const registry = await loadedFleet(size);
  // Built here, not inside the first timed run: building it leaves megabytes of garbage whose
  // collection would land in that run's samples (3 µs per select instead of 0.8 in one test).
  registry.getHashRing('m');
  return registry;
}

const hasher = await loadHasher();
const plain = prompts();
const typed = plain.map((p) => Uint32Array.from(p));
const cases: { label: string; reqs: SelectRequest[] }[] = [
  { label: 'varied, Uint32Array', reqs: typed.map((tokens) => ({ model: 'm', tokens })) },
  { label: 'varied, plain array', reqs: plain.map((tokens) => ({ model: 'm', tokens })) },
  {
    label: 'one prompt repeated, Uint32Array',
    reqs: typed.map(() => ({ model: 'm', tokens: typed[0]! })),
  },
  {
    label: 'one prompt repeated, plain array',
    reqs: plain.map(() => ({ model: 'm', tokens: plain[0]! })),
  },
];

const bytes = typed.map((t) => new Uint8Array(t.buffer, t.byteOffset, t.byteLength));
let at = 0;
const reference = timeOps((ops) => {
  let check = 0;
  for (let i = 0; i < ops; i++) {
    hasher.hashBytes(bytes[at++ & (PROMPTS - 1)]!);
    check += hasher.lo;
  }
  return check;
}).nsPerOp;

/** ns per key over `prompts`, computed as a select computes it: loaded, then hashed. */
function keyAlone(prompts: readonly ArrayLike<number>[]): number {
  const words = blockHasher();
  let next = 0;
  return timeOps((ops) => {
    let check = 0;
    for (let i = 0; i < ops; i++) {
      words.loadWords(prompts[next++ & (PROMPTS - 1)]!, 0, TOKENS);
      words.hashWords(TOKENS, 0, 0);
      check += words.lastLo;
    }
    return check;
  }).nsPerOp;
}
/**
 * ns to read every token of a prompt (a sum): what any key over them costs at least. One
 * function per token type, so each loop reads one kind of array.
 */
function readTyped(prompts: readonly Uint32Array[]): number {
  let next = 0;
  return timeOps((ops) => {
    let check = 0;
    for (let i = 0; i < ops; i++) {
      const tokens = prompts[next++ & (PROMPTS - 1)]!;
      for (let t = 0; t < TOKENS; t++) check = (check + tokens[t]!) | 0;
    }
    return check;
  }).nsPerOp;
}

function readPlain(prompts: readonly number[][]): number {
  let next = 0;
  return timeOps((ops) => {
    let check = 0;
    for (let i = 0; i < ops; i++) {
      const tokens = prompts[next++ & (PROMPTS - 1)]!;
      for (let t = 0; t < TOKENS; t++) check = (check + tokens[t]!) | 0;
    }
    return check;
  }).nsPerOp;
}
const keys = [
  { label: 'the key alone (load + xxh64), Uint32Array', ns: keyAlone(typed) },
  { label: 'the key alone (load + xxh64), plain array', ns: keyAlone(plain) },
  { label: 'reading the tokens alone (a sum), Uint32Array', ns: readTyped(typed) },
  { label: 'reading the tokens alone (a sum), plain array', ns: readPlain(plain) },
];

const registries = new Map<number, WorkerRegistry>();
for (const size of FLEETS) registries.set(size, await fleet(size));

const rows: string[][] = [];
for (const { label, reqs } of cases) {
  const ns = FLEETS.map(
    (size) =>
      timeOps(selectRunner(createPolicy('prefix_hash', { seed: 1 }), registries.get(size)!, reqs))
        .nsPerOp,
  );
  rows.push([label, ...ns.map((v) => fmt(v)), `${fmt(ns[1]! / reference, 2)}×`]);
}
for (const { label, ns } of keys) rows.push([label, '—', fmt(ns), `${fmt(ns / reference, 2)}×`]);
rows.push(['xxh64 of the 1 KB prompt (reference)', '—', fmt(reference), '1.00×']);

emit({
  name: 'prefix-hash-varied',
  tables: [
    {
      title: `prefix_hash select, ns/op (median): ${PROMPTS} prompts of ${TOKENS} tokens, ${GROUPS} groups sharing ${SHARED}`,
      columns: ['prompts, tokens as', '16 workers', '2,048 workers', 'of reference @2,048'],
      rows,
    },
  ],
  notes: [
    'Each select hashes the whole 256-token prompt (one block) and walks the ring from its key, skipping workers over the load bound.',
    'Reference: xxh64 of each prompt as 1 KB of little-endian uint32 (Uint32Array bytes, no copy), cycling over the same 4,096 prompts.',
    'The key alone: the same prompts copied (plain arrays: read and checked) into the block hasher and hashed there, as a select does.',
    'Reading the tokens alone: a sum of the 256 values, the least any key over them costs.',
  ],
});
