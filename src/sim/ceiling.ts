/**
 * The best hit rate any routing could reach: every request served by one infinite cache that
 * has seen every earlier request.
 *
 * @module
 */
import { DEFAULT_PAGE_SIZE } from '../cache/block-hashes.js';
import { blockKeys } from './block-keys.js';
import { BlockSet } from './block-table.js';
import type { Workload } from './workload.js';

/**
 * Token-weighted hit rate of one unbounded prefix cache shared by the whole fleet, replaying
 * `workload` in order (the order a single client sends it; with arrivals that reorder requests
 * the true ceiling can differ slightly). The same rules as the engines apply: whole blocks of
 * `blockSize` tokens (default 16, the fleet model's), at least one prompt token computed, answers
 * cached when the workload knows them.
 *
 * @returns a number in [0, 1); 0 for an empty workload.
 * Cost: O(total prompt and answer tokens); memory 11 to 22 bytes per distinct block (a flat
 * table of block keys, with no limit on their number) plus one prompt at a time.
 * @public
 */
export function ceilingHitRate(workload: Workload, blockSize = DEFAULT_PAGE_SIZE): number {
  const seen = new BlockSet();
  let cached = 0;
  let total = 0;
  for (const request of workload.requests) {
    const output = request.outputTokens;
    // The prompt's blocks come first among the prompt-and-answer blocks.
    const keys = blockKeys(request.tokens(), blockSize, output);
    const limit = Math.min(keys.length, Math.floor((request.promptLength - 1) / blockSize));
    let matched = 0;
    while (matched < limit && seen.has(keys[matched]!)) matched++;
    cached += matched * blockSize;
    total += request.promptLength;
    for (let i = matched; i < keys.length; i++) seen.add(keys[i]!);
  }
  return total === 0 ? 0 : cached / total;
}
