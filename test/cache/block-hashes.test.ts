/**
 * `blockHashes`: the documented, stable scheme of chained per-block hashes, recomputed
 * here independently with `xxhash-wasm`, plus validation and a golden table that pins it.
 */
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import xxhash from 'xxhash-wasm';
import { blockHashHalves } from '../../src/cache/block-hashes.js';
import { blockHashes, FleetRouteError, HashRing } from '../../src/index.js';
import { runs } from '../helpers/fc-settings.js';

type H64Raw = (bytes: Uint8Array) => bigint;
let h64Raw: H64Raw;

beforeAll(async () => {
  await HashRing.create([]); // loads the library's hasher
  const api = await xxhash();
  h64Raw = (bytes) => api.h64Raw(bytes);
});

function tokenId(value: unknown): number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= 0xffff_ffff
    ? value
    : 0;
}

/**
 * The documented scheme: block i hashes, with xxh64 seed 0, the previous block's hash as an
 * 8-byte little-endian uint64 (0 for block 0) followed by the block's pageSize token ids as
 * little-endian uint32; only full pages have a hash.
 */
function reference(tokens: ArrayLike<unknown>, pageSize: number): bigint[] {
  const out: bigint[] = [];
  let parent = 0n;
  for (let b = 0; (b + 1) * pageSize <= tokens.length; b++) {
    const bytes = new Uint8Array(8 + 4 * pageSize);
    const view = new DataView(bytes.buffer);
    view.setBigUint64(0, parent, true);
    for (let i = 0; i < pageSize; i++)
      view.setUint32(8 + 4 * i, tokenId(tokens[b * pageSize + i]), true);
    parent = h64Raw(bytes);
    out.push(parent);
  }
  return out;
}

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

const range = (n: number, from = 0): number[] => Array.from({ length: n }, (_, i) => i + from);

