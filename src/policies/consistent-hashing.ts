/**
 * `consistent_hashing`: session affinity on a hash ring.
 *
 * @module
 */
import { readHeader } from '../core/headers.js';
import { integer } from '../core/option-table.js';
import { DEFAULT_VIRTUAL_NODES } from '../ring/hash-ring.js';
import type { Worker } from '../workers/worker.js';
import { type Policy, type SelectRequest, TARGET_WORKER_HEADER } from './policy.js';
import { CandidateRings } from './support/candidate-ring.js';
import { type CommonPolicyConfig, policyOptions, readPolicyConfig } from './support/config.js';
import type { RandomSource } from './support/random.js';
import { routingKey } from './support/routing-key.js';
import { available, isWorkerList, pick, Sampler } from './support/sampling.js';

/** Options of the `consistent_hashing` policy. @public */
export interface ConsistentHashingConfig extends CommonPolicyConfig {
  /** Virtual nodes per worker on rings this policy builds itself. @defaultValue 150 */
  readonly virtualNodes?: number;
}

/** Headers tried, in order, when the request has no routing key. */

/** @internal The options of `consistent_hashing`. */
export const CONSISTENT_HASHING_OPTIONS = policyOptions(
  'consistent_hashing',
  'ConsistentHashingConfig',
  { virtualNodes: integer(DEFAULT_VIRTUAL_NODES, 1, 10_000) },
);

/**
 * Sends every request with the same key to the same worker, so a user's or session's prefix
 * stays in one worker's KV cache. The key is, in order:
 *
 * 1. `x-fleetroute-target-worker` (a worker URL or id): that worker if it is among the
 *    candidates and available, else `undefined` — an explicit target never silently moves;
 * 2. `request.routingKey`, else the `x-fleetroute-routing-key` header;
 * 3. the first non-empty of `authorization`, `x-forwarded-for`, `cookie`;
 * 4. none: a uniformly random available worker.
 *
 * On a `prefill` or `decode` leg the key is namespaced (`prefill:<key>`), so the two legs of a
 * pair never share placement. The ring is `request.ring` when given (for example
 * `registry.getHashRing(model)`), else a ring over the candidates' URLs built once per candidate
 * list and cached by the list's identity (the registry's arrays keep their identity).
 *
 * Failure behaviour: an unavailable owner is skipped clockwise to the next available worker;
 * when the owner recovers it gets exactly its keys back (placement never changes).
 * Cost: one xxh64 of the key plus an O(1) ring lookup; building a ring is O(n · virtualNodes),
 * once per candidate list.
 *
 * @public
 */
export class ConsistentHashingPolicy implements Policy {
  readonly name = 'consistent_hashing' as const;
  readonly #random: RandomSource;
  readonly #rings: CandidateRings;
  readonly #sampler = new Sampler();

  /** @throws {@link FleetRouteError} `INVALID_ARGUMENT` naming a bad or unknown option. */
  constructor(config: ConsistentHashingConfig = {}) {
    const { options, random } = readPolicyConfig(CONSISTENT_HASHING_OPTIONS, config);
    this.#random = random;
    this.#rings = new CandidateRings(options.virtualNodes);
  }

  select(workers: readonly Worker[], request?: SelectRequest): Worker | undefined {
    if (!isWorkerList(workers) || workers.length === 0) return undefined;
    const headers = request?.headers;
    const target = readHeader(headers, TARGET_WORKER_HEADER);
    if (target !== undefined) {
      const worker = this.#rings.viewOf(workers).byUrlOrId(target);
      if (worker === undefined || !available(worker)) return undefined;
      worker.incrementProcessed();
      return worker;
    }
    const key = routingKey(request);
    if (key !== undefined) {
      // The ring is read (built, for a list's first keyed request) only once there is a key.
      const entry = this.#rings.get(workers, request?.ring);
      if (entry !== undefined) {
        return pick(
          entry.aligned as readonly Worker[],
          entry.ring.findIndex(key, entry.acceptAvailable),
        );
      }
    }
    return pick(workers, this.#sampler.randomAvailable(workers, this.#random));
  }

  reset(): void {
    this.#rings.clear();
  }
}
