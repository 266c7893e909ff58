/**
 * The engine KV block index (event mode): which workers hold which blocks, and the
 * validation of KV events and block hashes.
 */
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { blockKey, blockKeyOf } from '../../src/cache/block-hashes.js';
import { KvBlockIndex, readKvEvent } from '../../src/cache/kv-event-store.js';
import { blockHashes, FleetRouteError, HashRing } from '../../src/index.js';
import { runs } from '../helpers/fc-settings.js';

beforeAll(async () => {
  await HashRing.create([]);
});

function expectInvalid(run: () => unknown): void {
  let caught: unknown;
  try {
    run();
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(FleetRouteError);
  expect((caught as FleetRouteError).code).toBe('INVALID_ARGUMENT');
}

const W1 = 'http://w1:8000';
const W2 = 'http://w2:8000';

describe('KvBlockIndex', () => {
  it('starts empty', () => {
    const index = new KvBlockIndex();
    expect(index.empty).toBe(true);
    expect(index.sizeOf(W1)).toBe(0);
    expect(index.holders(1)).toBeUndefined();
  });

  it('stores blocks per worker: holders and sizes', () => {
    const index = new KvBlockIndex();
    index.store(W1, [1, 2, 3]);
    index.store(W2, [2, 3, 4]);
    expect(index.empty).toBe(false);
    expect(index.sizeOf(W1)).toBe(3);
    expect(index.sizeOf(W2)).toBe(3);
    expect([...index.holders(1)!]).toEqual([W1]);
    expect([...index.holders(2)!].sort()).toEqual([W1, W2]);
    expect([...index.holders(4)!]).toEqual([W2]);
    expect(index.holders(5)).toBeUndefined();
  });

  it('counts a block stored twice once', () => {
    const index = new KvBlockIndex();
    index.store(W1, [7, 7]);
    index.store(W1, [7]);
    expect(index.sizeOf(W1)).toBe(1);
    expect([...index.holders(7)!]).toEqual([W1]);
  });

  it('removes blocks: a block nobody holds disappears', () => {
    const index = new KvBlockIndex();
    index.store(W1, [1, 2]);
    index.store(W2, [2]);
    index.remove(W1, [2]);
    expect(index.sizeOf(W1)).toBe(1);
    expect([...index.holders(2)!]).toEqual([W2]);
    index.remove(W2, [2]);
    expect(index.holders(2)).toBeUndefined();
    expect(index.sizeOf(W2)).toBe(0);
    index.remove(W1, [1]);
    expect(index.empty).toBe(true);
  });

  it('removing what a worker does not hold changes nothing', () => {
    const index = new KvBlockIndex();
    index.store(W1, [1]);
    index.store(W2, [2]);
    index.remove(W1, [2, 3]);
    index.remove('http://unknown:1', [1]);
    expect([...index.holders(1)!]).toEqual([W1]);
    expect([...index.holders(2)!]).toEqual([W2]);
    expect(index.sizeOf(W1)).toBe(1);
  });

  it('clear forgets one worker only', () => {
    const index = new KvBlockIndex();
    index.store(W1, [1, 2, 3]);
    index.store(W2, [3]);
    index.clear(W1);
    expect(index.sizeOf(W1)).toBe(0);
    expect(index.holders(1)).toBeUndefined();
    expect([...index.holders(3)!]).toEqual([W2]);
    index.clear(W2);
    index.clear('http://unknown:1');
    expect(index.empty).toBe(true);
  });

  it('storing no blocks leaves the index empty', () => {
    // `empty` is "whether any worker holds any block": a stored event with no hashes must not
    // switch a model to event mode.
    const index = new KvBlockIndex();
    index.store(W1, []);
    expect(index.sizeOf(W1)).toBe(0);
    expect(index.empty).toBe(true);
  });

  it('holders and sizes agree with a model under random store/remove/clear', () => {
    const op = fc.oneof(
      fc.record({
        op: fc.constant('store' as const),
        url: fc.constantFrom(W1, W2),
        keys: fc.array(fc.nat(5), { minLength: 1 }),
      }),
      fc.record({
        op: fc.constant('remove' as const),
        url: fc.constantFrom(W1, W2),
        keys: fc.array(fc.nat(5)),
      }),
      fc.record({ op: fc.constant('clear' as const), url: fc.constantFrom(W1, W2) }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 30 }), (ops) => {
        const index = new KvBlockIndex();
        const model = new Map<string, Set<number>>([
          [W1, new Set()],
          [W2, new Set()],
        ]);
        for (const o of ops) {
          if (o.op === 'store') {
            index.store(o.url, o.keys);
            for (const k of o.keys) model.get(o.url)!.add(k);
          } else if (o.op === 'remove') {
            index.remove(o.url, o.keys);
            for (const k of o.keys) model.get(o.url)!.delete(k);
          } else {
            index.clear(o.url);
            model.get(o.url)!.clear();
          }
          for (const [url, keys] of model) expect(index.sizeOf(url)).toBe(keys.size);
          for (let k = 0; k <= 5; k++) {
            const expected = [W1, W2].filter((u) => model.get(u)!.has(k));
            const holders = index.holders(k);
            expect(holders === undefined ? [] : [...holders].sort()).toEqual(expected);
          }
          expect(index.empty).toBe(model.get(W1)!.size + model.get(W2)!.size === 0);
        }
      }),
      runs(200, 1000),
    );
  });
});

