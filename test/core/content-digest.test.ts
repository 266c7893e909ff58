/**
 * The digest of a content part: xxh64 over its canonical encoding, block by block. It equals a
 * reference computed from the whole encoding at once (so streaming and cutting blocks change
 * nothing), ignores key order, tells apart values that differ anywhere (lone surrogates
 * included), and walks any depth without recursion.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import xxhash from 'xxhash-wasm';
import { contentDigest } from '../../src/core/content-digest.js';
import { FleetRouteError } from '../../src/core/errors.js';
import { runs } from '../helpers/fc-settings.js';

const api = await xxhash();
const BLOCK = 65_536;
const LONE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** The canonical encoding, written out recursively from its definition. */
function canonical(value: unknown): string {
  if (value === null) return 'n';
  switch (typeof value) {
    case 'boolean':
      return value ? 't' : 'f';
    case 'number':
      return Number.isFinite(value) ? `d${value};` : 'n';
    case 'bigint':
      return `d${value};`;
    case 'string': {
      if (!LONE.test(value)) return `s${value.length}:${value}`;
      const json = JSON.stringify(value);
      return `j${json.length}:${json}`;
    }
    case 'object': {
      if (Array.isArray(value)) return `[${value.map(canonical).join('')}]`;
      const record = value as Record<string, unknown>;
      const keys = Object.keys(record)
        .filter((k) => !['undefined', 'function', 'symbol'].includes(typeof record[k]))
        .sort();
      return `{${keys.map((k) => canonical(k) + canonical(record[k])).join('')}}`;
    }
    default:
      return 'n';
  }
}

/**
 * The scheme, computed from the whole encoding: its UTF-8 bytes cut into blocks of at most
 * 64 KiB that end on a character boundary, each hashed with the previous block's hash.
 */
function reference(value: unknown): string {
  const bytes = new TextEncoder().encode(canonical(value));
  let seed = 0n;
  let from = 0;
  do {
    let to = Math.min(from + BLOCK, bytes.length);
    while (to < bytes.length && (bytes[to]! & 0xc0) === 0x80) to--;
    seed = api.h64Raw(bytes.subarray(from, to), seed);
    from = to;
  } while (from < bytes.length);
  return seed.toString(16).padStart(16, '0');
}

const units = fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c));

describe('contentDigest', () => {
  it('is xxh64 of the canonical encoding for a value in one block', () => {
    const value = { type: 'image_url', image_url: { url: 'https://x/a.png', detail: 'low' } };
    const encoded =
      '{s9:image_url{s6:detail' + 's3:lows3:urls15:https://x/a.png}s4:types9:image_url}';
    expect(canonical(value)).toBe(encoded);
    expect(contentDigest(value, 'part')).toBe(api.h64(encoded).toString(16).padStart(16, '0'));
  });

  it('equals the reference for any JSON value, lone surrogates included', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 4 }), fc.string({ unit: units }), (value, s) => {
        expect(contentDigest(value, 'part')).toBe(reference(value));
        const nested = { [s]: [s, value] };
        expect(contentDigest(nested, 'part')).toBe(reference(nested));
      }),
      runs(300, 2_000),
    );
  });

  it('equals the reference across blocks, pairs and 3-byte characters straddling every boundary', () => {
    // 16,384 units staged at most, 65,536 bytes per block.
    for (const filler of ['a', 'é', '€', '\n']) {
      for (const shift of [0, 1, 2, 3]) {
        const s = `${'x'.repeat(shift)}${filler.repeat(16_383)}😀${'€'.repeat(30_000)}😀"\\`;
        const value = { type: 'file', file: { file_data: s.repeat(3) } };
        expect(contentDigest(value, 'part')).toBe(reference(value));
      }
    }
  });

  it('ignores the order of keys, nowhere else', () => {
    const a = { type: 'input_audio', input_audio: { data: 'AAAA', format: 'wav' } };
    const b = { input_audio: { format: 'wav', data: 'AAAA' }, type: 'input_audio' };
    expect(contentDigest(a, 'part')).toBe(contentDigest(b, 'part'));
    expect(contentDigest([1, 2], 'part')).not.toBe(contentDigest([2, 1], 'part'));
  });

  it('tells apart strings that differ by one lone surrogate, or from its replacement character', () => {
    const digests = new Set(
      ['\ud800', '\ud801', '\udc00', '\ufffd', '\ud800\udc00', ''].map((s) =>
        contentDigest({ url: s }, 'part'),
      ),
    );
    expect(digests.size).toBe(6);
  });

  it('tells apart long strings that differ only in their last character', () => {
    const long = 'A'.repeat(3_000_000);
    expect(contentDigest(long, 'part')).toBe(reference(long));
    expect(contentDigest(`${long}A`, 'part')).not.toBe(contentDigest(`${long}B`, 'part'));
    expect(contentDigest(`${long}A`, 'part')).toBe(contentDigest(`${long}A`, 'part'));
  });

  it('walks 100,000 levels of nesting without recursion', () => {
    let deep: unknown = 'core';
    for (let i = 0; i < 100_000; i++) deep = i % 2 === 0 ? [deep] : { k: deep };
    const a = contentDigest(deep, 'part');
    expect(a).toMatch(/^[0-9a-f]{16}$/);
    expect(contentDigest([deep], 'part')).not.toBe(a);
  });

  it('writes what JSON writes for values JSON cannot hold, and never throws for them', () => {
    const odd = { a: undefined, f: () => 1, s: Symbol('s'), n: Number.NaN, i: -0, b: 12n };
    expect(contentDigest(odd, 'part')).toBe(contentDigest({ n: null, i: 0, b: 12 }, 'part'));
    expect(contentDigest(odd, 'part')).toBe(reference(odd));
    expect(contentDigest([undefined, () => 1], 'part')).toBe(contentDigest([null, null], 'part'));
  });

  it('refuses a value that contains itself, naming the field', () => {
    const part: Record<string, unknown> = { type: 'x' };
    part.self = { inner: [part] };
    expect(() => contentDigest(part, 'messages[0].content[1]')).toThrow(
      expect.objectContaining({
        code: 'INVALID_ARGUMENT',
        message: expect.stringContaining('messages[0].content[1]'),
      }),
    );
    expect(() => contentDigest(part, 'x')).toThrow(FleetRouteError);
    // A value seen twice, side by side, is not a cycle.
    const shared = { url: 'u' };
    expect(contentDigest([shared, shared], 'part')).toBe(reference([shared, shared]));
  });
});
