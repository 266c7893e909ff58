/**
 * Chained keys of a prompt's cache blocks, the way engines with prefix caching name them: the key
 * of block `i` depends on every token up to the end of block `i`, so equal keys mean equal
 * prefixes.
 *
 * @module
 */
import { fmix32 } from './random.js';

/**
 * The keys of the full `blockSize`-token blocks of `tokens` (a trailing partial block has none),
 * as integers below 2^53. Two sequences get the same key for block `i` exactly when their first
 * `(i + 1) × blockSize` tokens are equal (up to a 2^-53 collision chance). O(tokens).
 *
 * @public
 */
export function blockKeys(tokens: ArrayLike<number>, blockSize: number): Float64Array {
  const blocks = Math.floor(tokens.length / blockSize);
  const keys = new Float64Array(blocks);
  // Two independent 32-bit lanes carried across blocks: the chain.
  let a = 0x811c9dc5;
  let b = 0x9747b28c;
  let t = 0;
  for (let block = 0; block < blocks; block++) {
    for (let k = 0; k < blockSize; k++) {
      const token = tokens[t++]! >>> 0;
      a = Math.imul(a ^ token, 0x01000193);
      b = Math.imul(b ^ token, 0x5bd1e995);
      b ^= b >>> 15;
    }
    keys[block] = fmix32(a) * 2_097_152 + (fmix32(b ^ block) >>> 11);
  }
  return keys;
}
