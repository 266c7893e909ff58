/**
 * The flat hash tables of block keys: a model check against `Map` and `Set` through growth and
 * backward-shift deletion, keys over the whole 53-bit range.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BlockMap, BlockSet } from '../../src/sim/block-table.js';
import { runs } from '../helpers/fc-settings.js';

/** Keys that differ in their low bits, their high bits, or both, as block keys do. */
const keyOf = (i: number, style: number): number =>
  style === 0 ? i : style === 1 ? i * 4_294_967_296 : (i * 2_654_435_761 * 2_097_152) % 2 ** 53;

describe('BlockMap', () => {
  it('model check: get, set, add and delete agree with a Map through growth and deletions', () => {
    type Op = { kind: 'set' | 'add' | 'delete'; key: number; value: number };
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 2 }),
        fc.integer({ min: 4, max: 300 }),
        fc.array(
          fc.record({
            kind: fc.constantFrom<Op['kind']>('set', 'add', 'delete'),
            key: fc.nat(1_000),
            value: fc.nat(2 ** 31 - 1),
          }),
          { maxLength: 400 },
        ),
        (style, pool, ops) => {
          const map = new BlockMap();
          const model = new Map<number, number>();
          for (const o of ops) {
            const key = keyOf(o.key % pool, style);
            if (o.kind === 'set') {
              map.set(key, o.value);
              model.set(key, o.value);
            } else if (o.kind === 'add') {
              expect(map.add(key, o.value)).toBe(model.get(key) ?? -1);
              if (!model.has(key)) model.set(key, o.value);
            } else {
              expect(map.delete(key)).toBe(model.delete(key));
            }
            expect(map.size).toBe(model.size);
          }
          for (let i = 0; i < pool; i++) {
            const key = keyOf(i, style);
            expect(map.get(key)).toBe(model.get(key) ?? -1);
          }
        },
      ),
      runs(200, 2_000),
    );
  });
});

describe('BlockSet', () => {
  it('model check: add and has agree with a Set through growth', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 2 }),
        fc.array(fc.nat(5_000), { maxLength: 3_000 }),
        (style, values) => {
          const set = new BlockSet();
          const model = new Set<number>();
          for (const v of values) {
            const key = keyOf(v, style);
            expect(set.add(key)).toBe(!model.has(key));
            model.add(key);
          }
          expect(set.size).toBe(model.size);
          for (let v = 0; v < 5_000; v += 7) {
            expect(set.has(keyOf(v, style))).toBe(model.has(keyOf(v, style)));
          }
        },
      ),
      runs(50, 500),
    );
  });

  it('costs at most 8 bytes per slot at a load of at least 3/8 once grown', () => {
    const set = new BlockSet();
    for (let i = 0; i < 100_000; i++) set.add(i * 977);
    expect(set.size).toBe(100_000);
    expect(set.bytes).toBeLessThanOrEqual(Math.ceil((100_000 / 0.375) * 8));
  });
});
