/**
 * `prefix_hash`: prompt-prefix affinity with bounded loads.
 *
 * @module
 */
import { loadedHasher } from '../core/hash.js';
import { integer, number } from '../core/option-table.js';
import { DEFAULT_VIRTUAL_NODES } from '../ring/hash-ring.js';
import type { Worker } from '../workers/worker.js';
import type { Policy, SelectRequest } from './policy.js';
import { PrefixKey } from './prefix-hash/prefix-key.js';
import { PrefixTable } from './prefix-hash/prefix-table.js';
import { type CandidateRing, CandidateRings } from './support/candidate-ring.js';
import { type CommonPolicyConfig, policyOptions, readPolicyConfig } from './support/config.js';
import { isWorkerList, Sampler } from './support/sampling.js';

/** Options of the `prefix_hash` policy. @public */
export interface PrefixHashConfig extends CommonPolicyConfig {
  /**
   * Block length of the key, in tokens (without tokens: 4 × this many characters): prompts are
   * hashed at every multiple of it, and the shortest key is the first block. @defaultValue 256
   */
  readonly prefixTokens?: number;
  /**
   * How deep the key may follow a divergence, in tokens (rounded down to whole blocks, at least
   * one): no request hashes more than this many tokens, so a long prompt costs no more than
   * `maxPrefixTokens / prefixTokens` xxh64 calls and table probes. @defaultValue 8192
   */
  readonly maxPrefixTokens?: number;
  /**
   * Block-boundary prefixes remembered (hashes only, 32 bytes each, allocated up front; least
   * recently used replaced first). 0 disables the table: the key is then always the first block,
   * the placement of earlier releases. @defaultValue 16384
   */
  readonly maxTrackedPrefixes?: number;
  /**
   * Load bound: a worker is skipped while its in-flight count, counting the incoming request,
   * exceeds `ceil(loadFactor × mean)`. @defaultValue 1.25
   */
  readonly loadFactor?: number;
  /** Virtual nodes per worker on rings this policy builds itself. @defaultValue 150 */
  readonly virtualNodes?: number;
}

/** @internal The options of `prefix_hash`. */
export const PREFIX_HASH_OPTIONS = policyOptions('prefix_hash', 'PrefixHashConfig', {
  prefixTokens: integer(256, 1, 65_536),
  maxPrefixTokens: integer(8_192, 1, 1_048_576),
  maxTrackedPrefixes: integer(16_384, 0, 4_194_304),
  loadFactor: number(1.25, 1, 1_000),
  virtualNodes: integer(DEFAULT_VIRTUAL_NODES, 1, 10_000),
});

let newPlacement: () => PrefixHashPolicy;

/**
 * @internal A `prefix_hash` with its defaults whose walk also skips, for registry arrays, the
 * workers with more requests awaiting a first token than the fewest: where a policy places the
 * requests it has no better place for (see {@link prefixHashPlace}).
 */
export function prefixHashPlacement(): PrefixHashPolicy {
  return newPlacement();
}

let placeUncounted: (
  policy: PrefixHashPolicy,
  workers: readonly Worker[],
  request: SelectRequest | undefined,
) => Worker | undefined;

let ownerOf: (
  policy: PrefixHashPolicy,
  workers: readonly Worker[],
  request: SelectRequest | undefined,
) => Worker | undefined;

/**
 * @internal The owner of the request's prefix key on the ring over `workers` — where the walk of
 * `policy.select` starts — without reading any worker's state (it may be unavailable or busy).
 * Cost: the key's hashing and one ring lookup.
 */
export function prefixHashOwner(
  policy: PrefixHashPolicy,
  workers: readonly Worker[],
  request: SelectRequest | undefined,
): Worker | undefined {
  return ownerOf(policy, workers, request);
}

/**
 * @internal The worker `policy.select` would pick, without counting the pick (for a policy that
 * places some of its requests the way `prefix_hash` does and counts them itself).
 */
export function prefixHashPlace(
  policy: PrefixHashPolicy,
  workers: readonly Worker[],
  request: SelectRequest | undefined,
): Worker | undefined {
  return placeUncounted(policy, workers, request);
}

/**
 * Routes requests that share a prompt prefix (a system prompt, a few-shot block, a document, a
 * conversation so far) to the same worker, so the prefix is computed once and then served from
 * that worker's KV cache — without letting a hot prefix overload it. Prompts are hashed at every
 * `prefixTokens` boundary (chained xxh64 of little-endian uint32 tokens, or of UTF-8 blocks of
 * `4 × prefixTokens` characters for text); a bounded table of the boundary hashes seen finds the
 * branch points, prefixes that earlier requests continued in two ways, and the key is the hash
 * through the first ⅛, ¼, ½ or whole block past the deepest one — the shortest that told its
 * branches apart (the branch point itself when the prompt ends before that; the first block when
 * no branch point is known). So a system prompt shared by every request is not the
 * key, the conversation after it is. The ring walk uses consistent hashing with bounded loads:
 * starting at the key's owner and walking clockwise, the first available worker whose in-flight
 * count plus one stays within `ceil(loadFactor × (total in flight + 1) / workers)`. A request
 * with neither tokens nor text goes to the least-loaded available worker.
 *
 * Cost: one xxh64 and one table lookup per block hashed — through the block after the one that
 * holds the key when the prompt's path has a branch point (a conversation's turn costs the depth
 * of its deepest branch point plus two blocks, not its length), else up to the first boundary not
 * seen before; at most `maxPrefixTokens / prefixTokens` blocks, whatever the prompt's length — one
 * shorter xxh64 past a branch point (three more when a prefix is first continued or branches),
 * and an O(1) ring lookup; a prompt of at most one block costs one xxh64 and no lookup. So a
 * divergence more than a block below the deepest branch point known on the path is not looked
 * for: such prompts keep that branch point's key (and worker). The
 * fleet's total in flight is O(1) for the registry's arrays (kept by leases), O(n) for other
 * lists. Memory: `maxTrackedPrefixes × 32` bytes plus 4 bytes per block of `maxPrefixTokens`,
 * allocated once; a select of a token prompt of at most one block allocates nothing. Placement depends on the
 * worker URLs and on the table, so replicas that see the same traffic route alike. Failure
 * behaviour: unavailable and over-bound workers are skipped clockwise; if every available
 * worker is over the bound (only possible with stale totals), the least loaded one met on the
 * walk is chosen.
 *
 * @public
 */
