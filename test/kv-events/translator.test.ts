/**
 * `KvEventTranslator`: an engine's stored / removed / cleared blocks become fleetroute's block
 * keys, recomputed from the events' token ids and chained from the parent block's keys, so the
 * index `cache_aware` builds from them equals what the engine holds.
 */
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { blockHashes, HashRing, type KvEvent } from '../../src/index.js';
import type { EngineEvent } from '../../src/kv-events/batch-decoder.js';
import { KvEventTranslator } from '../../src/kv-events/translator.js';
import { runs } from '../helpers/fc-settings.js';
import { throwsCode } from '../support/fixtures.js';

beforeAll(async () => {
  await HashRing.create([]); // loads the hash function
});

type Stored = Extract<EngineEvent, { type: 'stored' }>;

function stored(
  hashes: bigint[],
  tokenIds: number[],
  blockSize: number,
  parent?: bigint,
  extra: Partial<Stored> = {},
): Stored {
  return {
    type: 'stored',
    hashes,
    parent,
    tokenIds,
    blockSize,
    loraName: undefined,
    medium: undefined,
    groupIdx: undefined,
    specKind: undefined,
    extraKeys: false,
    ...extra,
  };
}

const range = (n: number, from = 0) => Array.from({ length: n }, (_, i) => from + i);

/** The keys a list of events says a worker holds, applied in order. */
function held(events: readonly KvEvent[], into = new Set<bigint>()): Set<bigint> {
  for (const e of events) {
    if (e.type === 'cleared') into.clear();
    else if (e.type === 'stored') for (const h of e.hashes) into.add(h as bigint);
    else for (const h of e.hashes) into.delete(h as bigint);
  }
  return into;
}

