/**
 * The per-model state of `cache_aware` — one approximate tree per model and key kind, and the
 * engine block index — under one size budget for all trees together (`maxTotalSize`).
 *
 * **Accounting.** A tree counts its {@link RadixTree.size} (every tenant's units, so a prefix
 * held by k workers counts k times and the figure never falls below what the tree stores) plus a
 * fixed {@link TREE_CHARGE} and the length of its model string, so even empty-looking trees of
 * many distinct models add up. Block indexes are not counted: they hold what engines report.
 *
 * **Eviction.** When an insert takes the total over the budget, trees are evicted down to 7/8 of
 * it, in this order:
 *
 * 1. trees of *unnamed* models, whole, least recently used first. A model is named ("listed" in
 *    the docs) when a candidate of its latest insert lists it explicitly (`worker.models`); a
 *    wildcard worker names no model, and the tree of requests without a model (`''`) counts as
 *    named;
 * 2. then, if still over, every tenant of every named tree down to the same share of its size,
 *    its least recently used leaves first.
 *
 * An entry left with no tree and no block is deleted, so no `Map` entry outlives its contents.
 *
 * **Marks.** At every round of load reports each entry records its trees' logical clocks
 * ({@link ModelCaches.mark}, O(entries)); a restart seen by its start time forgets a worker's
 * entries up to the mark of the round before it ({@link ModelCaches.forgetBefore}). A tree
 * created anew starts with marks of 0: nothing in it predates a round it did not see.
 *
 * **Cost.** O(1) per insert — one list-identity check, an LRU relink, a few additions — plus
 * the eviction, which runs at most once per eighth of the budget inserted: O(trees dropped), each
 * paid for by the insert that created it, or O(named tenants and their leaves). Re-reading
 * whether a model is named walks the candidates (stopping at the first that names it), only when
 * a different list object comes for that model.
 *
 * @module
 * @internal
 */
import type { KvBlockIndex } from '../../cache/kv-event-store.js';
import { RadixTree } from '../../cache/radix-tree.js';
import { TEXT_KEYS, type TokenKeyOps, tokenKeys } from '../../cache/tree-keys.js';
import { Worker } from '../../workers/worker.js';
import { MARK_ROUNDS } from './report-rounds.js';

/**
 * @internal Units a tree counts on top of its contents: a tree holding one short prompt for one
 * worker measured 2.1 KB (text) and 2.6 KB (tokens) of heap, under 8 bytes per unit at 512.
 */
export const TREE_CHARGE = 512;

/** @internal The two key kinds: text trees and token trees. */
export type TreeKind = 0 | 1;
/** @internal Text keys (UTF-16 code units). */
export const TEXT: TreeKind = 0;
/** @internal Token keys (whole pages). */
export const TOKENS: TreeKind = 1;

type AnyTree = RadixTree<unknown, unknown>;

/** The root label of every token tree (never written to). */
const NO_TOKENS = new Uint32Array(0);

/**
 * @internal One model's trees and block index. Every field is initialised, so all entries share
 * one shape; while it holds a tree, the entry is a link of its class's least-recently-used list.
 */
export class ModelCache {
  readonly model: string;
  text: RadixTree<string, string> | undefined = undefined;
  tokens: RadixTree<ArrayLike<number>, Uint32Array> | undefined = undefined;
  events: KvBlockIndex | undefined = undefined;
  /** Whether the candidates of the latest insert named the model (always, for `''`). */
  named = false;
  /** The candidate list `named` was read from: it is read again only for another list. */
  namedBy: readonly Worker[] | undefined = undefined;
  /** Units this entry's trees count in the total. */
  charged = 0;
  /**
   * Each tree's logical clock when each kept round of load reports was delivered, by round slot
   * (see `report-rounds.ts`): the text tree's in `[0, MARK_ROUNDS)`, the token tree's after. 0
   * for a round before the tree existed (everything in it is newer).
   */
  readonly marks = new Float64Array(2 * MARK_ROUNDS);
  older: ModelCache | undefined = undefined;
  newer: ModelCache | undefined = undefined;
  listed = false;

  constructor(model: string) {
    this.model = model;
  }
}

/** @internal One tree, as `cache_aware`'s `stats()` lists it. */
export interface TreeSummary {
  readonly model: string;
  readonly kind: 'text' | 'tokens';
  readonly nodes: number;
  readonly tenants: number;
  readonly size: number;
}

/** @internal The tree of `cache` for `kind`, if any. */
export function treeOf(cache: ModelCache | undefined, kind: TreeKind): AnyTree | undefined {
  if (cache === undefined) return undefined;
  return (kind === TEXT ? cache.text : cache.tokens) as AnyTree | undefined;
}

/** A least-recently-used list threaded through the entries: moving one allocates nothing. */
class LruList {
  oldest: ModelCache | undefined = undefined;
  newest: ModelCache | undefined = undefined;

  /** Makes `entry` the newest, linking it when it is not in the list. O(1). */
  touch(entry: ModelCache): void {
    if (this.newest === entry) return;
    this.unlink(entry);
    entry.older = this.newest;
    if (this.newest === undefined) this.oldest = entry;
    else this.newest.newer = entry;
    this.newest = entry;
    entry.listed = true;
  }

