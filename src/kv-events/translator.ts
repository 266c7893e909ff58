/**
 * The translation of one engine's KV-cache events into fleetroute's block keys: an engine names
 * its blocks by hashes seeded per process, which no router can reproduce, so each stored block's
 * keys are recomputed from the token ids the event carries ({@link blockHashes}, chained from the
 * keys of its parent block) and the engine's hash is kept only to find those keys again when the
 * engine removes the block.
 *
 * @module
 */
import { blockHashHalves, blockKey, hashOfHalves, PAGE_SIZE } from '../cache/block-hashes.js';
import type { KvEvent } from '../cache/kv-event-store.js';
import { invalidArgument } from '../core/errors.js';
import { integer, OptionTable } from '../core/option-table.js';
import type { EngineEvent } from './batch-decoder.js';
import { EngineBlocks, NONE } from './engine-blocks.js';

/** Options of a {@link KvEventTranslator}. @public */
export interface KvEventTranslatorOptions {
  /**
   * Tokens per block of fleetroute's keys: `cache_aware`'s `pageSize`. The engine's block size
   * must be a multiple of it (events of other sizes are skipped and counted). @defaultValue 16
   */
  readonly pageSize?: number;
  /**
   * The model the worker serves, the `model` of the events produced (a block stored under a
   * LoRA adapter is filed under the adapter's name instead). @defaultValue none (events for
   * requests without a model)
   */
  readonly model?: string;
  /**
   * Most engine blocks remembered. Past it, the least recently stored are forgotten and reported
   * removed, so the index never holds a block whose removal could no longer be translated.
   * Forgetting one costs O(1). @defaultValue 1048576
   */
  readonly maxBlocks?: number;
}

/** @internal The options of a {@link KvEventTranslator}, declared once. */
export const KV_TRANSLATOR_OPTIONS = new OptionTable(
  'kvEventTranslator',
  'KvEventTranslatorOptions',
  {
    pageSize: PAGE_SIZE,
    maxBlocks: integer(1_048_576, 1, 2 ** 30),
  },
  // Read apart: a string, not a bounded number.
  ['model'],
);

/** What a {@link KvEventTranslator} has done since it was created. @public */
export interface KvEventTranslatorStats {
  /** Engine blocks stored and translated. */
  readonly storedBlocks: number;
  /** Engine blocks removed and translated. */
  readonly removedBlocks: number;
  /** `AllBlocksCleared` events. */
  readonly cleared: number;
  /** Stored events whose parent block is unknown (never stored, or forgotten): skipped. */
  readonly orphans: number;
  /** Removed engine hashes never stored (or already forgotten). */
  readonly unknownRemoved: number;
  /**
   * Stored events skipped by kind: another KV group (`group_idx` ≠ 0) or attention kind, a
   * storage medium other than the GPU, extra keys (cache salt, multimodal inputs), a block size
   * that is not a multiple of `pageSize`, or token ids that do not fill the listed blocks.
   */
  readonly skipped: {
    readonly group: number;
    readonly medium: number;
    readonly extraKeys: number;
    readonly blockSize: number;
    readonly tokens: number;
  };
  /** Engine blocks forgotten past `maxBlocks` (reported removed). */
  readonly evicted: number;
}

/** Attention kinds whose blocks hold a prefix's whole KV cache. */
const FULL_ATTENTION: ReadonlySet<string> = new Set([
  'full_attention',
  'mla_attention',
  'sink_full_attention',
]);

/** Where a translation goes: bigint `KvEvent`s, or index keys. */
interface Emitter {
  /** `total` keys stored, as halves `hi[k]`, `lo[k]`. */
  stored(model: string | undefined, hi: Uint32Array, lo: Uint32Array, total: number): void;
  /** Keys removed, as halves `[hi0, lo0, hi1, lo1, …]`. */
  removed(model: string | undefined, halves: readonly number[]): void;
  cleared(): void;
}

/**
 * @internal Receives a translation by index keys: `cleared` (every model) comes with no keys.
 */
export type KvKeySink = (
  type: 'stored' | 'removed' | 'cleared',
  model: string | undefined,
  keys: readonly number[],
) => void;

/**
 * Translates one engine's (one data-parallel rank's) KV events into the `KvEvent`s of
 * `cache_aware`'s `applyKvEvents`, keeping the engine hash → fleetroute keys map that removals
 * need.
 *
 * - `stored`: the blocks' keys are `blockHashes(tokenIds, { pageSize, parent })`, with `parent`
 *   the last key of the event's parent block; a parent never seen (or forgotten) makes the
 *   event an orphan, skipped and counted — never re-rooted at the start of a prompt, which would
 *   file the blocks under a prefix they do not have. Blocks of another KV group or attention
 *   kind, another medium, or with extra keys are skipped and counted: their cache is not the
 *   prompt's prefix alone.
 *   A hash stored again replaces its block: the keys it had are reported removed first (unless
 *   they are the new keys, under the same model), so no key outlives the hash that could remove
 *   it.
 * - `removed`: the keys stored for each engine hash; unknown hashes are counted.
 * - `cleared`: everything this worker held, for every model.
 *
 * Past `maxBlocks` the least recently stored blocks are forgotten and reported removed, so the
 * blocks remembered, and the keys the index holds from them, never exceed `maxBlocks` once a
 * batch is translated.
 *
 * Cost: one xxh64 per `pageSize` tokens stored, O(1) per engine block stored, removed or
 * forgotten; memory about 150 bytes per remembered engine block plus 8 bytes per key, bounded by
 * `maxBlocks`.
 *
 * @public
 */
