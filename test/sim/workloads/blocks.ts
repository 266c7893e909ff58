/**
 * Block bookkeeping for the workload tests: chained block keys (a block's key names its contents
 * and every block before it, as an engine's prefix cache does) and prefix comparisons.
 */
import type { SimRequest } from '../../../src/sim/workload.js';

/** Interns chains of block contents as small integers: equal keys ⇔ equal prefixes. */
export class BlockChains {
  readonly #ids = new Map<string, number>();

  /** The key of each full block of `tokens`, in order. */
  keys(tokens: Uint32Array, blockSize: number): number[] {
    const keys: number[] = [];
    let parent = -1;
    for (let start = 0; start + blockSize <= tokens.length; start += blockSize) {
      const chain = `${parent}|${tokens.subarray(start, start + blockSize).join(',')}`;
      let id = this.#ids.get(chain);
      if (id === undefined) {
        id = this.#ids.size;
        this.#ids.set(chain, id);
      }
      keys.push(id);
      parent = id;
    }
    return keys;
  }
}

/**
 * Replays `requests` in order against one unbounded cache of `blockSize`-token blocks that keeps
 * every full prompt block: the prompt tokens served from the cache, and all prompt tokens.
 */
export function unboundedCacheHits(
  requests: readonly SimRequest[],
  blockSize: number,
): { hit: number; total: number } {
  const chains = new BlockChains();
  const cached = new Set<number>();
  let hit = 0;
  let total = 0;
  for (const request of requests) {
    const tokens = request.tokens();
    total += tokens.length;
    let prefix = true;
    for (const key of chains.keys(tokens, blockSize)) {
      prefix &&= cached.has(key);
      if (prefix) hit += blockSize;
      cached.add(key);
    }
  }
  return { hit, total };
}

/** Tokens `a` and `b` have in common from the start. */
export function commonPrefix(a: Uint32Array, b: Uint32Array): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}

/** Whether `a` and `b` hold the same tokens. */
export function sameTokens(a: Uint32Array, b: Uint32Array): boolean {
  return a.length === b.length && commonPrefix(a, b) === a.length;
}

/** Every prompt of a workload, in order. */
export function prompts(requests: readonly SimRequest[]): Uint32Array[] {
  return requests.map((r) => r.tokens());
}

/** Whether two workloads hold the same requests, token for token. */
export function sameRequests(a: readonly SimRequest[], b: readonly SimRequest[]): boolean {
  return (
    a.length === b.length &&
    a.every((r, i) => {
      const s = b[i]!;
      return (
        r.id === s.id &&
        r.promptLength === s.promptLength &&
        r.outputLength === s.outputLength &&
        r.routingKey === s.routingKey &&
        r.after === s.after &&
        r.delayMs === s.delayMs &&
        r.timestamp === s.timestamp &&
        sameTokens(r.tokens(), s.tokens()) &&
        (r.outputTokens === undefined) === (s.outputTokens === undefined) &&
        (r.outputTokens === undefined || sameTokens(r.outputTokens, s.outputTokens!))
      );
    })
  );
}
