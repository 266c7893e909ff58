/**
 * `cache_aware` in event mode: select µs per request for 1,024- and 4,096-token prompts at 16 and
 * 2,048 workers, tokens as a plain array and as a `Uint32Array`; the reference, in the same run,
 * is `blockHashes` of the same prompt alone (what hashing every block costs).
 *
 * Why: with engine KV events, every request hashes its prompt's blocks and looks them up in the
 * block index. The target is ≤ 5 ns per prompt token at 2,048 workers; 1 K, 4 K and 100 K-token
 * prompts.
 *
 * Workload: 64 shared prefixes of 75 % of the prompt, each reported stored by 4 workers (so up
 * to four holders tie over the whole prefix and the scan walks it all); each prompt is one of
 * them plus a unique 25 % suffix. Candidates are the registry's array; no leases are held.
 */
import { blockHashes, createPolicy, WorkerRegistry } from '../src/index.js';
import { seededRandom, workerUrls } from './fixtures.js';
import { emit, fmt, timeOps } from './harness.js';

const SIZES = [1_024, 4_096, 102_400] as const;
const FLEETS = [16, 2_048] as const;
const PREFIXES = 64;
const HOLDERS = 4;

await WorkerRegistry.create(); // loads the hash function

const rows: string[][] = [];
for (const tokens of SIZES) {
  // 100 K-token prompts: fewer of them, so the prompts fit in memory.
  const count = tokens > 10_000 ? 32 : 512;
  const prefixes = tokens > 10_000 ? 8 : PREFIXES;
  const random = seededRandom(tokens);
  const token = () => Math.floor(random() * 150_000);
  const heads = Array.from({ length: prefixes }, () =>
    Array.from({ length: tokens * 0.75 }, token),
  );
  const prompts = Array.from({ length: count }, (_, i) => [
    ...heads[i % prefixes]!,
    ...Array.from({ length: tokens / 4 }, token),
  ]);
  const typed = prompts.map((p) => Uint32Array.from(p));
  let cursor = 0;
  const reference = timeOps(
    (ops) => {
      let n = 0;
      for (let i = 0; i < ops; i++) n += blockHashes(prompts[cursor++ % count]!).length;
      return n;
    },
    { samples: 7, sampleMs: 80 },
  ).nsPerOp;
  for (const size of FLEETS) {
    const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
    for (const url of workerUrls(size)) await registry.register({ url, models: ['m'] });
    const workers = registry.getByModel('m');
    const policy = createPolicy('cache_aware');
    for (const [h, head] of heads.entries()) {
      const hashes = blockHashes(head);
      for (let k = 0; k < HOLDERS; k++) {
        const url = workers[(h * 7 + k * 13) % size]!.url;
        policy.applyKvEvents(url, [{ type: 'stored', model: 'm', hashes }]);
      }
    }
    for (const [kind, list] of [
      ['array', prompts],
      ['Uint32Array', typed],
    ] as const) {
      const ns = timeOps(
        (ops) => {
          let n = 0;
          for (let i = 0; i < ops; i++) {
            if (policy.select(workers, { model: 'm', tokens: list[cursor++ % count]! })) n++;
          }
          return n;
        },
        { samples: 7, sampleMs: 80 },
      ).nsPerOp;
      rows.push([
        String(tokens),
        String(size),
        kind,
        fmt(ns / 1_000, 2),
        fmt(ns / tokens, 2),
        `${fmt(ns / reference, 2)}×`,
      ]);
    }
    policy.close();
    registry.close();
  }
  rows.push([
    String(tokens),
    '—',
    'blockHashes (reference)',
    fmt(reference / 1_000, 2),
    fmt(reference / tokens, 2),
    '1.00×',
  ]);
}

emit({
  name: 'event-select',
  tables: [
    {
      title: `cache_aware event mode: select µs, 75 % prefix held by ${HOLDERS} workers`,
      columns: [
        'prompt tokens',
        'workers',
        'tokens as',
        'select µs',
        'ns per token',
        'of blockHashes',
      ],
      rows,
    },
  ],
  notes: [
    'Four workers hold each prefix, so the scan hashes and looks up 75 % of the blocks (at most maxEventBlocks, 4,096 blocks: 65,536 of a 102,400-token prompt), and the blockHashes reference hashes all of them.',
  ],
});
