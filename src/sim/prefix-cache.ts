/**
 * One worker's prefix cache: blocks keyed by their chained key, pinned while a running request
 * uses them, evicted least recently used first when they are not.
 *
 * @module
 * @internal
 */
import { BlockMap } from './block-table.js';

/** No node: the end of a list. */
const NONE = -1;
/** Nodes allocated at first; the arrays double as blocks are added. */
const MIN_NODES = 64;

/**
 * @internal Told of every block that becomes reusable and every block evicted, with the block's
 * tags (see {@link PrefixCache.observe}): `tags[from, from + count)`, to be read at once (the
 * array is the cache's own, or the caller's).
 */
export interface BlockObserver {
  stored(tags: Float64Array, from: number, count: number): void;
  removed(tags: Float64Array, from: number, count: number): void;
}

/**
 * @internal Reusable blocks live in nodes held in parallel typed arrays — key, pin count, and
 * `prev`/`next` links of the idle list (blocks no request pins, least recently used first) —
 * found by a {@link BlockMap} from key to node. Freed nodes are chained through `next` and
 * reused. Nothing is allocated per operation (but on growth); the arrays grow by doubling and
 * never shrink, so a cache costs 20 bytes of node plus 16 to 32 bytes of table per reusable
 * block, at the most it ever held at once. Every operation is O(1) expected per block.
 */
export class PrefixCache {
  readonly #capacity: number;
  /** Reusable block key → its node. */
  readonly #nodes = new BlockMap();
  #key = new Float64Array(MIN_NODES);
  /** Running requests pinning the node's block (0: idle). */
  #refs = new Int32Array(MIN_NODES);
  #prev = new Int32Array(MIN_NODES);
  #next = new Int32Array(MIN_NODES);
  /** Nodes ever used; nodes at or past it are unused. */
  #allocated = 0;
  /** The first free node (chained through `#next`), or {@link NONE}. */
  #free = NONE;
  /** The idle list: oldest first. */
  #head = NONE;
  #tail = NONE;
  #idle = 0;
  /** Blocks held by running requests that are not (yet) reusable: fresh prefill, output. */
  #private = 0;
  /** Scratch: the nodes of the blocks an admission pins, found once. */
  #found = new Int32Array(MIN_NODES);
  /** Tags per block (0: untagged, nothing below is allocated or called). */
  #tagsPer = 0;
  /** `#tagsPer` tags per node, node after node. */
  #tags = new Float64Array(0);
  #observer: BlockObserver | undefined;

  /** @param capacity - blocks; `Infinity` for an unbounded cache. */
  constructor(capacity: number) {
    this.#capacity = capacity;
  }

  /**
   * Tags every reusable block with `tagsPerBlock` numbers, given by `publish`/`keep`, held for
   * as long as the block is (8 bytes each per node), and tells `observer` of each block that
   * becomes reusable or is evicted, with its tags. Call it before any block is added. O(nodes).
   */
  observe(tagsPerBlock: number, observer: BlockObserver): void {
    this.#tagsPer = tagsPerBlock;
    this.#tags = new Float64Array(this.#key.length * tagsPerBlock);
    this.#observer = observer;
  }

