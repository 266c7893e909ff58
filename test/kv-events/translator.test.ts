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
  return heldAfter(events, into);
}

/** Applies `events` to the keys `into` holds. */
function heldAfter(events: readonly KvEvent[], into: Set<bigint>): Set<bigint> {
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

  it('a hash stored again for other tokens replaces its block: the old keys are reported removed', () => {
    // An engine may reuse a hash for other tokens (a block freed and filled anew without a
    // removal in between): the old keys would stay in the index with no hash left to remove them.
    const t = new KvEventTranslator();
    const held = new Set<bigint>();
    const first = range(16, 100);
    const second = range(16, 500);
    heldAfter(t.translate([stored([1n], first, 16)]), held);
    heldAfter(t.translate([stored([1n], second, 16)]), held);
    expect(held).toEqual(new Set(blockHashes(second)));
    expect(t.size).toBe(1);

    // The same tokens again change nothing (and report no removal).
    expect(t.translate([stored([1n], second, 16)])).toEqual([
      { type: 'stored', hashes: blockHashes(second) },
    ]);
    heldAfter(
      t.translate([{ type: 'removed', hashes: [1n], medium: undefined, groupIdx: undefined }]),
      held,
    );
    expect(held).toEqual(new Set());
  });

  it('a hash listed twice in one event keeps only its last block', () => {
    const t = new KvEventTranslator({ pageSize: 16 });
    const tokens = range(48, 7);
    const out = t.translate([stored([5n, 6n, 5n], tokens, 16)]);
    const keys = blockHashes(tokens);
    expect(held(out)).toEqual(new Set([keys[1], keys[2]]));
    expect(t.size).toBe(2);
    const removed = t.translate([
      { type: 'removed', hashes: [5n, 6n], medium: undefined, groupIdx: undefined },
    ]);
    expect(held([...out, ...removed])).toEqual(new Set());
  });

  it('at its maxBlocks cap, under any stores (hashes stored again included), removals and clears: the blocks it remembers are the most recent, at most maxBlocks, and the keys held are exactly theirs', () => {
    // Engine hashes come from a small set, so stores reuse hashes (for other tokens, or the same
    // event again) and list one twice; tokens are unique per store, so no two live hashes share
    // a key. A model LRU gives the blocks that must be remembered.
    const page = 2;
    const hashes = fc.bigInt({ min: 1n, max: 10n });
    const op = fc.oneof(
      {
        weight: 6,
        arbitrary: fc.record({
          kind: fc.constant('store' as const),
          hashes: fc.array(hashes, { minLength: 1, maxLength: 3 }),
          parent: fc.option(hashes, { nil: undefined }),
        }),
      },
      { weight: 2, arbitrary: fc.record({ kind: fc.constant('repeat' as const), pick: fc.nat() }) },
      { weight: 3, arbitrary: fc.record({ kind: fc.constant('remove' as const), hash: hashes }) },
      { weight: 1, arbitrary: fc.constant({ kind: 'clear' as const }) },
    );
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 6 }), fc.array(op, { maxLength: 80 }), (max, ops) => {
        const t = new KvEventTranslator({ pageSize: page, maxBlocks: max });
        /** Live engine hashes, least recently stored first, with each block's token prefix. */
        const order: bigint[] = [];
        const prefixOf = new Map<bigint, number[]>();
        const sent: Stored[] = [];
        const keysHeld = new Set<bigint>();
        ops.forEach((o, i) => {
          let event: EngineEvent;
          if (o.kind === 'clear') {
            order.length = 0;
            prefixOf.clear();
            event = { type: 'cleared' };
          } else if (o.kind === 'remove') {
            if (prefixOf.delete(o.hash)) order.splice(order.indexOf(o.hash), 1);
            event = { type: 'removed', hashes: [o.hash], medium: undefined, groupIdx: undefined };
          } else {
            const e =
              o.kind === 'repeat'
                ? sent[o.pick % Math.max(1, sent.length)]
                : stored(o.hashes, range(o.hashes.length * page, 1_000 * i), page, o.parent);
            if (e === undefined) return;
            sent.push(e);
            event = e;
            const parent = e.parent === undefined ? [] : prefixOf.get(e.parent);
            if (parent !== undefined) {
              e.hashes.forEach((h, b) => {
                if (prefixOf.has(h)) order.splice(order.indexOf(h), 1);
                order.push(h);
                prefixOf.set(h, [...parent, ...e.tokenIds.slice(0, (b + 1) * page)]);
              });
              while (order.length > max) prefixOf.delete(order.shift()!);
            }
          }
          heldAfter(t.translate([event]), keysHeld);
          const expected = new Set(
            order.map((h) => blockHashes(prefixOf.get(h)!, { pageSize: page }).at(-1)!),
          );
          expect(t.size).toBe(order.length);
          expect(keysHeld).toEqual(expected);
        });
        // Every block still held can be removed by its hash.
        const all = Array.from({ length: 10 }, (_, i) => BigInt(i + 1));
        heldAfter(
          t.translate([{ type: 'removed', hashes: all, medium: undefined, groupIdx: undefined }]),
          keysHeld,
        );
        expect(keysHeld).toEqual(new Set());
        expect(t.size).toBe(0);
      }),
      runs(300, 2000),
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
