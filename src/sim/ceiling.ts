/**
 * The best hit rate any routing could reach: every request served by one infinite cache that
 * has seen every earlier request.
 *
 * @module
 */
import { blockKeys } from './block-keys.js';
import type { Workload } from './workload.js';

/**
 * Token-weighted hit rate of one unbounded prefix cache shared by the whole fleet, replaying
 * `workload` in order (the order a single client sends it; with arrivals that reorder requests
 * the true ceiling can differ slightly). The same rules as the engines apply: whole blocks of
 * `blockSize` tokens, at least one prompt token computed, answers cached when the workload knows
 * them.
 *
 * @returns a number in [0, 1); 0 for an empty workload.
 * Cost: O(total prompt tokens), memory O(distinct blocks).
 * @public
 */
export function ceilingHitRate(workload: Workload, blockSize = 16): number {
  const seen = new Set<number>();
  let cached = 0;
  let total = 0;
  for (const request of workload.requests) {
    const tokens = request.tokens();
    const keys = blockKeys(tokens, blockSize);
    const limit = Math.min(keys.length, Math.floor((request.promptLength - 1) / blockSize));
    let matched = 0;
    while (matched < limit && seen.has(keys[matched]!)) matched++;
    cached += matched * blockSize;
    total += request.promptLength;
    const output = request.outputTokens;
    let all = keys;
    if (output !== undefined && output.length > 0) {
      const sequence = new Uint32Array(tokens.length + output.length);
      sequence.set(tokens);
      sequence.set(output, tokens.length);
      all = blockKeys(sequence, blockSize);
    }
    for (let i = matched; i < all.length; i++) seen.add(all[i]!);
  }
  return total === 0 ? 0 : cached / total;
}
