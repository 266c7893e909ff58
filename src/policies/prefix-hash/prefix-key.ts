/**
 * The prefix key of a request: xxh64 of its first N tokens (as little-endian uint32), or, without
 * tokens, of its first 4·N characters (UTF-8). Stable across processes; part of `prefix_hash`'s
 * placement. Tokens given as a `Uint32Array` are hashed in place; any other list is copied into a
 * reusable buffer first (about 1 ns per token).
 *
 * @module
 * @internal
 */
import type { Hasher } from '../../core/hash.js';

/** @internal Hashes request prefixes into `hasher.hi` / `hasher.lo` with reusable buffers. */
export class PrefixKey {
  readonly #tokens: number;
  readonly #words: Uint32Array;
  /** `#views[k]` is a byte view of the first k tokens, created on first use. */
  readonly #views: (Uint8Array | undefined)[];

  constructor(prefixTokens: number) {
    this.#tokens = prefixTokens;
    this.#words = new Uint32Array(prefixTokens);
    this.#views = new Array<Uint8Array | undefined>(prefixTokens + 1).fill(undefined);
  }

  /**
   * Hashes the request's prefix with `hasher`.
   *
   * @returns `false` when the request has neither tokens nor text (nothing hashed).
   */
  hash(hasher: Hasher, tokens: ArrayLike<number> | undefined, text: string | undefined): boolean {
    if (
      tokens !== undefined &&
      tokens !== null &&
      typeof tokens === 'object' &&
      tokens.length > 0
    ) {
      const count = Math.min(tokens.length, this.#tokens);
      if (tokens instanceof Uint32Array) {
        // Already little-endian uint32 words: hash them in place (one view, no copy).
        hasher.hashBytes(new Uint8Array(tokens.buffer, tokens.byteOffset, count * 4));
        return true;
      }
      const words = this.#words;
      for (let i = 0; i < count; i++) {
        const t: unknown = tokens[i];
        // A token id is an unsigned 32-bit integer; anything else (NaN, 1.5, -3, 2⁴⁰, a bigint, a
        // string, a hole) reads as 0 — `>>>` would throw on a bigint or a symbol.
        words[i] = typeof t === 'number' && t >>> 0 === t ? t : 0;
      }
      let view = this.#views[count];
      if (view === undefined) {
        view = new Uint8Array(words.buffer, 0, count * 4);
        this.#views[count] = view;
      }
      hasher.hashBytes(view);
      return true;
    }
    if (typeof text === 'string' && text.length > 0) {
      const limit = 4 * this.#tokens;
      hasher.hashString(text.length <= limit ? text : text.slice(0, limit));
      return true;
    }
    return false;
  }
}
