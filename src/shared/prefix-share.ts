/**
 * The prefix-index part of shared state: the workers other routers sent a request's leading
 * blocks to, read before routing into the policy's tree, and this router's placements written
 * after.
 *
 * @module
 * @internal
 */
import type { PrefixSharing } from '../policies/placement-sharing.js';
import type { SelectRequest } from '../policies/policy.js';
import type { WorkerRegistry } from '../registry/worker-registry.js';
import type { PartCalls } from './part-calls.js';
import { PrefixBlocks } from './prefix-blocks.js';
import type { SharedPrefixIndexConfig } from './shared-state-options.js';
import type { PrefixHolder, SharedStore } from './shared-store.js';
import { readHolders } from './store-values.js';

/** What a lookup left for the write that follows the pick. */
interface PreparedPrefix {
  /** The request's block keys. */
  readonly blocks: string[];
  /** What the store answered (`undefined`: not asked, or no answer in time). */
  holders: readonly PrefixHolder[] | undefined;
}

/** @internal One router's share of the prefix index. */
export class PrefixShare {
  readonly #store: SharedStore;
  readonly #config: Required<SharedPrefixIndexConfig>;
  readonly #calls: PartCalls;
  readonly #blocks: PrefixBlocks;
  readonly #prepared = new WeakMap<SelectRequest, PreparedPrefix>();
  #registry: WorkerRegistry | undefined;

  constructor(store: SharedStore, config: Required<SharedPrefixIndexConfig>, calls: PartCalls) {
    this.#store = store;
    this.#config = config;
    this.#calls = calls;
    this.#blocks = new PrefixBlocks(config.blockTokens, config.blockChars, config.maxBlocks);
  }

  /** The router's registry: whose workers a holder must be, and the candidates of a model. */
  attach(registry: WorkerRegistry): void {
    this.#registry = registry;
  }

  /**
   * Looks up the workers holding the request's leading blocks and puts their placements into
   * the policy's tree, unless the request's model is scored from engine events. Holders no
   * router could have recorded are left out (counted in `ignored`).
   *
   * @returns what to await before routing (at most the deadline), or `undefined` when there is
   *   nothing to look up or nothing worth waiting for. Never rejects.
   */
  prepare(request: SelectRequest, sharing: PrefixSharing): Promise<void> | undefined {
    const model = typeof request.model === 'string' ? request.model : '';
    const key = keyOf(request);
    if (key === undefined || sharing.usesEvents(model)) return undefined;
    const blocks = this.#blocks.of(model, key);
    if (blocks.length === 0) return undefined;
    const prepared: PreparedPrefix = { blocks, holders: undefined };
    this.#prepared.set(request, prepared);
    const c = this.#config;
    return this.#calls.lookup(
      c.deadlineMs,
      () => this.#store.matchPrefix(blocks, c.ttlMs, c.maxHolders),
      (answer) => {
        const holders: PrefixHolder[] = [];
        this.#calls.counters.ignored += readHolders(
          answer,
          blocks.length,
          c.ttlMs,
          c.maxHolders,
          holders,
        );
        prepared.holders = holders;
        if (holders.length === 0) return false;
        this.#remember(sharing, request, model, key, holders);
        return true;
      },
    );
  }

  /**
   * Records that `url` was sent the request's blocks: only those the index does not hold for it
   * already, recently enough.
   *
   * @returns the write (see `PartCalls.send`), or `undefined` when none is due.
   */
  write(request: SelectRequest, url: string): Promise<void> | undefined {
    const prepared = this.#prepared.get(request);
    let blocks = prepared?.blocks;
    if (blocks === undefined) {
      const key = keyOf(request);
      if (key === undefined) return undefined;
      blocks = this.#blocks.of(typeof request.model === 'string' ? request.model : '', key);
    }
    if (blocks.length === 0) return undefined;
    const c = this.#config;
    // Blocks the index already holds for this worker, recently enough, need no write.
    const held = prepared?.holders?.find((h) => h.url === url);
    const from = held !== undefined && held.ageMs < c.ttlMs / 4 ? held.blocks : 0;
    if (from >= blocks.length) return undefined;
    const keys = from === 0 ? blocks : blocks.slice(from);
    return this.#calls.send(() => this.#store.recordPrefix(keys, url, c.ttlMs, c.maxHolders));
  }

  /** The holders' placements, as if this router had routed them, into the policy's tree. */
  #remember(
    sharing: PrefixSharing,
    request: SelectRequest,
    model: string,
    key: string | ArrayLike<number>,
    holders: readonly PrefixHolder[],
  ): void {
    const registry = this.#registry;
    if (registry === undefined) return;
    const workers = registry.getByModel(
      typeof request.model === 'string' ? request.model : undefined,
    );
    const per = this.#blocks.unitsPerBlock(typeof key === 'string' ? 'text' : 'tokens');
    // The store answers only the holders of the longest run, so they share one prefix.
    const prefix = prefixOf(key, Math.min(holders[0]!.blocks * per, key.length));
    for (const holder of holders) {
      if (registry.getByUrl(holder.url) === undefined) continue;
      sharing.remember(workers, model, prefix, holder.url);
    }
  }
}

/** The request's routing key as `cache_aware` reads it: tokens when present, else text. */
function keyOf(request: SelectRequest): string | ArrayLike<number> | undefined {
  const tokens = request.tokens;
  if (typeof tokens === 'object' && tokens !== null && tokens.length > 0) return tokens;
  return typeof request.text === 'string' && request.text.length > 0 ? request.text : undefined;
}

function prefixOf(key: string | ArrayLike<number>, units: number): string | ArrayLike<number> {
  if (typeof key === 'string') return key.slice(0, units);
  if (ArrayBuffer.isView(key)) return (key as unknown as Uint32Array).subarray(0, units);
  return Array.prototype.slice.call(key, 0, units) as number[];
}
