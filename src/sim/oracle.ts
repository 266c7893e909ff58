/**
 * The oracle run: routing with perfect knowledge of every engine's cache, an estimate of the
 * best hit rate a router can reach on a fleet of that size and cache.
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

/** @internal The name the oracle's {@link PolicyRun} carries. */
export const ORACLE = 'oracle';

/**
 * @internal The bound on a worker's load, as `prefix_hash`'s default: a worker is a candidate
 * while its in-flight count, counting the request, stays within `ceil(1.25 × mean)`.
 */
const LOAD_FACTOR = 1.25;

/** @internal What the oracle reads of an engine: its cache and its requests in flight. */
export interface OracleEngine {
  readonly cache: PrefixCache;
  readonly inFlight: number;
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
    this.#engines = engines;
  };

  /**
   * Among the available `workers` whose in-flight count + 1 stays within
   * `ceil(1.25 × (total in flight + 1) / engines)`, the one holding the longest cached prefix of
   * the observed request; ties to the fewest in flight, then the lowest engine index. When none
   * is within the bound, the least loaded available one.
   *
   * @returns a member of `workers`, or `undefined` when none is available.
   * Cost: one cache walk per candidate, O(workers × matched blocks).
   */
  pick(workers: readonly Worker[]): Worker | undefined {
    const engines = this.#engines;
    let total = 0;
    for (const engine of engines) total += engine.inFlight;
    const cap = Math.ceil((LOAD_FACTOR * (total + 1)) / Math.max(1, engines.length));
    let best: Worker | undefined;
    let bestMatch = -1;
    let bestLoad = 0;
    let bestIndex = 0;
    let spare: Worker | undefined;
    let spareLoad = 0;
    let spareIndex = 0;
    for (const worker of workers) {
      if (!worker.isAvailable()) continue;
      const index = this.#workerOf.get(worker.url);
      const engine = index === undefined ? undefined : engines[index];
      if (index === undefined || engine === undefined) continue;
      const load = engine.inFlight;
      if (load + 1 > cap) {
        if (spare === undefined || earlier(load, index, spareLoad, spareIndex)) {
          spare = worker;
          spareLoad = load;
          spareIndex = index;
        }
        continue;
      }
      const match = engine.cache.match(this.#keys, this.#limit);
      if (
        best === undefined ||
        match > bestMatch ||
        (match === bestMatch && earlier(load, index, bestLoad, bestIndex))
      ) {
        best = worker;
        bestMatch = match;
        bestLoad = load;
        bestIndex = index;
      }
    }
    return best ?? spare;
  }
}

/** Whether (load, index) comes before (otherLoad, otherIndex): fewer in flight, then lower index. */
function earlier(load: number, index: number, otherLoad: number, otherIndex: number): boolean {
  return load < otherLoad || (load === otherLoad && index < otherIndex);
}

/**
 * @internal The policy each router of the oracle run uses: {@link OracleView.pick}. It is not a
 * library policy (nothing outside the simulator knows the engines' caches).
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
 * @returns the run, with policy `'oracle'`.
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
    run.run(routers);
  } catch (error) {
    await routers.close().catch(() => undefined);
    throw error;
  }
  await routers.close();
  return { ...run.result(), policy: ORACLE };
}
