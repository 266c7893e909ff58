/**
 * `power_of_two`: the less loaded of two random available workers.
 *
 * @module
 */
import { readInteger } from '../core/options.js';
import type { Worker } from '../workers/worker.js';
import type { LoadReport, Policy } from './policy.js';
import { type CommonPolicyConfig, readClock, readConfig, readRandom } from './support/config.js';
import { LoadTable } from './support/load-table.js';
import type { RandomSource } from './support/random.js';
import { isWorkerList, pick, twoRandomAvailable } from './support/sampling.js';

/** Options of the `power_of_two` policy. @public */
export interface PowerOfTwoConfig extends CommonPolicyConfig {
  /** A load report older than this is ignored (ms). @defaultValue 30000 (3 polling intervals) */
  readonly staleAfterMs?: number;
}

/**
 * Samples two distinct random available workers and keeps the less loaded one ("the power of two
 * choices": the busiest worker's excess load falls from O(log n / log log n) with one random
 * choice to O(log log n)). When both have a fresh load report with KV-cache usage, it compares
 * that usage; otherwise it compares their in-flight request counts. It never compares one
 * worker's usage with the other's count. Ties go to the first sample.
 *
 * Cost: O(1) expected (two steps of a random walk without repeats) plus two map reads.
 * Failure behaviour: unavailable workers are never sampled; with one available worker it is
 * chosen; with none, `undefined`.
 *
 * @public
 */
export class PowerOfTwoPolicy implements Policy {
  readonly name = 'power_of_two' as const;
  readonly #random: RandomSource;
  readonly #loads: LoadTable;
  readonly #pair = new Int32Array(2);
  readonly #inFlight = new Float64Array(2);

  /** @throws {@link FleetRouteError} `INVALID_ARGUMENT` naming a bad or unknown option. */
  constructor(config: PowerOfTwoConfig = {}) {
    const o = readConfig('power_of_two', config, ['staleAfterMs']);
    this.#random = readRandom('power_of_two', o);
    const staleAfterMs = readInteger(
      'power_of_two.staleAfterMs',
      o.staleAfterMs,
      30_000,
      1,
      2_147_483_647,
    );
    this.#loads = new LoadTable(readClock('power_of_two', o), staleAfterMs);
  }

  select(workers: readonly Worker[]): Worker | undefined {
    if (!isWorkerList(workers)) return undefined;
    const pair = this.#pair;
    const found = twoRandomAvailable(workers, this.#random, pair, this.#inFlight);
    if (found < 2) return pick(workers, pair[0]!);
    let a = Number.NaN;
    let b = Number.NaN;
    if (this.#loads.size > 0) {
      const reports = this.#loads.alignedTo(workers);
      const now = this.#loads.now();
      const ra = reports[pair[0]!];
      const rb = reports[pair[1]!];
      if (this.#loads.isFresh(ra, now)) a = ra.tokenUsage;
      if (this.#loads.isFresh(rb, now)) b = rb.tokenUsage;
    }
    const useUsage = !Number.isNaN(a) && !Number.isNaN(b);
    const secondWins = useUsage ? b < a : this.#inFlight[1]! < this.#inFlight[0]!;
    return pick(workers, secondWins ? pair[1]! : pair[0]!);
  }

  updateLoads(reports: ReadonlyMap<string, LoadReport>): void {
    this.#loads.update(reports);
  }

  removeWorker(url: string): void {
    this.#loads.remove(url);
  }

  reset(): void {
    this.#loads.clear();
  }

  close(): void {
    this.#loads.clear();
  }
}