export class PrefixHashPolicy implements Policy {
  readonly name = 'prefix_hash' as const;
  readonly #rings: CandidateRings;
  readonly #key: PrefixKey;
  readonly #table: PrefixTable | undefined;
  readonly #factor: number;
  readonly #sampler = new Sampler();
  // Per-call state read by the walk predicate (created once, so a select allocates nothing).
  #entry: CandidateRing | undefined;
  #cap = 0;
  #best = -1;
  #bestLoad = 0;
  /** Placement for another policy: also skip workers above the fewest awaiting a first token. */
  #prefillBound = false;
  #minPrefill = Number.POSITIVE_INFINITY;
  readonly #bounds = new Float64Array(4);
  readonly #acceptBounded = (_url: string, index: number): boolean => {
    const rt = this.#entry!.runtimeAt(index);
    if (rt === undefined || !rt.routable || !rt.canExecute()) return false;
    const load = rt.load;
    if (load + 1 <= this.#cap && rt.prefilling <= this.#minPrefill) return true;
    if (this.#best < 0 || load < this.#bestLoad) {
      this.#best = index;
      this.#bestLoad = load;
    }
    return false;
  };

  readonly #acceptListed = (_url: string, index: number): boolean =>
    this.#entry!.aligned[index] !== undefined;

  /** @throws {@link FleetRouteError} `INVALID_ARGUMENT` naming a bad or unknown option. */
  constructor(config: PrefixHashConfig = {}) {
    const { options } = readPolicyConfig(PREFIX_HASH_OPTIONS, config);
    const table =
      options.maxTrackedPrefixes === 0 ? undefined : new PrefixTable(options.maxTrackedPrefixes);
    this.#key = new PrefixKey(
      options.prefixTokens,
      Math.floor(options.maxPrefixTokens / options.prefixTokens),
      table,
    );
    this.#table = table;
    this.#factor = options.loadFactor;
    this.#rings = new CandidateRings(options.virtualNodes);
  }

  select(workers: readonly Worker[], request?: SelectRequest): Worker | undefined {
    const worker = this.#place(workers, request);
    worker?.incrementProcessed();
    return worker;
  }

  /** {@link PrefixHashPolicy.select} without counting the pick. */
  #place(workers: readonly Worker[], request: SelectRequest | undefined): Worker | undefined {
    if (!isWorkerList(workers) || workers.length === 0) return undefined;
    const hasher = loadedHasher();
    const entry = hasher === undefined ? undefined : this.#rings.get(workers, request?.ring);
    if (entry === undefined || !this.#key.hash(hasher!, request?.tokens, request?.text)) {
      const least = this.#sampler.leastLoaded(workers);
      return least < 0 ? undefined : workers[least];
    }
    const total = entry.view.totalLoad();
    this.#minPrefill = Number.POSITIVE_INFINITY;
    if (this.#prefillBound && entry.view.loadBounds(this.#bounds))
      this.#minPrefill = this.#bounds[3]!;
    this.#entry = entry;
    this.#cap = Math.ceil((this.#factor * (total + 1)) / workers.length);
    this.#best = -1;
    let index = entry.ring.indexAt(this.#key.hi, this.#key.lo, this.#acceptBounded);
    if (index < 0) index = this.#best;
    this.#entry = undefined;
    return index < 0 ? undefined : (entry.aligned[index] as Worker);
  }

  /**
   * The owner of the request's key on the ring: the first candidate clockwise, whatever its state
   * (no worker is read). `undefined` when the request has no key or no candidate is on the ring.
   */
  #owner(workers: readonly Worker[], request: SelectRequest | undefined): Worker | undefined {
    if (!isWorkerList(workers) || workers.length === 0) return undefined;
    const hasher = loadedHasher();
    const entry = hasher === undefined ? undefined : this.#rings.get(workers, request?.ring);
    if (entry === undefined || !this.#key.hash(hasher!, request?.tokens, request?.text))
      return undefined;
    this.#entry = entry;
    const index = entry.ring.indexAt(this.#key.hi, this.#key.lo, this.#acceptListed);
    this.#entry = undefined;
    return index < 0 ? undefined : entry.aligned[index];
  }

  static {
    ownerOf = (policy, workers, request) => policy.#owner(workers, request);
    placeUncounted = (policy, workers, request) => policy.#place(workers, request);
    newPlacement = () => {
      const policy = new PrefixHashPolicy();
      policy.#prefillBound = true;
      return policy;
    };
  }

  reset(): void {
    this.#rings.clear();
    this.#table?.clear();
  }
}