export class KvEventTranslator {
  readonly #pageSize: number;
  readonly #model: string | undefined;
  readonly #maxBlocks: number;
  readonly #blocks = new EngineBlocks();
  /** Stored events translated, the stamp of the blocks each stores. */
  #storedEvents = 0;
  #hi = new Uint32Array(64);
  #lo = new Uint32Array(64);
  #storedBlocks = 0;
  #removedBlocks = 0;
  #cleared = 0;
  #orphans = 0;
  #unknownRemoved = 0;
  #evicted = 0;
  readonly #skipped = { group: 0, medium: 0, extraKeys: 0, blockSize: 0, tokens: 0 };

  /**
   * The same as the constructor, as a promise (the block hasher needs no loading; this stays for
   * callers written when it did).
   *
   * @throws {@link FleetRouteError} `INVALID_ARGUMENT` (as a rejection) naming a bad option.
   */
  static async create(options: KvEventTranslatorOptions = {}): Promise<KvEventTranslator> {
    return new KvEventTranslator(options);
  }

  /** @throws {@link FleetRouteError} `INVALID_ARGUMENT` naming a bad option. */
  constructor(options: KvEventTranslatorOptions = {}) {
    const o = KV_TRANSLATOR_OPTIONS.read(options);
    const model = (options as { model?: unknown }).model;
    if (model !== undefined && typeof model !== 'string') {
      throw invalidArgument('kvEventTranslator.model must be a string');
    }
    this.#pageSize = o.pageSize;
    this.#maxBlocks = o.maxBlocks;
    this.#model = model;
  }

  /** Engine blocks remembered now. */
  get size(): number {
    return this.#blocks.size;
  }

