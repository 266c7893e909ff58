/**
 * The prefix key's quality: prompts that differ get different keys, and the keys of distinct
 * prompts — even prompts that differ in a single small token id — spread evenly over the ring's
 * and the table's buckets.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { loadHasher } from '../../src/core/hash.js';
import { PrefixKey } from '../../src/policies/prefix-hash/prefix-key.js';
import { PrefixTable } from '../../src/policies/prefix-hash/prefix-table.js';
import { runs } from '../helpers/fc-settings.js';

const hasher = await loadHasher();
const BLOCK = 16;

/** The key of `tokens` as an unsigned 64-bit value. */
function keyOf(key: PrefixKey, tokens: ArrayLike<number>): bigint {
  key.hash(hasher, tokens, undefined);
  return (BigInt(key.hi >>> 0) << 32n) | BigInt(key.lo >>> 0);
}

/** Pearson's chi-square of `counts` against a uniform spread. */
function chiSquare(counts: readonly number[]): number {
  const total = counts.reduce((a, b) => a + b, 0);
  const expected = total / counts.length;
  return counts.reduce((sum, c) => sum + (c - expected) ** 2 / expected, 0);
}

describe('prefix_hash key', () => {
  it('prompts of a block that differ in any one token get different keys, whatever the token type', () => {
    fc.assert(
      fc.property(
        fc.array(fc.nat(0xffff_ffff), { minLength: 1, maxLength: BLOCK }),
        fc.nat(),
        fc.nat(0xffff_ffff),
        (prompt, at, value) => {
          const i = at % prompt.length;
          fc.pre(prompt[i] !== value);
          const other = prompt.with(i, value);
          const key = new PrefixKey(BLOCK, 4, undefined);

          const a = keyOf(key, prompt);

          expect(keyOf(key, other)).not.toBe(a);
          expect(keyOf(key, Uint32Array.from(other))).not.toBe(a);
          expect(keyOf(key, Uint32Array.from(prompt))).toBe(a);
        },
      ),
      runs(500, 3_000),
    );
  });

  it('past a branch point, prompts that differ in one token of the key get different keys', () => {
    fc.assert(
      fc.property(
        fc.array(fc.nat(0xffff_ffff), { minLength: 2 * BLOCK, maxLength: 2 * BLOCK }),
        fc.nat(BLOCK - 1),
        fc.nat(0xffff_ffff),
        (prompt, at, value) => {
          fc.pre(prompt[BLOCK + at] !== value);
          const key = new PrefixKey(BLOCK, 4, new PrefixTable(64));
          // The first block becomes a branch point that only the whole next block tells apart.
          const other = prompt.with(2 * BLOCK - 1, prompt[2 * BLOCK - 1]! ^ 1);
          for (const p of [prompt, prompt, other]) keyOf(key, p);

          expect(keyOf(key, prompt.with(BLOCK + at, value))).not.toBe(keyOf(key, prompt));
        },
      ),
      runs(300, 1_500),
    );
  });

  it('spreads the keys of 65,536 prompts differing in one small token id evenly over 256 buckets', () => {
    const key = new PrefixKey(256, 1, undefined);
    const prompt = new Uint32Array(256).fill(7);
    const byHi = new Array<number>(256).fill(0);
    const byLo = new Array<number>(256).fill(0);
    for (let id = 0; id < 65_536; id++) {
      prompt[200] = id;
      key.hash(hasher, prompt, undefined);
      byHi[key.hi >>> 24]!++; // the ring's buckets: the top bits
      byLo[key.lo & 255]!++; // the table's buckets: the low bits
    }

    // 255 degrees of freedom: mean 255, standard deviation 22.6; 340 is exceeded with p < 0.001.
    expect(chiSquare(byHi)).toBeLessThan(340);
    expect(chiSquare(byLo)).toBeLessThan(340);
  });
});
