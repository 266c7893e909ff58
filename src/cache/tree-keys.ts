/**
 * The two key kinds of the approximate radix tree: text (UTF-16 code units, never split inside a
 * surrogate pair) and tokens (page-aligned: only whole pages are stored or matched).
 *
 * A `KeyOps` tells the tree how long a key is, which child a position leads to, how far a key
 * and a label agree, and how to copy part of a key into a label that owns its memory.
 *
 * @module
 * @internal
 */

/** Longest key the tree stores, in units (characters or tokens); the rest of a key is ignored. */
export const MAX_KEY_UNITS = 1_048_576;

/** @internal What the tree needs to know about a key kind `K` with labels `L`. */
export interface KeyOps<K, L> {
  /** Units of `key` the tree uses (text: code units; tokens: whole pages only). */
  usable(key: K): number;
  /** Length of a label in units. */
  labelLength(label: L): number;
  /** The child key at `pos` of `key` (text: the code point; tokens: the page's first token). */
  childKeyOf(key: K, pos: number): number;
  /** The child key of a label (its first unit). */
  childKeyOfLabel(label: L): number;
  /**
   * How many units from `key[pos]` on agree with `label` (at most `limit`), rounded down to a
   * boundary the tree may split at.
   */
  agree(key: K, pos: number, label: L, limit: number): number;
  /** A label holding `key[from … to)`, in memory of its own (no reference to `key`). */
  copy(key: K, from: number, to: number): L;
  /** A label holding `label[from … to)`. */
  cut(label: L, from: number, to: number): L;
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

function isLowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff;
}

/**
 * Text keys. Lengths are UTF-16 code units; a split never falls between the two halves of a
 * surrogate pair, so a character outside the BMP is one unit of matching. Lone surrogates are
 * ordinary characters. Labels are flat copies, so a stored label never keeps a whole prompt alive.
 *
 * @internal
 */
export const TEXT_KEYS: KeyOps<string, string> = {
  usable: (key) => {
    if (key.length <= MAX_KEY_UNITS) return key.length;
    // Cut before a surrogate pair rather than through it.
    const last = key.charCodeAt(MAX_KEY_UNITS - 1);
    return isHighSurrogate(last) && isLowSurrogate(key.charCodeAt(MAX_KEY_UNITS))
      ? MAX_KEY_UNITS - 1
      : MAX_KEY_UNITS;
  },
  labelLength: (label) => label.length,
  childKeyOf: (key, pos) => key.codePointAt(pos) ?? 0,
  childKeyOfLabel: (label) => label.codePointAt(0) ?? 0,
  agree(key, pos, label, limit) {
    const n = Math.min(label.length, limit);
    // String equality is a memcmp for flat strings (≈ 0.03 ns per character, where startsWith and
    // a charCodeAt loop cost 0.4 and 1.7 ns): compare the whole label first, the common case on a
    // shared prefix, then binary-search the mismatch with equality of halves.
    let agreed: number;
    if (n === label.length && key.slice(pos, pos + n) === label) {
      agreed = n;
    } else {
      let lo = 0;
      let hi = n;
      while (lo < hi) {
        const mid = (lo + hi + 1) >>> 1;
        if (key.slice(pos + lo, pos + mid) === label.slice(lo, mid)) lo = mid;
        else hi = mid - 1;
      }
      agreed = lo;
    }
    // Never split a surrogate pair, of the label or of the key: when the agreement ends right
    // after a high surrogate that either side continues with a low one, give the high one back.
    if (
      agreed > 0 &&
      isHighSurrogate(label.charCodeAt(agreed - 1)) &&
      ((agreed < label.length && isLowSurrogate(label.charCodeAt(agreed))) ||
        (agreed < limit && isLowSurrogate(key.charCodeAt(pos + agreed))))
    ) {
      agreed--;
    }
    return agreed;
  },
  copy: (key, from, to) => flatCopy(key.slice(from, to)),
  cut: (label, from, to) => flatCopy(label.slice(from, to)),
};

/**
 * A copy of `text` that shares no memory with the string it was sliced from. V8 represents a
 * slice of 13 or more characters as a view that keeps its whole parent alive; a label must not
 * keep a 16 KB prompt alive for its last 100 characters. `structuredClone` serialises and rebuilds
 * the string (about 0.4 ns per character).
 */
function flatCopy(text: string): string {
  return text.length < 13 ? text : (structuredClone(text) as string);
}

/** @internal Token keys of a given page size (see {@link tokenKeys}). */
export type TokenKeyOps = KeyOps<ArrayLike<number>, Uint32Array>;

/**
 * Token keys with pages of `pageSize` tokens: a key's usable length is its whole pages, and
 * agreement is rounded down to a page, so a partial page never matches and splits fall on page
 * boundaries. A token id that is not an unsigned 32-bit integer is stored as 0.
 *
 * @internal
 */
export function tokenKeys(pageSize: number): TokenKeyOps {
  return {
    usable: (key) => {
      const length = Math.min(key.length, MAX_KEY_UNITS);
      return length - (length % pageSize);
    },
    labelLength: (label) => label.length,
    childKeyOf: (key, pos) => token(key[pos]),
    childKeyOfLabel: (label) => label[0] ?? 0,
    agree(key, pos, label, limit) {
      const n = Math.min(label.length, limit);
      let i = 0;
      while (i < n && token(key[pos + i]) === label[i]) i++;
      return i - (i % pageSize);
    },
    copy(key, from, to) {
      const label = new Uint32Array(to - from);
      for (let i = from; i < to; i++) label[i - from] = token(key[i]);
      return label;
    },
    cut: (label, from, to) => label.slice(from, to),
  };
}

function token(value: number | undefined): number {
  return typeof value === 'number' && value >>> 0 === value ? value : 0;
}
