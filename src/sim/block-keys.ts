/**
 * Chained keys of a prompt's cache blocks, the way engines with prefix caching name them: the key
 * of block `i` depends on every token up to the end of block `i`, so equal keys mean equal
 * prefixes.
 *
 * @module
 */
import { fmix32 } from '../core/fmix32.js';

/**
 * The keys of the full `blockSize`-token blocks of `tokens` followed by `continued` (when given:
 * the keys of their concatenation, without building it; a trailing partial block has none), as
 * integers below 2^53. Two sequences get the same key for block `i` exactly when their first
 * `(i + 1) × blockSize` tokens are equal (up to a 2^-53 collision chance), so the keys of a
 * prompt are the leading keys of the prompt followed by its answer. O(tokens); allocates only
 * the keys.
 *
 * @public
 */
export function blockKeys(
  tokens: ArrayLike<number>,
  blockSize: number,
  continued?: ArrayLike<number>,
): Float64Array {
  const length = tokens.length + (continued?.length ?? 0);
  const blocks = Math.floor(length / blockSize);
  const keys = new Float64Array(blocks);
  // Two independent 32-bit lanes carried across blocks: the chain.
  let a = 0x811c9dc5;
  let b = 0x9747b28c;
  let block = 0;
  let inBlock = 0;
  let source = tokens;
  for (let part = 0; part < 2 && block < blocks; part++) {
    if (part === 1) {
      if (continued === undefined) break;
      source = continued;
    }
    const end = source.length;
    for (let t = 0; t < end && block < blocks; t++) {
      const token = source[t]! >>> 0;
      a = Math.imul(a ^ token, 0x01000193);
      b = Math.imul(b ^ token, 0x5bd1e995);
      b ^= b >>> 15;
      if (++inBlock === blockSize) {
        keys[block] = fmix32(a) * 2_097_152 + (fmix32(b ^ block) >>> 11);
        block++;
        inBlock = 0;
      }
    }
  }
  return keys;
}
