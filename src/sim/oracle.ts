/**
 * The greedy-oracle run: routing with perfect knowledge of every engine — its cache, what the
 * requests routed to it are about to add, and its queue — one request at a time, greedily. A
 * reference for the policies, not an upper bound: a policy can beat it (the bound on hit rate is
 * the ceiling, one infinite shared cache).
 *
 * @module
 * @internal
 */
import type { Policy, PolicyName, SelectRequest } from '../policies/policy.js';
import type { Worker } from '../workers/worker.js';
import type { PrefixCache } from './prefix-cache.js';
import type { PolicyRun } from './result.js';
import { SimRouters } from './sim-routers.js';
import type { ResolvedSimulationOptions } from './simulation-options.js';
import { SimulationRun } from './simulation-run.js';

/**
 * @internal The name the greedy oracle's {@link PolicyRun} carries: its row's label in the table
 * and the report, and the column "of greedy-oracle".
 */
export const ORACLE = 'greedy-oracle';

/**
 * @internal How much more a prompt token the worker must compute weighs than a token of queue
 * ahead of it: the oracle keeps a request with the worker holding its prefix unless waiting
 * there costs more than twice the prefill it saves. 1 (plain TTFT) spreads a group over workers
 * while its first prompt is still in prefill, since waiting for it and computing it elsewhere
 * then cost the same, and every copy costs hit rate later (`shared-prefix`: 79.8 % against
 * 87.1 % at 2, against `cache_aware`'s 86.4 %).
 */
export const UNCACHED_WEIGHT = 2;

/**
 * @internal What the oracle reads of an engine: its cache, what the requests routed to it will
 * add to it, and its queue.
 */
export interface OracleEngine {
  readonly cache: PrefixCache;
  readonly inFlight: number;
  /** See `Engine.pendingMatch`. */
  pendingMatch(keys: Float64Array, limit: number): number;
  /** See `Engine.firstTokenEstimateMs`. */
  firstTokenEstimateMs(tokens: number): number;
}

/**
 * @internal The oracle's knowledge of the fleet: the engines, and the block keys of the request
 * about to be routed ({@link OracleView.observe}, called by the run just before `select`).
 */
export class OracleView {
  readonly #blockSize: number;
  readonly #workerOf: ReadonlyMap<string, number>;
  #engines: readonly OracleEngine[] = [];
  #keys: Float64Array = new Float64Array(0);
  #limit = 0;
  #promptLength = 0;

  /** @param urls - the simulated workers' URLs, by engine index. */
  constructor(blockSize: number, urls: readonly string[]) {
    this.#blockSize = blockSize;
    this.#workerOf = new Map(urls.map((url, i) => [url, i]));
  }

  /**
   * The next request's block keys and prompt length, and the engines. The last prompt token is
   * never served from cache, so at most `floor((promptLength − 1) / blockSize)` blocks count.
   */
  readonly observe = (
    keys: Float64Array,
    promptLength: number,
    engines: readonly OracleEngine[],
  ): void => {
    this.#keys = keys;
    this.#limit = Math.min(keys.length, Math.floor((promptLength - 1) / this.#blockSize));
    this.#promptLength = promptLength;
    this.#engines = engines;
  };

  /**
   * Among the available `workers`, the one minimising the estimated time to first token of the
   * observed request with its uncached tokens counted {@link UNCACHED_WEIGHT} times:
   * `engine.firstTokenEstimateMs(2 × (promptLength − matched × blockSize))`, where `matched` is
   * the prefix the worker will hold when the request is admitted — its cache, extended by the
   * prompt blocks of the requests queued or in prefill there. Ties go to the longest match, then
   * the fewest in flight, then the fewest cache blocks in use, then the lowest engine index. There is no load bound: the queue
   * estimate is what keeps a worker from being overloaded.
   *
   * @returns a member of `workers`, or `undefined` when none is available.
   * Cost: per available worker, one cache walk and a scan of its requests waiting or in
   * prefill (O(workers × (queue + matched blocks))), plus its queue estimate when that changed.
   */
  pick(workers: readonly Worker[]): Worker | undefined {
    const engines = this.#engines;
    let best: Worker | undefined;
    let bestCost = 0;
    let bestMatch = 0;
    let bestLoad = 0;
    let bestUsed = 0;
    let bestIndex = 0;
    for (const worker of workers) {
      if (!worker.isAvailable()) continue;
      const index = this.#workerOf.get(worker.url);
      const engine = index === undefined ? undefined : engines[index];
      if (index === undefined || engine === undefined) continue;
      const match = this.#match(engine);
      const uncached = this.#promptLength - match * this.#blockSize;
      const cost = engine.firstTokenEstimateMs(UNCACHED_WEIGHT * uncached);
      const load = engine.inFlight;
      const used = engine.cache.used;
      if (
        best === undefined ||
        cost < bestCost ||
        (cost === bestCost &&
          (match > bestMatch ||
            (match === bestMatch &&
              (load < bestLoad ||
                (load === bestLoad &&
                  (used < bestUsed || (used === bestUsed && index < bestIndex)))))))
      ) {
        best = worker;
        bestCost = cost;
        bestMatch = match;
        bestLoad = load;
        bestUsed = used;
        bestIndex = index;
      }
    }
    return best;
  }

  /**
   * The blocks of the observed prompt `engine` will hold: its cached prefix, or the prefix a
   * request queued or in prefill there will publish, continued by what the cache holds after it.
   */
  #match(engine: OracleEngine): number {
    const keys = this.#keys;
    const limit = this.#limit;
    const cached = engine.cache.match(keys, limit);
    if (cached === limit) return cached;
    const pending = engine.pendingMatch(keys, limit);
    if (pending <= cached) return cached;
    return pending + engine.cache.match(keys.subarray(pending), limit - pending);
  }
}

/**
 * @internal The policy each router of the oracle run uses: {@link OracleView.pick}. It is not a
 * library policy (nothing outside the simulator knows the engines' caches and queues).
 */
export function oraclePolicy(view: OracleView): Policy {
  return {
    name: ORACLE as PolicyName,
    select(workers: readonly Worker[], _request?: SelectRequest): Worker | undefined {
      const worker = Array.isArray(workers) ? view.pick(workers) : undefined;
      worker?.incrementProcessed();
      return worker;
    },
  };
}

/**
 * @internal `simulateResolved` with the oracle in place of `o.policy` (whose name and
 * configuration are ignored): the same fleet, arrivals and seed.
 *
 * @returns the run, with policy `'greedy-oracle'`.
 * @throws what `simulateResolved` throws. Cost: that of a run, plus one cache walk per worker
 *   per request.
 */
export async function simulateOracle(o: ResolvedSimulationOptions): Promise<PolicyRun> {
  const run = new SimulationRun(o);
  const view = new OracleView(o.fleet.blockSize, run.urls);
  run.beforeSelect = view.observe;
  const routers = new SimRouters();
  try {
    await routers.open(o, run.urls, run.clock, () => oraclePolicy(view));
    await run.run(routers);
  } catch (error) {
    await routers.close().catch(() => undefined);
    throw error;
  }
  await routers.close();
  return { ...run.result(), policy: ORACLE };
}