  unlink(entry: ModelCache): void {
    if (!entry.listed) return;
    if (entry.older === undefined) this.oldest = entry.newer;
    else entry.older.newer = entry.newer;
    if (entry.newer === undefined) this.newest = entry.older;
    else entry.newer.older = entry.older;
    entry.older = undefined;
    entry.newer = undefined;
    entry.listed = false;
  }

  clear(): void {
    this.oldest = undefined;
    this.newest = undefined;
  }
}

/** @internal Whether a worker of the list names `model` explicitly. O(n) at most; stops early. */
export function namesModel(workers: readonly Worker[], model: string): boolean {
  for (let i = 0; i < workers.length; i++) {
    const worker = workers[i];
    if (worker instanceof Worker && !worker.isWildcard && worker.serves(model)) return true;
  }
  return false;
}

/** @internal Every model's trees and block index, under one budget (see the module comment). */
export class ModelCaches {
  readonly #entries = new Map<string, ModelCache>();
  readonly #named = new LruList();
  readonly #unnamed = new LruList();
  readonly #maxTreeSize: number;
  readonly #budget: number;
  readonly #lowWater: number;
  readonly #tokenKeys: TokenKeyOps;
  #total = 0;

  /**
   * @param maxTreeSize - units per tenant per tree.
   * @param maxTotalSize - units of all trees together, fixed charges included.
   * @param pageSize - tokens per page of token trees.
   */
  constructor(maxTreeSize: number, maxTotalSize: number, pageSize: number) {
    this.#maxTreeSize = maxTreeSize;
    this.#budget = maxTotalSize;
    this.#lowWater = maxTotalSize - Math.floor(maxTotalSize / 8);
    this.#tokenKeys = tokenKeys(pageSize);
  }

  /** Units counted against the budget: every tree's size plus its fixed charge. O(1). */
  get total(): number {
    return this.#total;
  }

  /** Entries held (models with a tree or engine blocks). O(1). */
  get size(): number {
    return this.#entries.size;
  }

  /** The model's entry, if it has one. O(1). */
  get(model: string): ModelCache | undefined {
    return this.#entries.get(model);
  }

  /** Every entry, in creation order. */
  entries(): IterableIterator<ModelCache> {
    return this.#entries.values();
  }

  /** The model's entry, created empty when missing (call {@link ModelCaches.settle} after). */
  entryOf(model: string): ModelCache {
    let entry = this.#entries.get(model);
    if (entry === undefined) {
      entry = new ModelCache(model);
      this.#entries.set(model, entry);
    }
    return entry;
  }

