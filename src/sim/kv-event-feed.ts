/**
 * The engines' KV-cache events, as the simulator models them: each engine reports the blocks of
 * its real prefix cache that become reusable (stored) or are evicted (removed), batched per
 * engine step, and every router running `cache_aware` receives each batch after a delay, in
 * order per engine, as a KV-event subscriber would feed `applyKvEvents`.
 *
 * @module
 * @internal
 */
import { blockHashHalves, blockKey } from '../cache/block-hashes.js';
import type { KvEvent } from '../cache/kv-event-store.js';
import { hasKvKeyPath, type KvKeyTarget } from '../cache/kv-key-target.js';
import { invalidArgument } from '../core/errors.js';
import type { Policy } from '../policies/policy.js';
import type { Engine } from './engine.js';
import type { BlockObserver } from './prefix-cache.js';
import { SeededRandom } from './random.js';

const STORED = 0;
const REMOVED = 1;
const CLEARED = 2;
/** Every block of a worker, as the subscriber's `cleared` (no model: every model). */
const CLEARED_EVENT: readonly KvEvent[] = Object.freeze([{ type: 'cleared' }]);
/** Mixed into the run's seed for the loss draws, so arrivals and policies draw as before. */
const LOSS_SALT = 0x6b76_6576;

/**
 * One engine step's events: runs of stored or removed keys in the order they happened (a block
 * stored then evicted in the same step must end removed), or a single clear.
 */
interface Batch {
  readonly kinds: number[];
  readonly keys: number[][];
}

/** @internal The settings of a feed (resolved simulation options). */
export interface KvFeedSettings {
  /** Delivery delay from the engine step to every router, ms of simulated time. */
  readonly delayMs: number;
  /** Share of batches each router loses (0 … 1). */
  readonly loss: number;
  /** The run's seed; the loss draws use a stream of their own derived from it. */
  readonly seed: number;
  /** cache_aware's `pageSize`: tokens per fleetroute block hash. */
  readonly pageSize: number;
  /** The fleet's tokens per cache block: a multiple of `pageSize`. */
  readonly blockSize: number;
}

/**
 * @internal The event feed of one run. Engines report into it through their caches' observers
 * ({@link KvEventFeed.attach}); the run closes each engine's batch after every step or submit
 * ({@link KvEventFeed.flush}) and delivers it when its time comes ({@link KvEventFeed.deliver}).
 * Memory: a cache's blocks keep their fleetroute keys (8 bytes per page per block, bounded by
 * the cache), plus the batches in flight.
 */
export class KvEventFeed {
  readonly #urls: readonly string[];
  readonly #policies: readonly KvKeyTarget[];
  readonly #delayMs: number;
  readonly #loss: number;
  readonly #random: SeededRandom;
  readonly #pageSize: number;
  /** Fleetroute pages per simulated block. */
  readonly #perBlock: number;
  readonly #schedule: (time: number, worker: number) => void;
  /** Per engine: the batch of the step in progress, or `undefined`. */
  readonly #open: (Batch | undefined)[];
  /** Per engine: closed batches not yet delivered, oldest first from `#heads[w]`. */
  readonly #sent: Batch[][];
  readonly #heads: number[];
  #hi = new Uint32Array(256);
  #lo = new Uint32Array(256);

  /**
   * The feed for `policies` (router order) over the workers `urls`, or `undefined` when no
   * policy takes KV events (nothing is then observed or computed). `schedule(time, worker)`
   * must call {@link deliver} for `worker` at `time`, in the order scheduled.
   *
   * @throws {@link FleetRouteError} `INVALID_ARGUMENT` when `blockSize` is not a multiple of
   *   `pageSize`. Cost: O(routers + workers).
   */
  static of(
    policies: readonly Policy[],
    urls: readonly string[],
    settings: KvFeedSettings,
    schedule: (time: number, worker: number) => void,
  ): KvEventFeed | undefined {
    const fed = policies.filter(takesKvKeys);
    if (fed.length === 0) return undefined;
    checkBlockSize(settings.blockSize, settings.pageSize);
    return new KvEventFeed(fed, urls, settings, schedule);
  }

  private constructor(
    policies: readonly KvKeyTarget[],
    urls: readonly string[],
    settings: KvFeedSettings,
    schedule: (time: number, worker: number) => void,
  ) {
    this.#urls = urls;
    this.#policies = policies;
    this.#delayMs = settings.delayMs;
    this.#loss = settings.loss;
    this.#random = new SeededRandom((settings.seed ^ LOSS_SALT) >>> 0);
    this.#pageSize = settings.pageSize;
    this.#perBlock = settings.blockSize / settings.pageSize;
    this.#schedule = schedule;
    this.#open = urls.map(() => undefined);
    this.#sent = urls.map(() => []);
    this.#heads = urls.map(() => 0);
  }

