/**
 * The two key kinds of the radix tree: text (UTF-16 code units, never split inside a surrogate
 * pair) and page-aligned tokens.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MAX_KEY_UNITS, TEXT_KEYS, tokenKeys } from '../../src/cache/tree-keys.js';
import { runs } from '../helpers/fc-settings.js';

const PAIR = '\u{1F600}'; // \uD83D\uDE00
const PAIR_B = '\u{1F601}'; // \uD83D\uDE01
const HIGH = '\uD83D';
const LOW = '\uDE00';

describe('TEXT_KEYS', () => {
  it('uses every code unit, up to MAX_KEY_UNITS', () => {
    expect(TEXT_KEYS.usable('')).toBe(0);
    expect(TEXT_KEYS.usable(`a${PAIR}`)).toBe(3);
    expect(TEXT_KEYS.usable('x'.repeat(MAX_KEY_UNITS + 5))).toBe(MAX_KEY_UNITS);
    expect(TEXT_KEYS.labelLength('abc')).toBe(3);
  });

  it('does not cut a surrogate pair at MAX_KEY_UNITS', () => {
    const key = `${'x'.repeat(MAX_KEY_UNITS - 1)}${PAIR}`;
    // The pair would end past the limit: it is left out whole, never kept as its high half.
    expect(TEXT_KEYS.usable(key)).toBe(MAX_KEY_UNITS - 1);
  });

  it('files children by code point: a pair is one key, a lone surrogate its own', () => {
    expect(TEXT_KEYS.childKeyOf(`a${PAIR}`, 1)).toBe(0x1f600);
    expect(TEXT_KEYS.childKeyOfLabel(PAIR)).toBe(0x1f600);
    expect(TEXT_KEYS.childKeyOf(`a${HIGH}b`, 1)).toBe(0xd83d);
    expect(TEXT_KEYS.childKeyOf(`a${HIGH}`, 1)).toBe(0xd83d);
    expect(TEXT_KEYS.childKeyOfLabel(LOW)).toBe(0xde00);
    expect(TEXT_KEYS.childKeyOfLabel(HIGH)).toBe(0xd83d);
    expect(TEXT_KEYS.childKeyOf('a', 0)).toBe(0x61);
  });

  it('agrees over a whole label, a partial one, and within the limit', () => {
    expect(TEXT_KEYS.agree('hello world', 0, 'hello', 11)).toBe(5);
    expect(TEXT_KEYS.agree('hello world', 6, 'world', 5)).toBe(5);
    expect(TEXT_KEYS.agree('hello', 0, 'help!', 5)).toBe(3);
    expect(TEXT_KEYS.agree('hello', 0, 'hello', 3)).toBe(3);
    expect(TEXT_KEYS.agree('xyz', 0, 'abc', 3)).toBe(0);
    expect(TEXT_KEYS.agree('ab', 0, 'abc', 2)).toBe(2);
  });

  it('backs off to before a pair of the label that the key only half matches', () => {
    expect(TEXT_KEYS.agree(`a${PAIR_B}`, 0, `a${PAIR}b`, 3)).toBe(1);
    expect(TEXT_KEYS.agree(`a${HIGH}`, 0, `a${PAIR}b`, 2)).toBe(1);
    expect(TEXT_KEYS.agree(`a${HIGH}x`, 0, `a${PAIR}b`, 3)).toBe(1);
    expect(TEXT_KEYS.agree(`a${PAIR}`, 0, `a${PAIR}b`, 3)).toBe(3);
  });

  it('backs off to before a pair of the key that the label only half matches', () => {
    // The label ends with (or continues past) the high half of a pair the key has in full.
    expect(TEXT_KEYS.agree(`a${PAIR}`, 0, `a${HIGH}`, 3)).toBe(1);
    expect(TEXT_KEYS.agree(`a${PAIR}`, 0, `a${HIGH}b`, 3)).toBe(1);
    expect(TEXT_KEYS.agree(`a${PAIR}c`, 0, `a${HIGH}`, 4)).toBe(1);
  });

  it('treats lone surrogates as ordinary characters', () => {
    expect(TEXT_KEYS.agree(`${LOW}${HIGH}`, 0, `${LOW}${HIGH}`, 2)).toBe(2);
    expect(TEXT_KEYS.agree(`${HIGH}${HIGH}x`, 0, `${HIGH}${HIGH}y`, 3)).toBe(2);
    expect(TEXT_KEYS.agree(`${LOW}a`, 0, `${LOW}b`, 2)).toBe(1);
  });

  it('agree never ends between the two halves of a pair of either side', () => {
    const unit = fc.constantFrom('a', PAIR, PAIR_B, HIGH, LOW);
    const text = fc.array(unit, { maxLength: 6 }).map((u) => u.join(''));
    fc.assert(
      fc.property(text, text, text, (prefix, key, label) => {
        fc.pre(label.length > 0);
        const whole = prefix + key;
        const n = TEXT_KEYS.agree(whole, prefix.length, label, key.length);
        expect(n).toBeLessThanOrEqual(Math.min(label.length, key.length));
        expect(key.slice(0, n)).toBe(label.slice(0, n));
        const cuts = (s: string): boolean =>
          n > 0 &&
          n < s.length &&
          s.charCodeAt(n - 1) >= 0xd800 &&
          s.charCodeAt(n - 1) <= 0xdbff &&
          s.charCodeAt(n) >= 0xdc00 &&
          s.charCodeAt(n) <= 0xdfff;
        expect(cuts(label), 'inside a label pair').toBe(false);
        expect(cuts(key), 'inside a key pair').toBe(false);
      }),
      runs(300, 2000),
    );
  });

  it('copies and cuts into labels equal to the source range', () => {
    const key = `prefix ${PAIR} and a long enough tail to be sliced`;
    expect(TEXT_KEYS.copy(key, 7, 20)).toBe(key.slice(7, 20));
    expect(TEXT_KEYS.copy(key, 0, 3)).toBe('pre');
    expect(TEXT_KEYS.cut('abcdefghijklmnopqrstuvwxyz', 2, 20)).toBe('cdefghijklmnopqrst');
    expect(TEXT_KEYS.cut('abc', 1, 3)).toBe('bc');
  });
});

describe('tokenKeys', () => {
  const ops = tokenKeys(4);

  it('uses whole pages only, up to MAX_KEY_UNITS', () => {
    expect(ops.usable([])).toBe(0);
    expect(ops.usable([1, 2, 3])).toBe(0);
    expect(ops.usable([1, 2, 3, 4])).toBe(4);
    expect(ops.usable([1, 2, 3, 4, 5, 6, 7])).toBe(4);
    expect(tokenKeys(16).usable(new Uint32Array(40))).toBe(32);
    expect(tokenKeys(3).usable({ length: MAX_KEY_UNITS + 10 })).toBe(
      MAX_KEY_UNITS - (MAX_KEY_UNITS % 3),
    );
    expect(tokenKeys(1).usable([9])).toBe(1);
  });

  it('files a page by its first token', () => {
    expect(ops.childKeyOf([5, 6, 7, 8, 9, 10, 11, 12], 4)).toBe(9);
    expect(ops.childKeyOfLabel(new Uint32Array([42, 1, 2, 3]))).toBe(42);
  });

  it('agrees in whole pages: a partial page counts for nothing', () => {
    const label = new Uint32Array([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(ops.agree([1, 2, 3, 4, 5, 6, 7, 8], 0, label, 8)).toBe(8);
    expect(ops.agree([1, 2, 3, 4, 5, 6, 7, 9], 0, label, 8)).toBe(4);
    expect(ops.agree([1, 2, 3, 9, 5, 6, 7, 8], 0, label, 8)).toBe(0);
    expect(ops.agree([1, 2, 3, 4, 5, 6, 7, 8], 0, label, 4)).toBe(4);
    expect(ops.agree([0, 0, 0, 0, 1, 2, 3, 4], 4, label, 4)).toBe(4);
  });

  it('reads ids that are not unsigned 32-bit integers as 0', () => {
    const bad = [-1, 1.5, Number.NaN, 2 ** 32, Number.POSITIVE_INFINITY, undefined, '7', 3n];
    const key = bad as unknown as number[];
    const label = ops.copy(key.slice(0, 8), 0, 8);
    expect([...label]).toEqual([0, 0, 0, 0, 0, 0, 0, 0]);
    expect(ops.childKeyOf(key, 0)).toBe(0);
    expect(ops.agree(key, 0, new Uint32Array(8), 8)).toBe(8);
    expect(ops.agree([0xffff_ffff, 0, 0, 0], 0, new Uint32Array([0xffff_ffff, 0, 0, 0]), 4)).toBe(
      4,
    );
  });

  it('copies into a Uint32Array of its own', () => {
    const key = new Uint32Array([1, 2, 3, 4, 5, 6, 7, 8]);
    const label = ops.copy(key, 4, 8);
    expect([...label]).toEqual([5, 6, 7, 8]);
    expect(label.buffer).not.toBe(key.buffer);
    expect(label.buffer.byteLength).toBe(16);
    key[4] = 99;
    expect(label[0]).toBe(5);
  });

  it('cuts into a copy, not a view', () => {
    const label = new Uint32Array([1, 2, 3, 4, 5, 6, 7, 8]);
    const tail = ops.cut(label, 4, 8);
    expect([...tail]).toEqual([5, 6, 7, 8]);
    expect(tail.buffer).not.toBe(label.buffer);
    expect(tail.buffer.byteLength).toBe(16);
  });
});