  /** The counts so far (a fresh object). */
  stats(): KvEventTranslatorStats {
    return {
      storedBlocks: this.#storedBlocks,
      removedBlocks: this.#removedBlocks,
      cleared: this.#cleared,
      orphans: this.#orphans,
      unknownRemoved: this.#unknownRemoved,
      skipped: { ...this.#skipped },
      evicted: this.#evicted,
    };
  }

  /**
   * Translates a batch's events, in order.
   *
   * @returns the events for `applyKvEvents(workerUrl, …)` (possibly empty).
   * @throws {@link FleetRouteError} `INVALID_ARGUMENT` when the hash function has not loaded
   *   (build translators with `await KvEventTranslator.create()`).
   */
  translate(events: readonly EngineEvent[]): KvEvent[] {
    const out: KvEvent[] = [];
    this.#run(events, {
      stored: (model, hi, lo, total) => {
        const hashes = new Array<bigint>(total);
        for (let k = 0; k < total; k++) hashes[k] = hashOfHalves(hi[k]!, lo[k]!);
        out.push(
          model === undefined ? { type: 'stored', hashes } : { type: 'stored', model, hashes },
        );
      },
      removed: (model, halves) => {
        const hashes = new Array<bigint>(halves.length / 2);
        for (let k = 0; k < hashes.length; k++)
          hashes[k] = hashOfHalves(halves[2 * k]!, halves[2 * k + 1]!);
        out.push(
          model === undefined ? { type: 'removed', hashes } : { type: 'removed', model, hashes },
        );
      },
      cleared: () => out.push({ type: 'cleared' }),
    });
    return out;
  }

  /**
   * @internal Translates a batch's events, in order, into `sink` calls with the index keys
   * (`blockKey`) rather than bigint hashes: the subscriber's path into `applyKvKeys`.
   */
  translateKeys(events: readonly EngineEvent[], sink: KvKeySink): void {
    this.#run(events, {
      stored: (model, hi, lo, total) => {
        const keys = new Array<number>(total);
        for (let k = 0; k < total; k++) keys[k] = blockKey(hi[k]!, lo[k]!);
        sink('stored', model, keys);
      },
      removed: (model, halves) => {
        const keys = new Array<number>(halves.length / 2);
        for (let k = 0; k < keys.length; k++)
          keys[k] = blockKey(halves[2 * k]!, halves[2 * k + 1]!);
        sink('removed', model, keys);
      },
      cleared: () => sink('cleared', undefined, []),
    });
  }

  #run(events: readonly EngineEvent[], out: Emitter): void {
    for (const event of events) {
      if (event.type === 'cleared') {
        this.#blocks.clear();
        this.#cleared++;
        out.cleared();
      } else if (event.type === 'removed') {
        this.#remove(event.hashes, out);
      } else {
        this.#store(event, out);
      }
    }
  }

  /** Forgets every engine block (an engine restart): the caller clears the worker's index. */
  clear(): void {
    this.#blocks.clear();
  }

  #store(event: Extract<EngineEvent, { type: 'stored' }>, out: Emitter): void {
    const skipped = this.#skipped;
    const page = this.#pageSize;
    if (
      (event.groupIdx !== undefined && event.groupIdx !== 0) ||
      (event.specKind !== undefined && !FULL_ATTENTION.has(event.specKind))
    ) {
      skipped.group++;
      return;
    }
    if (event.medium !== undefined && event.medium !== 'GPU') {
      skipped.medium++;
      return;
    }
    if (event.extraKeys) {
      skipped.extraKeys++;
      return;
    }
    const blockSize = event.blockSize;
    if (!(blockSize > 0) || blockSize % page !== 0) {
      skipped.blockSize++;
      return;
    }
    const count = event.hashes.length;
    if (event.tokenIds.length !== count * blockSize) {
      skipped.tokens++;
      return;
    }
    let seedHi = 0;
    let seedLo = 0;
    const blocks = this.#blocks;
    if (event.parent !== undefined) {
      const parent = blocks.slotOf(event.parent);
      if (parent === NONE) {
        this.#orphans++;
        return;
      }
      const keys = blocks.keysAt(parent);
      seedHi = keys[keys.length - 2]!;
      seedLo = keys[keys.length - 1]!;
    }
    const perBlock = blockSize / page;
    const total = count * perBlock;
    if (this.#hi.length < total) {
      this.#hi = new Uint32Array(total);
      this.#lo = new Uint32Array(total);
    }
    const hi = this.#hi;
    const lo = this.#lo;
    blockHashHalves(event.tokenIds, page, total, hi, lo, seedHi, seedLo);
    const model = event.loraName ?? this.#model;
    const stamp = ++this.#storedEvents;
    // Blocks whose hash is stored again: their old keys go before the new keys are stored (they
    // may be another block's new keys); a hash listed twice in this event loses its earlier
    // block after (its keys are this event's alone).
    let before: Map<string | undefined, number[]> | undefined;
    let after: Map<string | undefined, number[]> | undefined;
    for (let b = 0; b < count; b++) {
      const keys = new Uint32Array(2 * perBlock);
      for (let j = 0; j < perBlock; j++) {
        const k = b * perBlock + j;
        keys[2 * j] = hi[k]!;
        keys[2 * j + 1] = lo[k]!;
      }
      const engineHash = event.hashes[b]!;
      const known = blocks.slotOf(engineHash);
      if (known !== NONE) {
        const oldModel = blocks.modelAt(known);
        const oldKeys = blocks.keysAt(known);
        if (blocks.stampAt(known) === stamp) appendKeys((after ??= new Map()), oldModel, oldKeys);
        else if (oldModel !== model || !sameKeys(oldKeys, keys))
          appendKeys((before ??= new Map()), oldModel, oldKeys);
      }
      blocks.store(engineHash, model, keys, stamp);
    }
    this.#storedBlocks += count;
    if (before !== undefined) pushRemoved(before, out);
    out.stored(model, hi, lo, total);
    if (after !== undefined) pushRemoved(after, out);
    if (blocks.size > this.#maxBlocks) this.#evict(out);
  }

  #remove(engineHashes: readonly bigint[], out: Emitter): void {
    const byModel = new Map<string | undefined, number[]>();
    const blocks = this.#blocks;
    for (const engineHash of engineHashes) {
      const slot = blocks.slotOf(engineHash);
      if (slot === NONE) {
        this.#unknownRemoved++;
        continue;
      }
      appendKeys(byModel, blocks.modelAt(slot), blocks.keysAt(slot));
      blocks.delete(slot);
      this.#removedBlocks++;
    }
    pushRemoved(byModel, out);
  }

  /** Forgets the least recently stored blocks down to `maxBlocks`, reporting them removed. */
  #evict(out: Emitter): void {
    const byModel = new Map<string | undefined, number[]>();
    const blocks = this.#blocks;
    while (blocks.size > this.#maxBlocks) {
      const slot = blocks.oldest;
      appendKeys(byModel, blocks.modelAt(slot), blocks.keysAt(slot));
      blocks.delete(slot);
      this.#evicted++;
    }
    pushRemoved(byModel, out);
  }
}

function appendKeys(
  byModel: Map<string | undefined, number[]>,
  model: string | undefined,
  keys: Uint32Array,
): void {
  let list = byModel.get(model);
  if (list === undefined) {
    list = [];
    byModel.set(model, list);
  }
  for (let i = 0; i < keys.length; i++) list.push(keys[i]!);
}

function sameKeys(a: Uint32Array, b: Uint32Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function pushRemoved(byModel: Map<string | undefined, number[]>, out: Emitter): void {
  for (const [model, halves] of byModel) out.removed(model, halves);
}