  /** Observes every engine's cache: each block keeps its fleetroute keys. O(engines). */
  attach(engines: readonly Engine[]): void {
    for (const engine of engines) {
      const w = engine.index;
      const observer: BlockObserver = {
        stored: (tags, from, count) => this.#record(w, STORED, tags, from, count),
        removed: (tags, from, count) => this.#record(w, REMOVED, tags, from, count),
      };
      engine.cache.observe(this.#perBlock, observer);
    }
  }

  /**
   * The tags of a request's `blocks` simulated blocks: the fleetroute key (`blockKey` of the
   * `blockHashes` halves, with cache_aware's page size) of each page of `prompt` followed by
   * `answer`, `blockSize / pageSize` per block. Cost: one xxh64 per page; allocates the tags
   * and, with an answer, the joined tokens.
   */
  tagsOf(prompt: Uint32Array, answer: Uint32Array | undefined, blocks: number): Float64Array {
    let tokens = prompt;
    if (answer !== undefined && answer.length > 0) {
      tokens = new Uint32Array(prompt.length + answer.length);
      tokens.set(prompt);
      tokens.set(answer, prompt.length);
    }
    const pages = blocks * this.#perBlock;
    if (this.#hi.length < pages) {
      this.#hi = new Uint32Array(pages * 2);
      this.#lo = new Uint32Array(pages * 2);
    }
    const hi = this.#hi;
    const lo = this.#lo;
    const n = blockHashHalves(tokens, this.#pageSize, pages, hi, lo);
    const tags = new Float64Array(n);
    for (let i = 0; i < n; i++) tags[i] = blockKey(hi[i]!, lo[i]!);
    return tags;
  }

  /** Closes engine `worker`'s batch, if it has one, and sends it (delivery at `now` + delay). */
  flush(worker: number, now: number): void {
    const batch = this.#open[worker];
    if (batch === undefined) return;
    this.#open[worker] = undefined;
    this.#send(worker, batch, now);
  }

  /**
   * Engine `worker` restarted at `now`: its batch so far is sent, then a `cleared` for it, which
   * every router applies after the delay.
   */
  restarted(worker: number, now: number): void {
    this.flush(worker, now);
    this.#send(worker, { kinds: [CLEARED], keys: [[]] }, now);
  }

  /**
   * Delivers engine `worker`'s oldest batch to every router. A router loses it with
   * probability `loss` (one draw per router and batch, none when `loss` is 0) and then, as a
   * subscriber without replay does, clears that worker's blocks instead.
   * O(routers × keys in the batch).
   */
  deliver(worker: number): void {
    const queue = this.#sent[worker]!;
    const head = this.#heads[worker]!;
    const batch = queue[head]!;
    queue[head] = undefined as unknown as Batch;
    if (head + 1 === queue.length) {
      queue.length = 0;
      this.#heads[worker] = 0;
    } else {
      this.#heads[worker] = head + 1;
    }
    const url = this.#urls[worker]!;
    const loss = this.#loss;
    for (const policy of this.#policies) {
      if (loss > 0 && this.#random.next() < loss) {
        policy.applyKvEvents(url, CLEARED_EVENT);
        continue;
      }
      for (let i = 0; i < batch.kinds.length; i++) {
        const kind = batch.kinds[i]!;
        // The simulator's requests carry no model: their blocks are the model-less ones.
        if (kind === CLEARED) policy.applyKvEvents(url, CLEARED_EVENT);
        else
          policy.applyKvKeys(
            url,
            kind === STORED ? 'stored' : 'removed',
            undefined,
            batch.keys[i]!,
          );
      }
    }
  }

  #send(worker: number, batch: Batch, now: number): void {
    this.#sent[worker]!.push(batch);
    this.#schedule(now + this.#delayMs, worker);
  }

  #record(worker: number, kind: number, tags: Float64Array, from: number, count: number): void {
    let batch = this.#open[worker];
    if (batch === undefined) {
      batch = { kinds: [], keys: [] };
      this.#open[worker] = batch;
    }
    const last = batch.kinds.length - 1;
    let keys: number[];
    if (last >= 0 && batch.kinds[last] === kind) {
      keys = batch.keys[last]!;
    } else {
      keys = [];
      batch.kinds.push(kind);
      batch.keys.push(keys);
    }
    for (let i = from; i < from + count; i++) keys.push(tags[i]!);
  }
}

/** Whether `policy` takes KV events by key (`cache_aware`). */
function takesKvKeys(policy: Policy): policy is Policy & KvKeyTarget {
  return hasKvKeyPath(policy);
}

/**
 * @internal Checks that a simulated block is a whole number of fleetroute pages.
 * @throws {@link FleetRouteError} `INVALID_ARGUMENT` otherwise.
 */
export function checkBlockSize(blockSize: number, pageSize: number): void {
  if (blockSize % pageSize !== 0) {
    throw invalidArgument(
      `kvEvents: fleet.blockSize (${blockSize}) must equal cache_aware's pageSize (${pageSize}) or be a multiple of it`,
    );
  }
}