  /** Calls `visit(tags, from, count)` for every reusable block (tests compare it). O(blocks). */
  forEachTagged(visit: (tags: Float64Array, from: number, count: number) => void): void {
    const per = this.#tagsPer;
    if (per === 0) return;
    const free = new Set<number>();
    for (let node = this.#free; node !== NONE; node = this.#next[node]!) free.add(node);
    for (let node = 0; node < this.#allocated; node++) {
      if (!free.has(node)) visit(this.#tags, node * per, per);
    }
  }

  /** Blocks in use: reusable ones plus private ones. */
  get used(): number {
    return this.#nodes.size + this.#private;
  }

  get capacity(): number {
    return this.#capacity;
  }

  /** How many leading `keys` are reusable here, at most `limit`. O(match). */
  match(keys: Float64Array, limit: number = keys.length): number {
    const nodes = this.#nodes;
    let n = 0;
    while (n < limit && nodes.get(keys[n]!) !== NONE) n++;
    return n;
  }

  /**
   * Pins `keys[0, matched)` and reserves `fresh` private blocks, evicting idle blocks as needed.
   * Returns `false` and changes nothing when that does not fit, unless `force` (then the cache
   * may exceed its capacity, so a request larger than the cache still runs). O(matched + evicted).
   */
  admit(keys: Float64Array, matched: number, fresh: number, force: boolean): boolean {
    const nodes = this.#nodes;
    const refs = this.#refs;
    if (this.#found.length < matched) this.#found = new Int32Array(matched * 2);
    const found = this.#found;
    let idlePinned = 0;
    for (let i = 0; i < matched; i++) {
      const node = nodes.get(keys[i]!);
      found[i] = node;
      if (refs[node] === 0) idlePinned++;
    }
    if (!force && this.#capacity !== Number.POSITIVE_INFINITY) {
      const evictable = this.#idle - idlePinned;
      if (this.#capacity - this.used + evictable < fresh) return false;
    }
    for (let i = 0; i < matched; i++) {
      const node = found[i]!;
      if (refs[node] === 0) this.#unlink(node);
      refs[node]!++;
    }
    this.#private += fresh;
    this.#evict();
    return true;
  }

  /**
   * Makes `keys[from, to)` reusable: each becomes a pinned reusable block, converting one of the
   * request's private blocks; a key another request already made reusable stays private.
   * When the cache is observed, block `i` takes `tags[i × tagsPerBlock, (i + 1) × tagsPerBlock)`.
   * Returns how many became reusable (the request now pins them). O(to − from).
   */
  publish(
    keys: Float64Array,
    from: number,
    to: number,
    pinned: number[],
    tags?: Float64Array,
  ): number {
    const nodes = this.#nodes;
    let published = 0;
    for (let i = from; i < to; i++) {
      const key = keys[i]!;
      const node = this.#spare();
      if (nodes.add(key, node) !== NONE) continue;
      this.#take(node, key, tags, i);
      this.#refs[node] = 1;
      this.#private--;
      pinned.push(key);
      published++;
    }
    return published;
  }

  /**
   * Adds `keys[from, to)` as idle reusable blocks (a finished request's output), converting
   * private blocks; keys already present are left alone. Tags as for {@link publish}. Returns
   * how many were added.
   */
  keep(keys: Float64Array, from: number, to: number, tags?: Float64Array): number {
    const nodes = this.#nodes;
    let kept = 0;
    for (let i = from; i < to; i++) {
      const key = keys[i]!;
      const node = this.#spare();
      if (nodes.add(key, node) !== NONE) continue;
      this.#take(node, key, tags, i);
      this.#refs[node] = 0;
      this.#append(node);
      this.#private--;
      kept++;
    }
    this.#evict();
    return kept;
  }

  /** Unpins `pinned` (most recently used last) and frees `privateBlocks`. O(pinned). */
  release(pinned: readonly number[], privateBlocks: number): void {
    const nodes = this.#nodes;
    const refs = this.#refs;
    for (let i = 0; i < pinned.length; i++) {
      const node = nodes.get(pinned[i]!);
      if (--refs[node]! === 0) this.#append(node);
    }
    this.#private -= privateBlocks;
  }

  /**
   * Forgets every reusable block at once, as an engine restart does, without telling the
   * observer. Blocks pinned by running requests stay allocated as their private blocks: each
   * caller turns its `pinned` into private blocks (see `Engine.restart`), whose count it passes
   * here as `pinnedBlocks`. O(nodes).
   */
  clear(pinnedBlocks: number): void {
    this.#private += pinnedBlocks;
    this.#nodes.clear();
    this.#allocated = 0;
    this.#free = NONE;
    this.#head = NONE;
    this.#tail = NONE;
    this.#idle = 0;
  }

  /** Evicts idle blocks, oldest first, until the cache fits (or nothing idle is left). */
  #evict(): void {
    const capacity = this.#capacity;
    const observer = this.#observer;
    while (this.#head !== NONE && this.used > capacity) {
      const node = this.#head;
      this.#unlink(node);
      this.#nodes.delete(this.#key[node]!);
      this.#next[node] = this.#free;
      this.#free = node;
      if (observer !== undefined) observer.removed(this.#tags, node * this.#tagsPer, this.#tagsPer);
    }
  }

  /** The node the next new block takes (see {@link #take}); room for it is made now. */
  #spare(): number {
    if (this.#free !== NONE) return this.#free;
    if (this.#allocated === this.#key.length) this.#growNodes();
    return this.#allocated;
  }

  /**
   * Gives the {@link #spare} node to the new reusable block `key`, block `index` of `tags` when
   * observed (pins and links: the caller's).
   */
  #take(node: number, key: number, tags: Float64Array | undefined, index: number): void {
    if (node === this.#free) this.#free = this.#next[node]!;
    else this.#allocated++;
    this.#key[node] = key;
    const observer = this.#observer;
    if (observer === undefined || tags === undefined) return;
    const per = this.#tagsPer;
    this.#tags.set(tags.subarray(index * per, (index + 1) * per), node * per);
    observer.stored(this.#tags, node * per, per);
  }

  /** Appends `node` to the idle list (most recently used). */
  #append(node: number): void {
    const tail = this.#tail;
    this.#prev[node] = tail;
    this.#next[node] = NONE;
    if (tail === NONE) this.#head = node;
    else this.#next[tail] = node;
    this.#tail = node;
    this.#idle++;
  }

  /** Takes `node` out of the idle list. */
  #unlink(node: number): void {
    const prev = this.#prev[node]!;
    const next = this.#next[node]!;
    if (prev === NONE) this.#head = next;
    else this.#next[prev] = next;
    if (next === NONE) this.#tail = prev;
    else this.#prev[next] = prev;
    this.#idle--;
  }

  #growNodes(): void {
    const size = this.#key.length * 2;
    const key = new Float64Array(size);
    key.set(this.#key);
    this.#key = key;
    this.#refs = grown(this.#refs, size);
    this.#prev = grown(this.#prev, size);
    this.#next = grown(this.#next, size);
    if (this.#tagsPer > 0) {
      const tags = new Float64Array(size * this.#tagsPer);
      tags.set(this.#tags);
      this.#tags = tags;
    }
  }
}

/** `array` copied into a new array of `size` elements. */
function grown(array: Int32Array, size: number): Int32Array<ArrayBuffer> {
  const copy = new Int32Array(size);
  copy.set(array);
  return copy;
}