describe('KvEventTranslator', () => {
  it('stores a chain of blocks under the keys blockHashes gives their whole prefix', () => {
    // Arrange: an engine with 32-token blocks stores a 64-token prompt in two events, the second
    // naming the first's last block as its parent; fleetroute pages are 16 tokens.
    const t = new KvEventTranslator({ pageSize: 16, model: 'm' });
    const prompt = range(96, 1_000);

    // Act
    const first = t.translate([stored([111n], prompt.slice(0, 32), 32)]);
    const second = t.translate([stored([222n, 333n], prompt.slice(32), 32, 111n)]);

    // Assert: two keys per engine block, equal to hashing the whole prompt.
    const whole = blockHashes(prompt, { pageSize: 16 });
    expect(first).toEqual([{ type: 'stored', model: 'm', hashes: whole.slice(0, 2) }]);
    expect(second).toEqual([{ type: 'stored', model: 'm', hashes: whole.slice(2) }]);
    expect(t.size).toBe(3);
  });

  it('removes by the engine’s hashes, counting the ones it never stored', () => {
    const t = new KvEventTranslator();
    const prompt = range(48);
    const keys = blockHashes(prompt);
    t.translate([stored([1n, 2n, 3n], prompt, 16)]);

    const out = t.translate([
      { type: 'removed', hashes: [3n, 9n], medium: undefined, groupIdx: undefined },
    ]);

    expect(out).toEqual([{ type: 'removed', hashes: [keys[2]] }]);
    expect(t.stats()).toMatchObject({ removedBlocks: 1, unknownRemoved: 1 });
  });

  it('skips an orphan (unknown parent) rather than re-rooting it, and counts it', () => {
    const t = new KvEventTranslator();
    expect(t.translate([stored([5n], range(16), 16, 404n)])).toEqual([]);
    expect(t.stats().orphans).toBe(1);
    expect(t.size).toBe(0);
  });

  it('skips and counts other KV groups and kinds, other media, extra keys, odd block sizes and short token lists', () => {
    const t = new KvEventTranslator({ pageSize: 16 });
    const out = t.translate([
      stored([1n], range(16), 16, undefined, { groupIdx: 1 }),
      stored([2n], range(16), 16, undefined, { specKind: 'sliding_window' }),
      stored([3n], range(16), 16, undefined, { medium: 'CPU' }),
      stored([4n], range(16), 16, undefined, { extraKeys: true }),
      stored([5n], range(24), 24),
      stored([6n], range(15), 16),
      stored([7n], range(16), 16, undefined, {
        groupIdx: 0,
        specKind: 'full_attention',
        medium: 'GPU',
      }),
    ]);
    expect(out).toHaveLength(1);
    expect(t.stats().skipped).toEqual({
      group: 2,
      medium: 1,
      extraKeys: 1,
      blockSize: 1,
      tokens: 1,
    });
  });

  it('files a LoRA adapter’s blocks under its name', () => {
    const t = new KvEventTranslator({ model: 'base' });
    const [event] = t.translate([stored([1n], range(16), 16, undefined, { loraName: 'sql-lora' })]);
    expect(event).toMatchObject({ type: 'stored', model: 'sql-lora' });
  });

  it('cleared forgets everything: later removals are unknown, later children orphans', () => {
    const t = new KvEventTranslator();
    t.translate([stored([1n], range(16), 16)]);
    expect(t.translate([{ type: 'cleared' }])).toEqual([{ type: 'cleared' }]);
    t.translate([stored([2n], range(16, 16), 16, 1n)]);
    expect(t.stats()).toMatchObject({ cleared: 1, orphans: 1 });
  });

  it('past maxBlocks forgets the oldest blocks and reports them removed', () => {
    const t = new KvEventTranslator({ maxBlocks: 2 });
    const events = [1n, 2n, 3n].map((h, i) => stored([h], range(16, 100 * i), 16));
    const out = t.translate(events);
    expect(t.size).toBe(2);
    expect(t.stats().evicted).toBe(1);
    expect(held(out)).toEqual(
      new Set([...blockHashes(range(16, 100)), ...blockHashes(range(16, 200))]),
    );
  });

  it('rejects bad options, naming them', () => {
    throwsCode(() => new KvEventTranslator({ pageSize: 0 }), 'INVALID_ARGUMENT');
    throwsCode(() => new KvEventTranslator({ model: 7 as unknown as string }), 'INVALID_ARGUMENT');
    throwsCode(() => new KvEventTranslator({ pages: 16 } as never), 'INVALID_ARGUMENT');
  });

  it('for any run of stores, removals and clears, the keys held equal what the engine holds', () => {
    // A model engine: prompts are paths in a small token tree; each stored block continues a
    // block the engine holds (or starts a prompt); removals evict any block; clears empty it.
    const op = fc.oneof(
      {
        weight: 6,
        arbitrary: fc.record({
          kind: fc.constant('store' as const),
          branch: fc.nat({ max: 3 }),
          from: fc.nat(),
          blocks: fc.integer({ min: 1, max: 3 }),
        }),
      },
      { weight: 3, arbitrary: fc.record({ kind: fc.constant('remove' as const), pick: fc.nat() }) },
      { weight: 1, arbitrary: fc.constant({ kind: 'clear' as const }) },
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 60 }), (ops) => {
        const page = 16;
        const t = new KvEventTranslator({ pageSize: page });
        // Engine state: engine hash → the block's full token prefix.
        const engine = new Map<bigint, number[]>();
        let nextHash = 1n;
        const keysHeld = new Set<bigint>();
        for (const o of ops) {
          let events: EngineEvent[];
          if (o.kind === 'clear') {
            engine.clear();
            events = [{ type: 'cleared' }];
          } else if (o.kind === 'remove') {
            const all = [...engine.keys()];
            if (all.length === 0) continue;
            const h = all[o.pick % all.length]!;
            engine.delete(h);
            events = [{ type: 'removed', hashes: [h], medium: undefined, groupIdx: undefined }];
          } else {
            const parents = [...engine.keys()];
            const parent =
              parents.length === 0 || o.from % 3 === 0
                ? undefined
                : parents[o.from % parents.length]!;
            const prefix = parent === undefined ? [] : engine.get(parent)!;
            const tokens = range(o.blocks * page, 10_000 * o.branch + prefix.length);
            // An engine caches a block once: the same prefix is never stored under two hashes.
            const cached = new Set([...engine.values()].map((p) => p.join()));
            const chain = Array.from({ length: o.blocks }, (_, b) =>
              [...prefix, ...tokens.slice(0, (b + 1) * page)].join(),
            );
            if (chain.some((c) => cached.has(c))) continue;
            const hashes: bigint[] = [];
            let path = prefix;
            for (let b = 0; b < o.blocks; b++) {
              const h = nextHash++;
              path = [...path, ...tokens.slice(b * page, (b + 1) * page)];
              engine.set(h, path);
              hashes.push(h);
            }
            events = [stored(hashes, tokens, page, parent)];
          }
          held(t.translate(events), keysHeld);
        }
        // What the engine holds, in fleetroute's keys: the last key of each block's prefix.
        const expected = new Set<bigint>();
        for (const prefix of engine.values())
          expected.add(blockHashes(prefix, { pageSize: page }).at(-1)!);
        expect(keysHeld).toEqual(expected);
      }),
      runs(100, 500),
    );
  });
});
