/**
 * `EngineBlocks`, the translator's remembered blocks: against a plain array kept in the order
 * blocks were last stored, under any stores (new hashes and hashes stored again), deletions,
 * evictions of the oldest and clears — slots freed, reused and grown past the first 64.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { EngineBlocks, NONE } from '../../src/kv-events/engine-blocks.js';
import { runs } from '../helpers/fc-settings.js';

describe('EngineBlocks', () => {
  it('holds the blocks last stored, oldest first, as a list in storing order would', () => {
    const op = fc.oneof(
      {
        weight: 6,
        arbitrary: fc.record({
          kind: fc.constant('store' as const),
          hash: fc.bigInt({ min: 0n, max: 200n }),
          model: fc.constantFrom(undefined, 'a', 'b'),
        }),
      },
      {
        weight: 2,
        arbitrary: fc.record({
          kind: fc.constant('delete' as const),
          hash: fc.bigInt({ min: 0n, max: 200n }),
        }),
      },
      { weight: 2, arbitrary: fc.constant({ kind: 'evict' as const }) },
      { weight: 1, arbitrary: fc.constant({ kind: 'clear' as const }) },
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 400 }), (ops) => {
        const blocks = new EngineBlocks();
        const model: { hash: bigint; model: string | undefined; stamp: number }[] = [];
        ops.forEach((o, stamp) => {
          if (o.kind === 'store') {
            const at = model.findIndex((b) => b.hash === o.hash);
            if (at >= 0) model.splice(at, 1);
            model.push({ hash: o.hash, model: o.model, stamp });
            blocks.store(o.hash, o.model, Uint32Array.of(stamp, Number(o.hash)), stamp);
          } else if (o.kind === 'delete') {
            const at = model.findIndex((b) => b.hash === o.hash);
            const slot = blocks.slotOf(o.hash);
            expect(slot === NONE).toBe(at < 0);
            if (at >= 0) {
              model.splice(at, 1);
              blocks.delete(slot);
            }
          } else if (o.kind === 'evict') {
            const oldest = blocks.oldest;
            expect(oldest === NONE).toBe(model.length === 0);
            if (oldest !== NONE) {
              expect(blocks.stampAt(oldest)).toBe(model.shift()!.stamp);
              blocks.delete(oldest);
            }
          } else {
            model.length = 0;
            blocks.clear();
          }
          expect(blocks.size).toBe(model.length);
        });
        // Every block by its hash, as last stored; then the storing order, by evicting all.
        for (const b of model) {
          const slot = blocks.slotOf(b.hash);
          expect(blocks.modelAt(slot)).toBe(b.model);
          expect([...blocks.keysAt(slot)]).toEqual([b.stamp, Number(b.hash)]);
        }
        for (const b of model) {
          expect(blocks.stampAt(blocks.oldest)).toBe(b.stamp);
          blocks.delete(blocks.oldest);
        }
        expect(blocks.oldest).toBe(NONE);
        expect(blocks.size).toBe(0);
      }),
      runs(200, 1_000),
    );
  });
});