describe('readKvEvent', () => {
  it('reads stored, removed and cleared events', () => {
    expect(readKvEvent({ type: 'stored', model: 'm', hashes: [0n, 2048n] })).toEqual({
      type: 'stored',
      model: 'm',
      keys: [0, 1],
    });
    expect(readKvEvent({ type: 'removed', hashes: [] })).toEqual({
      type: 'removed',
      model: undefined,
      keys: [],
    });
    expect(readKvEvent({ type: 'cleared' })).toEqual({
      type: 'cleared',
      model: undefined,
      keys: [],
    });
    expect(readKvEvent({ type: 'cleared', model: 'm', hashes: 'ignored' })).toEqual({
      type: 'cleared',
      model: 'm',
      keys: [],
    });
  });

  it('rejects events that are not objects or have a bad type', () => {
    for (const event of [null, undefined, 'stored', 42, true])
      expectInvalid(() => readKvEvent(event));
    for (const type of [undefined, 'store', 'STORED', 1, null])
      expectInvalid(() => readKvEvent({ type, hashes: [] }));
  });

  it('rejects a model that is not a string', () => {
    for (const model of [1, null, {}, ['m']])
      expectInvalid(() => readKvEvent({ type: 'stored', model, hashes: [] }));
    expectInvalid(() => readKvEvent({ type: 'cleared', model: 7 }));
  });

  it('rejects stored and removed events without a hashes array', () => {
    for (const type of ['stored', 'removed']) {
      expectInvalid(() => readKvEvent({ type }));
      for (const hashes of [null, 'abc', 12n, { 0: 1n, length: 1 }, new Set([1n])])
        expectInvalid(() => readKvEvent({ type, hashes }));
    }
  });

  it('rejects bad hash values', () => {
    const bad: unknown[] = [
      -1,
      1.5,
      2 ** 53,
      Number.NaN,
      Number.POSITIVE_INFINITY,
      -1n,
      2n ** 64n,
      '',
      '0x',
      'xyz',
      '12345678901234567',
      '-1',
      ' 1',
      null,
      undefined,
      {},
      true,
    ];
    for (const hash of bad)
      expectInvalid(() => readKvEvent({ type: 'stored', hashes: [1n, hash] }));
  });

  it('rejects a hashes array with holes', () => {
    const hashes = new Array<bigint>(3);
    hashes[0] = 1n;
    hashes[2] = 2n;
    expectInvalid(() => readKvEvent({ type: 'stored', hashes }));
  });
});

describe('block keys', () => {
  it('a bigint, a safe integer and a hex string of the same hash are the same key', () => {
    const h = 0x1234_5678_9abcn;
    const key = blockKeyOf(h);
    expect(blockKeyOf(Number(h))).toBe(key);
    expect(blockKeyOf('123456789abc')).toBe(key);
    expect(blockKeyOf('0x123456789abc')).toBe(key);
    expect(blockKeyOf('0x123456789ABC')).toBe(key);
    expect(blockKeyOf('0000123456789abc')).toBe(key);
    expect(readKvEvent({ type: 'stored', hashes: [h, Number(h), '123456789abc'] }).keys).toEqual([
      key,
      key,
      key,
    ]);
  });

  it('reads a string of decimal digits as hex, as it reads any hash string', () => {
    expect(blockKeyOf('1000000000000000')).toBe(blockKeyOf(0x1000_0000_0000_0000n));
    expect(blockKeyOf('1000000000000000')).toBe(2 ** 49);
    expect(blockKeyOf('800')).toBe(1); // 0x800 >> 11
    expect(blockKeyOf('0x800')).toBe(1);
    expect(blockKeyOf('799')).toBe(0); // 0x799 < 2^11
  });

  it('a key is the top 53 bits of the 64-bit hash, whatever its form', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }), (h) => {
        const key = Number(h >> 11n);
        expect(blockKeyOf(h)).toBe(key);
        expect(blockKeyOf(h.toString(16))).toBe(key);
        expect(blockKeyOf(`0x${h.toString(16).padStart(16, '0')}`)).toBe(key);
        if (h <= BigInt(Number.MAX_SAFE_INTEGER)) expect(blockKeyOf(Number(h))).toBe(key);
        expect(blockKey(Number(h >> 32n), Number(h & 0xffff_ffffn))).toBe(key);
        expect(Number.isSafeInteger(key)).toBe(true);
      }),
      runs(300, 2000),
    );
  });

  it('the hashes of blockHashes map onto the keys the policy computes', () => {
    for (const h of blockHashes(
      Array.from({ length: 64 }, (_, i) => i * 7),
      { pageSize: 16 },
    ))
      expect(blockKeyOf(h)).toBe(blockKey(Number(h >> 32n), Number(h & 0xffff_ffffn)));
  });
});