  /**
   * Records `key` for `url` in the model's tree of `kind`, creating the tree when the key has
   * usable units (a key without any creates nothing). On an existing tree, call `match(key)` on
   * it first: the insert continues that descent. `workers` are the candidates the key was routed
   * among; they decide whether the model is named. Then trims the tenant when it passed twice
   * `maxTreeSize`, and the trees when the total passed the budget.
   *
   * @param entry - the model's entry when the caller has it (saves a lookup), else `undefined`.
   */
  insert(
    workers: readonly Worker[],
    model: string,
    entry: ModelCache | undefined,
    kind: TreeKind,
    key: string | ArrayLike<number>,
    url: string,
  ): void {
    entry ??= this.#entries.get(model);
    let tree = treeOf(entry, kind);
    let before: number;
    if (tree === undefined) {
      const usable =
        kind === TEXT
          ? TEXT_KEYS.usable(key as string)
          : this.#tokenKeys.usable(key as ArrayLike<number>);
      if (usable === 0) return;
      entry ??= this.entryOf(model);
      // A new tree's clock starts again: every earlier round saw none of it.
      entry.marks.fill(0, kind * MARK_ROUNDS, (kind + 1) * MARK_ROUNDS);
      if (kind === TEXT) tree = (entry.text = new RadixTree(TEXT_KEYS, '')) as AnyTree;
      else tree = (entry.tokens = new RadixTree(this.#tokenKeys, NO_TOKENS)) as AnyTree;
      before = -(TREE_CHARGE + model.length); // a new tree counts its fixed charge too
    } else {
      before = tree.size;
    }
    tree.insert(key, url);
    // Between two timer runs, no worker grows past twice its budget.
    if (tree.sizeOf(url) > 2 * this.#maxTreeSize) tree.evict(url, this.#maxTreeSize);
    const e = entry!;
    if (e.namedBy !== workers) this.#classify(e, workers);
    (e.named ? this.#named : this.#unnamed).touch(e);
    // The tree holds the key now, so it is not empty: only its size changed.
    const delta = tree.size - before;
    e.charged += delta;
    this.#total += delta;
    if (this.#total > this.#budget) this.#enforce();
  }

  /** Evicts every tree down to `maxTreeSize` per tenant (the timer's run). @returns units evicted. */
  evictAll(): number {
    let evicted = 0;
    for (const entry of this.#entries.values()) {
      evicted += entry.text?.evictAll(this.#maxTreeSize) ?? 0;
      evicted += entry.tokens?.evictAll(this.#maxTreeSize) ?? 0;
      this.settle(entry);
    }
    return evicted;
  }

  /** Removes `url` from every tree and block index. O(entries + the tenant's entries). */
  removeTenant(url: string): void {
    for (const entry of this.#entries.values()) {
      entry.text?.removeTenant(url);
      entry.tokens?.removeTenant(url);
      entry.events?.clear(url);
      this.settle(entry);
    }
  }

  /**
   * Marks a round of load reports: each tree's logical clock goes into `slot` of its entry's
   * marks. O(entries), no allocation.
   */
  mark(slot: number): void {
    for (const entry of this.#entries.values()) {
      const marks = entry.marks;
      marks[slot] = entry.text?.clock ?? 0;
      marks[MARK_ROUNDS + slot] = entry.tokens?.clock ?? 0;
    }
  }

  /**
   * Forgets what `url` was sent up to the round of `slot`: in every tree, its entries last
   * touched at or before the tree's mark there ({@link RadixTree.forgetBefore}); newer ones stay.
   * `slot` -1: every entry, as {@link ModelCaches.removeTenant} but leaving the block indexes.
   * Block indexes are untouched (the engines' events own them). O(entries + the tenant's leaves
   * and the entries forgotten).
   */
  forgetBefore(url: string, slot: number): void {
    for (const entry of this.#entries.values()) {
      const marks = entry.marks;
      const text = slot < 0 ? Number.POSITIVE_INFINITY : marks[slot]!;
      const tokens = slot < 0 ? Number.POSITIVE_INFINITY : marks[MARK_ROUNDS + slot]!;
      entry.text?.forgetBefore(url, text);
      entry.tokens?.forgetBefore(url, tokens);
      this.settle(entry);
    }
  }

  /**
   * Recounts the entry after a change: drops its emptied trees, updates the total, and deletes
   * the entry once it holds neither a tree nor a block. O(1).
   */
  settle(entry: ModelCache): void {
    const fixed = TREE_CHARGE + entry.model.length;
    let charge = 0;
    if (entry.text !== undefined) {
      if (entry.text.size === 0) entry.text = undefined;
      else charge += entry.text.size + fixed;
    }
    if (entry.tokens !== undefined) {
      if (entry.tokens.size === 0) entry.tokens = undefined;
      else charge += entry.tokens.size + fixed;
    }
    this.#total += charge - entry.charged;
    entry.charged = charge;
    if (charge > 0) return;
    (entry.named ? this.#named : this.#unnamed).unlink(entry);
    entry.namedBy = undefined;
    if (entry.events !== undefined && !entry.events.empty) return;
    entry.events = undefined;
    if (this.#entries.get(entry.model) === entry) this.#entries.delete(entry.model);
  }

  /**
   * Every tree (its model, kind, node count, tenants and size) and every model with engine
   * blocks, in the entries' creation order: what `cache_aware`'s `stats()` lists. O(entries).
   */
  summary(): { trees: TreeSummary[]; eventModels: string[] } {
    const trees: TreeSummary[] = [];
    const eventModels: string[] = [];
    for (const cache of this.#entries.values()) {
      const model = cache.model;
      for (const [kind, tree] of [
        ['text', cache.text],
        ['tokens', cache.tokens],
      ] as const) {
        if (tree === undefined) continue;
        trees.push({
          model,
          kind,
          nodes: tree.nodeCount,
          tenants: tree.tenantCount,
          size: tree.size,
        });
      }
      if (cache.events !== undefined && !cache.events.empty) eventModels.push(model);
    }
    return { trees, eventModels };
  }

  /** Forgets everything. */
  clear(): void {
    this.#entries.clear();
    this.#named.clear();
    this.#unnamed.clear();
    this.#total = 0;
  }

  #classify(entry: ModelCache, workers: readonly Worker[]): void {
    entry.namedBy = workers;
    const named = entry.model === '' || namesModel(workers, entry.model);
    if (named === entry.named) return;
    (entry.named ? this.#named : this.#unnamed).unlink(entry);
    entry.named = named;
  }

  /** Brings the total down to the low-water mark (see the module comment for the order). */
  #enforce(): void {
    const target = this.#lowWater;
    for (let e = this.#unnamed.oldest; e !== undefined && this.#total > target; ) {
      e.text = undefined;
      e.tokens = undefined;
      this.settle(e);
      e = this.#unnamed.oldest;
    }
    if (this.#total <= target) return;
    // Only named trees are left: shrink each tenant by the same share.
    let content = 0;
    for (let e = this.#named.oldest; e !== undefined; e = e.newer) {
      content += (e.text?.size ?? 0) + (e.tokens?.size ?? 0);
    }
    const fixed = this.#total - content;
    const ratio = content > 0 ? Math.max(0, target - fixed) / content : 0;
    for (let e = this.#named.oldest; e !== undefined; ) {
      const next = e.newer;
      e.text?.shrink(ratio);
      e.tokens?.shrink(ratio);
      this.settle(e);
      e = next;
    }
  }
}
