import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { blockKeys } from '../../src/sim/block-keys.js';
import { runs } from '../helpers/fc-settings.js';

describe('blockKeys', () => {
  it('block i agrees exactly when the first (i + 1) × blockSize tokens agree', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 5 }), { minLength: 0, maxLength: 80 }),
        fc.array(fc.integer({ min: 0, max: 5 }), { minLength: 0, maxLength: 80 }),
        fc.integer({ min: 1, max: 8 }),
        (a, b, size) => {
          const ka = blockKeys(a, size);
          const kb = blockKeys(b, size);
          for (let i = 0; i < Math.min(ka.length, kb.length); i++) {
            const same = a.slice(0, (i + 1) * size).every((t, j) => t === b[j]);
            expect(ka[i] === kb[i]).toBe(same);
          }
        },
      ),
      runs(500, 5_000),
    );
  });

  it('keys of a prompt continued by its answer equal the keys of their concatenation', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 5 }), { maxLength: 60 }),
        fc.array(fc.integer({ min: 0, max: 5 }), { maxLength: 60 }),
        fc.integer({ min: 1, max: 8 }),
        (prompt, answer, size) => {
          expect(blockKeys(prompt, size, answer)).toEqual(blockKeys([...prompt, ...answer], size));
        },
      ),
      runs(300, 3_000),
    );
  });

  it('has one key per full block, each an integer below 2^53', () => {
    const keys = blockKeys(
      Uint32Array.from({ length: 50 }, (_, i) => i * 7919),
      16,
    );
    expect(keys.length).toBe(3);
    for (const k of keys) expect(Number.isSafeInteger(k) && k >= 0).toBe(true);
  });
});