describe('blockHashes', () => {
  it('the reference is xxh64 with seed 0', () => {
    // Published test vector: XXH64 of the empty input with seed 0.
    expect(h64Raw(new Uint8Array(0))).toBe(0xef46db3751d8e999n);
  });

  it('matches the documented scheme for any tokens and page size', () => {
    const token = fc.oneof(
      { arbitrary: fc.nat({ max: 0xffff_ffff }), weight: 8 },
      { arbitrary: fc.constantFrom(0, 1, 0xffff_ffff), weight: 2 },
      { arbitrary: fc.constantFrom(-1, 1.5, Number.NaN, 2 ** 32, -0), weight: 1 },
    );
    fc.assert(
      fc.property(
        fc.array(token, { maxLength: 80 }),
        fc.integer({ min: 1, max: 20 }),
        (tokens, pageSize) => {
          expect(blockHashes(tokens, { pageSize })).toEqual(reference(tokens, pageSize));
        },
      ),
      runs(300, 2000),
    );
  });

  it('hashes full pages only, 16 tokens by default', () => {
    expect(blockHashes([])).toEqual([]);
    expect(blockHashes(range(15))).toEqual([]);
    expect(blockHashes(range(16))).toHaveLength(1);
    expect(blockHashes(range(47))).toEqual(reference(range(47), 16));
    expect(blockHashes(range(47))).toHaveLength(2);
    expect(blockHashes(range(10), { pageSize: 4 })).toHaveLength(2);
    expect(blockHashes(range(3), { pageSize: 4 })).toEqual([]);
  });

  it('chains: a block hash identifies its whole prefix', () => {
    const a = range(32);
    const changedFirst = [...a];
    changedFirst[0] = 999;
    const changedSecond = [...a];
    changedSecond[20] = 999;
    const [a0, a1] = blockHashes(a);
    const [f0, f1] = blockHashes(changedFirst);
    const [s0, s1] = blockHashes(changedSecond);
    expect(f0).not.toBe(a0);
    expect(f1).not.toBe(a1); // same second page, different prefix
    expect(s0).toBe(a0);
    expect(s1).not.toBe(a1);
    // The same page in first and second position hashes differently.
    const [p0, p1] = blockHashes([...range(4), ...range(4)], { pageSize: 4 });
    expect(p0).not.toBe(p1);
    // A longer list extends the hashes of its prefix.
    expect(blockHashes(range(48)).slice(0, 2)).toEqual(blockHashes(range(32)));
  });

  it('every hash is an unsigned 64-bit bigint', () => {
    for (const hash of blockHashes(range(64, 100_000), { pageSize: 4 })) {
      expect(typeof hash).toBe('bigint');
      expect(hash >= 0n && hash < 2n ** 64n).toBe(true);
    }
  });

  it('takes typed arrays and array-likes', () => {
    const plain = range(32, 50_000);
    const expected = blockHashes(plain);
    expect(blockHashes(new Uint32Array(plain))).toEqual(expected);
    expect(blockHashes(new Int32Array(plain))).toEqual(expected);
    expect(blockHashes(new Float64Array(plain))).toEqual(expected);
    expect(blockHashes({ length: 16 } as ArrayLike<number>)).toEqual(
      blockHashes(new Array(16).fill(0)),
    );
  });

  it('reads bad token values as 0', () => {
    const zeros = blockHashes([0, 0, 0, 0, 0, 0, 0, 0], { pageSize: 8 });
    const bad = [-1, 1.5, Number.NaN, 2 ** 32, Number.POSITIVE_INFINITY, -0, undefined, '7'];
    expect(blockHashes(bad as unknown as number[], { pageSize: 8 })).toEqual(zeros);
  });

  it('reads bigint and symbol token values as 0 instead of throwing', () => {
    const zeros = blockHashes([0, 0, 0, 0], { pageSize: 4 });
    expect(blockHashes([0n, 1n, 0, 0] as unknown as number[], { pageSize: 4 })).toEqual(zeros);
    expect(blockHashes([Symbol('t'), 0, 0, 0] as unknown as number[], { pageSize: 4 })).toEqual(
      zeros,
    );
  });

  it('validates pageSize: an integer from 1 to 4096', () => {
    for (const pageSize of [0, -1, 1.5, 4097, Number.NaN, Number.POSITIVE_INFINITY, '16', null])
      expectInvalid(() => blockHashes(range(16), { pageSize } as { pageSize: number }));
    expect(blockHashes(range(4), { pageSize: 1 })).toHaveLength(4);
    expect(blockHashes(range(4096), { pageSize: 4096 })).toEqual(reference(range(4096), 4096));
    expect(blockHashes(range(16), {})).toEqual(blockHashes(range(16), { pageSize: 16 }));
  });

  it('parent continues a chain: hashing the rest under the last hash of the start equals hashing the whole', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 8 }),
        fc.integer({ min: 0, max: 6 }),
        fc.array(fc.nat({ max: 0xffff_ffff }), { maxLength: 60 }),
        (pageSize, startPages, rest) => {
          const start = Array.from({ length: startPages * pageSize }, (_, i) => (i * 7_919) >>> 0);
          const whole = blockHashes([...start, ...rest], { pageSize });
          const head = blockHashes(start, { pageSize });
          const parent = head.at(-1);
          const tail = blockHashes(
            rest,
            parent === undefined ? { pageSize } : { pageSize, parent },
          );
          expect([...head, ...tail]).toEqual(whole);
        },
      ),
      runs(200, 1_000),
    );
  });

  it('parent 0n is the default; parent must be a bigint in 0 … 2^64 − 1', () => {
    expect(blockHashes(range(32), { parent: 0n })).toEqual(blockHashes(range(32)));
    expect(blockHashes(range(16), { parent: 1n })).not.toEqual(blockHashes(range(16)));
    expect(blockHashes(range(16), { parent: 0xffff_ffff_ffff_ffffn })).toHaveLength(1);
    for (const parent of [-1n, 2n ** 64n, 5, '0', null])
      expectInvalid(() => blockHashes(range(16), { parent } as unknown as { parent: bigint }));
  });

  it('validates options and tokens', () => {
    for (const options of [null, 'x', 16, []])
      expectInvalid(() => blockHashes(range(16), options as unknown as { pageSize: number }));
    for (const tokens of [null, undefined, 'abcd', 42, { size: 4 }])
      expectInvalid(() => blockHashes(tokens as unknown as number[]));
  });

  it('golden table: the scheme is pinned', () => {
    // Recorded once from the implementation (and equal to the reference above); a change here
    // breaks every caller that maps engine events onto these keys.
    const golden: [number[], number, bigint[]][] = [
      [range(16), 16, [0x3563e4acbc3b0421n]],
      [range(32, 1), 16, [0x543ebdc79d062593n, 0xaac61fca2c63c370n]],
      [
        [128000, 9906, 11, 1917, 0, 4294967295, 7, 8],
        4,
        [0xa226a8492e6d4c73n, 0x9f9f08e274984e33n],
      ],
      [[0, 0, 0, 0], 4, [0xbb3302e8a9608868n]],
    ];
    for (const [tokens, pageSize, hashes] of golden) {
      expect(blockHashes(tokens, { pageSize })).toEqual(hashes);
      expect(reference(tokens, pageSize)).toEqual(hashes);
    }
  });
});

describe('blockHashes needs nothing loaded', () => {
  it('hashes synchronously in a fresh process, before any registry or ring exists', async () => {
    const { execFile } = await import('node:child_process');
    const { promisify } = await import('node:util');
    const code = `import { blockHashes } from ${JSON.stringify(new URL('../../src/index.ts', import.meta.url).pathname)};
      console.log(String(blockHashes(Array.from({ length: 32 }, (_, i) => i))[1]));`;
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', '--input-type=module', '-e', code],
      { timeout: 60_000 },
    );
    expect(stdout.trim()).toBe(String(blockHashes(range(32, 0))[1]));
  });
});

describe('blockHashHalves', () => {
  it('gives the same hashes as halves, at most limit blocks', () => {
    const tokens = range(40, 7);
    const hi = new Uint32Array(10);
    const lo = new Uint32Array(10);
    expect(blockHashHalves(tokens, 4, 10, hi, lo)).toBe(10);
    const full = blockHashes(tokens, { pageSize: 4 });
    for (let b = 0; b < 10; b++) expect((BigInt(hi[b]!) << 32n) | BigInt(lo[b]!)).toBe(full[b]);
    expect(blockHashHalves(tokens, 4, 3, hi, lo)).toBe(3);
    expect(blockHashHalves(tokens.slice(0, 7), 4, 10, hi, lo)).toBe(1);
  });
});
