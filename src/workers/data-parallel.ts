/**
 * The request-side hint that steers a request to one data-parallel rank of an engine whose ranks
 * share one endpoint.
 *
 * @module
 */
import type { Worker } from './worker.js';

/**
 * The header vLLM reads as the request's data-parallel rank (case-insensitively), and SGLang too
 * (it overrides SGLang's body field). @public
 */
export const DATA_PARALLEL_RANK_HEADER = 'x-data-parallel-rank';

/**
 * What to add to a request so the engine behind a rank worker serves it on that rank: a header,
 * and fields for the JSON body. @public
 */
export interface DataParallelHint {
  /** The rank, as the worker was registered (`dpRank`, or a `…@rank` URL). */
  readonly rank: number;
  /** Headers to send, by lower-case name: {@link DATA_PARALLEL_RANK_HEADER} with the rank. */
  readonly headers: Readonly<Record<string, string>>;
  /**
   * Fields to write into the JSON body: `routed_dp_rank` for SGLang (older SGLang reads only the
   * body), none for other runtimes.
   */
  readonly body: Readonly<Record<string, number>>;
}

/**
 * The hint that steers a request to `worker`'s data-parallel rank when several ranks share one
 * endpoint (vLLM's internal or hybrid load balancing, SGLang's `--dp-size`): every rank worker of
 * an engine has the same `baseUrl`, so only the hint tells the engine which rank the router chose
 * — the one that holds the prompt's prefix. Send `headers` with the request and merge `body` into
 * its JSON body. `fleetroute/openai` does both for you.
 *
 * @example
 * ```ts
 * const hint = dataParallelHint(worker);
 * await fetch(`${worker.baseUrl}/v1/completions`, {
 *   method: 'POST',
 *   headers: { 'content-type': 'application/json', ...hint?.headers },
 *   body: JSON.stringify({ ...body, ...hint?.body }),
 * });
 * ```
 * @returns the hint, or `undefined` for a worker that is no data-parallel rank.
 * Cost: O(1); two small objects per call.
 * @public
 */
export function dataParallelHint(worker: Worker): DataParallelHint | undefined {
  const rank = worker.dpRank;
  if (rank === undefined) return undefined;
  return {
    rank,
    headers: { [DATA_PARALLEL_RANK_HEADER]: String(rank) },
    body: worker.runtime === 'sglang' ? { routed_dp_rank: rank } : {},
  };
}
