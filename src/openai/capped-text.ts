/**
 * A text built piece by piece and cut at a fixed length: the routing text's accumulator.
 *
 * @module
 * @internal
 */
import { isHighSurrogate } from '../core/content-digest.js';

/**
 * @internal Pieces appended in order, kept up to `cap` UTF-16 code units. The result is the
 * first `cap` units of the concatenation — one unit fewer when the last kept unit is the first
 * half of a surrogate pair — so a text that extends another keeps the other's result as its
 * prefix: cutting at a fixed position preserves prefix stability.
 *
 * Callers check {@link CappedText.full} before any costly piece (a digest): nothing appended
 * after the cap is kept, so nothing after it need be computed.
 */
export class CappedText {
  readonly #cap: number;
  #text = '';

  constructor(cap: number) {
    this.#cap = cap;
  }

  /** Whether the cap is reached: further pieces are dropped. */
  get full(): boolean {
    return this.#text.length >= this.#cap;
  }

  /** Appends `piece`, or what fits of it. O(1) amortised (V8 joins strings lazily). */
  append(piece: string): void {
    const room = this.#cap - this.#text.length;
    if (room <= 0) return;
    this.#text += piece.length <= room ? piece : piece.slice(0, room);
  }

  /**
   * @returns the text: everything appended, or its first `cap` units when longer, without a
   *   last unit that is a high surrogate once the cap is reached (a pair is never cut in half).
   */
  finish(): string {
    const text = this.#text;
    const n = text.length;
    return n > 0 && n >= this.#cap && isHighSurrogate(text.charCodeAt(n - 1))
      ? text.slice(0, n - 1)
      : text;
  }
}
