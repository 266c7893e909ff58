/**
 * MurmurHash3's 32-bit finaliser.
 *
 * @module
 * @internal
 */

/**
 * @internal A bijection of 32-bit integers that spreads every input bit over the output (an
 * unsigned 32-bit integer). O(1).
 */
export function fmix32(x: number): number {
  let h = x;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}
