/**
 * The WebAssembly block hasher: its xxh64 is bit-identical to xxhash-wasm's for any bytes and
 * seed; its chained block hashes equal hashing each block's bytes (previous hash ‖ tokens) one
 * by one; and the embedded module is exactly the compiled `src/core/wasm/xxh64.wat`.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import xxhash from 'xxhash-wasm';
import { compile, render } from '../../scripts/build-wasm.mjs';
import { BLOCKS_PER_CALL, blockHasher } from '../../src/core/block-hasher.js';
import { XXH64_WASM_BASE64 } from '../../src/core/wasm/xxh64-module.js';
import { runs } from '../helpers/fc-settings.js';

const api = await xxhash();
const u64 = fc.bigInt({ min: 0n, max: (1n << 64n) - 1n });

/** The scheme's bytes of one block: the previous hash (LE uint64) then the tokens (LE uint32). */
function blockBytes(prev: bigint, tokens: readonly number[]): Uint8Array {
  const bytes = new Uint8Array(8 + 4 * tokens.length);
  const view = new DataView(bytes.buffer);
  view.setBigUint64(0, prev, true);
  for (const [i, t] of tokens.entries()) view.setUint32(8 + 4 * i, t >>> 0 === t ? t : 0, true);
  return bytes;
}

describe('block hasher', () => {
  it('xxh64 equals xxhash-wasm h64 for any bytes and seed', () => {
    const hasher = blockHasher();
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), u64, (bytes, seed) => {
        const got = hasher.xxh64(bytes, Number(seed >> 32n), Number(seed & 0xffff_ffffn));
        expect(got).toBe(api.h64Raw(bytes, seed));
      }),
      runs(1_000, 3_000),
    );
  });

  it('xxh64 of inputs past one memory page grows the memory and still agrees', () => {
    const bytes = Uint8Array.from({ length: 200_000 }, (_, i) => (i * 31) & 255);
    expect(blockHasher().xxh64(bytes)).toBe(api.h64Raw(bytes, 0n));
  });

  it('chain hashes every block from the previous one, for plain arrays and Uint32Array alike', () => {
    const hasher = blockHasher();
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 40 }),
        fc.integer({ min: 1, max: BLOCKS_PER_CALL }),
        u64,
        fc.array(fc.oneof(fc.nat(), fc.integer(), fc.double()), {
          minLength: 40 * 64,
          maxLength: 40 * 64,
        }),
        (page, count, seed, raw) => {
          const tokens = raw.slice(0, page * count);
          let prev = seed;
          const want: bigint[] = [];
          for (let b = 0; b < count; b++) {
            prev = api.h64Raw(blockBytes(prev, tokens.slice(b * page, (b + 1) * page)), 0n);
            want.push(prev);
          }
          const read = () =>
            Array.from(
              { length: count },
              (_, k) => (BigInt(hasher.hi(k)) << 32n) | BigInt(hasher.lo(k)),
            );
          const hi = Number(seed >> 32n);
          const lo = Number(seed & 0xffff_ffffn);
          hasher.hash(tokens, page, 0, count, hi, lo);
          expect(read()).toEqual(want);
          const valid = tokens.map((t) => (typeof t === 'number' && t >>> 0 === t ? t : 0));
          hasher.hash(Uint32Array.from(valid), page, 0, count, hi, lo);
          expect(read()).toEqual(want);
        },
      ),
      runs(200, 1_000),
    );
  });

  it('hashWords is xxh64 of the loaded words as little-endian uint32, for plain arrays, Uint32Arrays and parts of them', () => {
    const hasher = blockHasher();
    fc.assert(
      fc.property(
        fc.array(fc.oneof(fc.nat(0xffff_ffff), fc.integer(), fc.double()), { maxLength: 80 }),
        fc.nat(80),
        fc.nat(80),
        u64,
        (raw, from, length, seed) => {
          const start = Math.min(from, raw.length);
          const count = Math.min(length, raw.length - start);
          const valid = raw.map((t) => (typeof t === 'number' && t >>> 0 === t ? t : 0));
          const words = Uint32Array.from(valid.slice(start, start + count));
          const want = api.h64Raw(new Uint8Array(words.buffer), seed);
          const hi = Number(seed >> 32n);
          const lo = Number(seed & 0xffff_ffffn);
          const read = () => (BigInt(hasher.lastHi >>> 0) << 32n) | BigInt(hasher.lastLo >>> 0);
          const inBuffer = new Uint32Array(valid.length + 5);
          inBuffer.set(valid, 2);
          const views = [raw, Uint32Array.from(valid), inBuffer.subarray(2, 2 + valid.length)];

          for (const tokens of views) {
            hasher.loadWords(tokens, start, count);
            hasher.hashWords(count, hi, lo);
            expect(read()).toBe(want);
          }
        },
      ),
      runs(300, 1_500),
    );
  });

  it('hashWords of a shorter count hashes the first words loaded, and past one memory page still agrees', () => {
    const hasher = blockHasher();
    const tokens = Uint32Array.from({ length: 70_000 }, (_, i) => (i * 2_654_435_761) >>> 0);
    hasher.loadWords(Array.from(tokens), 0, tokens.length);
    hasher.hashWords(tokens.length, 0, 0);
    expect((BigInt(hasher.lastHi >>> 0) << 32n) | BigInt(hasher.lastLo >>> 0)).toBe(
      api.h64Raw(new Uint8Array(tokens.buffer), 0n),
    );
    hasher.hashWords(3, 7, 9);
    expect((BigInt(hasher.lastHi >>> 0) << 32n) | BigInt(hasher.lastLo >>> 0)).toBe(
      api.h64Raw(new Uint8Array(tokens.buffer, 0, 12), (7n << 32n) | 9n),
    );
  });

  it('the embedded module is the compiled .wat (run scripts/build-wasm.mjs after editing it)', async () => {
    const bytes = await compile();
    expect(bytes.toString('base64')).toBe(XXH64_WASM_BASE64);
    expect(render(bytes)).toContain(XXH64_WASM_BASE64.slice(0, 96));
  });
});
