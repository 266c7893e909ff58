/**
 * An approximate, multi-tenant radix tree: which workers (tenants) were sent which prefixes.
 *
 * It approximates each worker's prefix cache from the routing decisions alone: a prefix routed to
 * a worker is assumed cached there until the tenant's share of the tree exceeds its budget, when
 * its least recently used leaves are evicted first.
 *
 * @module
 */
import { invalidArgument } from '../core/errors.js';
import type { KeyOps } from './tree-keys.js';

/** @internal A node: an edge label, children by first unit, and the tenants holding it. */
export class TreeNode<L> {
  label: L;
  parent: TreeNode<L> | undefined;
  /** Children by the child key of their label; siblings with the same key chain through `next`. */
  children: Map<number, TreeNode<L>> | undefined = undefined;
  next: TreeNode<L> | undefined = undefined;
  /** Tenant id → logical time of its last use of this node. */
  readonly tenants = new Map<number, number>();

  constructor(label: L, parent: TreeNode<L> | undefined) {
    this.label = label;
    this.parent = parent;
  }
}

/** What {@link RadixTree.match} found: reused between calls, read it before the next one. */
export interface TreeMatch<L> {
  /** Units of the key matched (0 … usable length). */
  matched: number;
  /** Usable units of the key. */
  length: number;
  /** The deepest node the match reached (the root when nothing matched). */
  node: TreeNode<L>;
  /** How much of `node`'s label the match covered (less than its length: a mid-edge match). */
  offset: number;
}

/** Per-tenant figures from {@link RadixTree.tenantStats}. @public */
export interface TenantTreeStats {
  readonly tenant: string;
  /** Units (characters or tokens) of the prefixes held for the tenant. */
  readonly size: number;
  /** Leaves of the tenant (its eviction candidates). */
  readonly leaves: number;
}

/**
 * The tree. One per model and key kind in the cache-aware policy; usable on its own.
 *
 * Costs: `match` is one descent, O(key length) in the worst case, comparing whole edge labels
 * natively where they match; `insert` continues from the last match (no second descent) and
 * copies only the new suffix. `evict`, `forgetBefore` and `removeTenant` touch only the tenant's
 * own leaves and their ancestors (a reverse index of leaves per tenant).
 *
 * @internal
 */
export class RadixTree<K, L> {
  readonly #ops: KeyOps<K, L>;
  readonly #root: TreeNode<L>;
  readonly #ids = new Map<string, number>();
  readonly #names: (string | undefined)[] = [];
  /** Scratch for {@link RadixTree.holdersOf}. */
  readonly #holders: string[] = [];
  readonly #free: number[] = [];
  readonly #sizes: number[] = [];
  readonly #leaves: (Set<TreeNode<L>> | undefined)[] = [];
  #clock = 0;
  #nodes = 1;
  /** The sum of every tenant's size. */
  #size = 0;
  // Match state, reused: the path of full nodes from the root, and the last result.
  readonly #path: TreeNode<L>[] = [];
  #pathLength = 0;
  #lastKey: K | undefined;
  readonly #match: TreeMatch<L>;
  /** Scratch for {@link RadixTree.pathHolders}: `#seen[id] === #seenEpoch`, tenant visited. */
  #seen = new Uint32Array(64);
  #seenEpoch = 0;

  constructor(ops: KeyOps<K, L>, emptyLabel: L) {
    this.#ops = ops;
    this.#root = new TreeNode(emptyLabel, undefined);
    this.#match = { matched: 0, length: 0, node: this.#root, offset: 0 };
  }

  /** Nodes in the tree, the root included. */
  get nodeCount(): number {
    return this.#nodes;
  }

  /**
   * The tree's logical clock: the time of its latest insert (0 before the first). Each insert
   * stamps the path it touches for its tenant with the next value, so an entry stamped at or
   * before a value read here was last touched before any insert that follows the read. It never
   * goes back, `clear()` included. O(1).
   */
  get clock(): number {
    return this.#clock;
  }

  /** Tenants with an entry. */
  get tenantCount(): number {
    return this.#ids.size;
  }

  /**
   * The sum of every tenant's size, in units: a label held by k tenants counts k times, so it is
   * never below the units the tree stores. 0 exactly when the tree is empty. O(1).
   */
  get size(): number {
    return this.#size;
  }

  /** @internal The root (tests walk the tree from it). */
  get root(): TreeNode<L> {
    return this.#root;
  }

  /** The tenant's size in units, 0 when unknown. O(1). */
  sizeOf(tenant: string): number {
    const id = this.#ids.get(tenant);
    return id === undefined ? 0 : this.#sizes[id]!;
  }

  /** @internal The tenant's id, or -1. */
  idOf(tenant: string): number {
    return this.#ids.get(tenant) ?? -1;
  }

  /** @internal The tenant's name for an id. */
  nameOf(id: number): string | undefined {
    return this.#names[id];
  }

  /**
   * The tenants holding the node a match reached — the workers that were sent that prefix —
   * by name, in the node's order. The array is reused: read it before the next call. O(holders).
   */
  holdersOf(match: TreeMatch<L>): readonly string[] {
    const holders = this.#holders;
    holders.length = 0;
    for (const id of match.node.tenants.keys()) {
      const name = this.#names[id];
      if (name !== undefined) holders.push(name);
    }
    return holders;
  }

  /**
   * Every tenant holding a node of the last {@link RadixTree.match}'s path — the workers that were
   * sent part of that prefix — with the units of the key it holds: the end of the deepest path
   * node it holds (the match's end for the node the match stopped in). Deepest first, each tenant
   * once, at most `max`; `visit(name, units, id)` is called for each (`id`: the tenant's id now;
   * once the tenant leaves, the id may pass to another). Cost: O(path nodes + their holders visited).
   * @returns how many were visited.
   */
  pathHolders(
    match: TreeMatch<L>,
    max: number,
    visit: (name: string, units: number, id: number) => void,
  ): number {
    const path = this.#path;
    const depth = this.#pathLength;
    if (depth === 0 || match !== this.#match || max <= 0) return 0;
    const ops = this.#ops;
    if (++this.#seenEpoch === 0x4000_0000) {
      this.#seen.fill(0);
      this.#seenEpoch = 1;
    }
    const epoch = this.#seenEpoch;
    // Where each path node ends in the key: the last one where the match ended.
    let end = match.matched;
    let visited = 0;
    for (let d = depth - 1; d >= 0 && visited < max; d--) {
      const node = path[d]!;
      for (const id of node.tenants.keys()) {
        if (id >= this.#seen.length) this.#growSeen(id);
        else if (this.#seen[id] === epoch) continue;
        this.#seen[id] = epoch;
        const name = this.#names[id];
        if (name === undefined) continue;
        visit(name, end, id);
        if (++visited >= max) break;
      }
      // The parent ends where this node's label begins.
      end -= d === depth - 1 ? match.offset : ops.labelLength(node.label);
    }
    return visited;
  }

  #growSeen(id: number): void {
    let size = this.#seen.length;
    while (size <= id) size *= 2;
    const grown = new Uint32Array(size);
    grown.set(this.#seen);
    this.#seen = grown;
  }

  /**
   * Descends along `key` as far as the tree agrees with it. The result (reused) says how many
   * units matched and where the descent stopped; {@link RadixTree.insert} continues from there.
   */
  match(key: K): TreeMatch<L> {
    const ops = this.#ops;
    const length = ops.usable(key);
    const path = this.#path;
    let node = this.#root;
    let pos = 0;
    let offset = 0;
    let depth = 0;
    while (pos < length) {
      const child = this.#childFor(node, ops.childKeyOf(key, pos), key, pos, length);
      if (child === undefined) break;
      const labelLength = ops.labelLength(child.label);
      const agreed = ops.agree(key, pos, child.label, length - pos);
      if (agreed === 0) break;
      path[depth++] = child;
      node = child;
      pos += agreed;
      if (agreed < labelLength) {
        offset = agreed;
        break;
      }
    }
    this.#pathLength = depth;
    this.#lastKey = key;
    const m = this.#match;
    m.matched = pos;
    m.length = length;
    m.node = node;
    m.offset = offset === 0 ? ops.labelLength(node.label) : offset;
    return m;
  }

  /**
   * Records that `key` was sent to `tenant`: continues from the last {@link RadixTree.match}
   * of the same key (call `match` first), touching the matched path for the tenant, splitting the
   * last edge where the match ended inside it, and adding the unmatched rest as a new leaf.
   *
   * Cost: O(path) plus a copy of the new suffix.
   */
  insert(key: K, tenant: string): void {
    if (typeof tenant !== 'string' || tenant.length === 0)
      throw invalidArgument('tenant must be a non-empty string');
    if (key !== this.#lastKey) this.match(key);
    const m = this.#match;
    if (m.length === 0) {
      this.#lastKey = undefined;
      return; // nothing usable (a token key shorter than a page): no entry, no tenant
    }
    const id = this.#idFor(tenant);
    const ops = this.#ops;
    const time = ++this.#clock;
    const path = this.#path;
    let depth = this.#pathLength;
    let end = m.node;
    if (depth > 0 && m.offset < ops.labelLength(end.label)) {
      end = this.#split(end, m.offset);
      path[depth - 1] = end;
    }
    const leaves = this.#leaves[id]!;
    for (let i = 0; i < depth; i++) this.#touch(path[i]!, id, time);
    if (m.matched < m.length) {
      const leaf = new TreeNode(ops.copy(key, m.matched, m.length), end);
      this.#attach(end, leaf);
      this.#nodes++;
      this.#touch(leaf, id, time);
      path[depth++] = leaf;
      end = leaf;
    }
    // The tenant's leaves: the end of this key, unless it already leads further for the tenant.
    for (let i = 0; i < depth - 1; i++) leaves.delete(path[i]!);
    if (end !== this.#root && !this.#hasChildWith(end, id)) leaves.add(end);
    this.#lastKey = undefined;
  }

  /**
   * Evicts the tenant's least recently used leaves until its size is at most `max`, leaf-first:
   * a node is evicted for a tenant only once no deeper node holds the tenant.
   *
   * @returns units evicted.
   */
  evict(tenant: string, max: number): number {
    this.#lastKey = undefined; // nodes of the last match may go
    const id = this.#ids.get(tenant);
    if (id === undefined || this.#sizes[id]! <= max) return 0;
    const leaves = this.#leaves[id]!;
    const heap = new LeafHeap<L>(id);
    for (const leaf of leaves) heap.push(leaf);
    const before = this.#sizes[id]!;
    while (this.#sizes[id]! > max) {
      const leaf = heap.pop();
      if (leaf === undefined) break;
      const parent = this.#drop(leaf, id);
      if (
        parent !== undefined &&
        parent !== this.#root &&
        parent.tenants.has(id) &&
        !this.#hasChildWith(parent, id)
      ) {
        leaves.add(parent);
        heap.push(parent);
      }
    }
    this.#retireIfEmpty(id);
    return before - (this.#sizes[id] ?? 0);
  }

  /**
   * Forgets what `tenant` was sent at or before logical time `time` (a {@link RadixTree.clock}
   * read earlier), keeping everything touched for it since: removes the tenant from exactly the
   * nodes whose stamp for it is at most `time`, leaf-first like {@link RadixTree.evict}. An
   * insert stamps a whole path at once, so a node is never older than a descendant holding the
   * same tenant: a leaf newer than `time` keeps its ancestors, and an ancestor emptied of newer
   * descendants is reached once they are gone.
   *
   * Cost: O(the tenant's leaves) to find the old ones, plus O(children) per node removed; no
   * sort (every node at or before `time` goes, in any order). Other tenants are untouched.
   *
   * @returns units forgotten.
   */
  forgetBefore(tenant: string, time: number): number {
    this.#lastKey = undefined; // nodes of the last match may go
    const id = this.#ids.get(tenant);
    if (id === undefined) return 0;
    const leaves = this.#leaves[id]!;
    const old: TreeNode<L>[] = [];
    for (const leaf of leaves) if (leaf.tenants.get(id)! <= time) old.push(leaf);
    if (old.length === 0) return 0;
    const before = this.#sizes[id]!;
    for (let node = old.pop(); node !== undefined; node = old.pop()) {
      const parent = this.#drop(node, id);
      if (
        parent === undefined ||
        parent === this.#root ||
        !parent.tenants.has(id) ||
        this.#hasChildWith(parent, id)
      )
        continue;
      // The parent is the tenant's leaf now: old, it goes too; newer, it stays as a leaf.
      if (parent.tenants.get(id)! <= time) old.push(parent);
      else leaves.add(parent);
    }
    this.#retireIfEmpty(id);
    return before - (this.#sizes[id] ?? 0);
  }

  /** Evicts every tenant down to `max`. @returns units evicted. */
  evictAll(max: number): number {
    return this.#evictEach(() => max);
  }

  /**
   * Evicts every tenant down to `floor(ratio × its size)` (0 ≤ ratio ≤ 1), least recently used
   * leaves first, so the tree's {@link RadixTree.size} shrinks by at least `1 − ratio` of itself.
   * Cost: as {@link RadixTree.evict} for every tenant.
   *
   * @returns units evicted.
   */
  shrink(ratio: number): number {
    const keep = ratio > 0 ? Math.min(ratio, 1) : 0;
    return this.#evictEach((size) => Math.floor(size * keep));
  }

  /**
   * Evicts each tenant (of a copy of the list: eviction may retire tenants) down to
   * `bound(its size)`, the size read just before its turn. @returns units evicted.
   */
  #evictEach(bound: (size: number) => number): number {
    let evicted = 0;
    for (const [tenant, id] of [...this.#ids]) {
      evicted += this.evict(tenant, bound(this.#sizes[id]!));
    }
    return evicted;
  }

  /**
   * Removes every entry of `tenant` (a worker that left): no node names it afterwards.
   *
   * @returns units removed.
   */
  removeTenant(tenant: string): number {
    this.#lastKey = undefined; // nodes of the last match may go
    const id = this.#ids.get(tenant);
    if (id === undefined) return 0;
    const before = this.#sizes[id]!;
    for (const leaf of [...this.#leaves[id]!]) {
      let node: TreeNode<L> | undefined = leaf;
      while (node !== undefined && node !== this.#root && node.tenants.has(id)) {
        node = this.#drop(node, id);
      }
    }
    this.#retire(id);
    return before;
  }

  /** Per-tenant sizes and leaf counts. O(tenants). */
  tenantStats(): TenantTreeStats[] {
    return [...this.#ids].map(([tenant, id]) => ({
      tenant,
      size: this.#sizes[id]!,
      leaves: this.#leaves[id]!.size,
    }));
  }

  /** Forgets everything. */
  clear(): void {
    this.#root.children = undefined;
    this.#root.tenants.clear();
    this.#ids.clear();
    this.#names.length = 0;
    this.#free.length = 0;
    this.#sizes.length = 0;
    this.#leaves.length = 0;
    this.#nodes = 1;
    this.#size = 0;
    this.#pathLength = 0;
    this.#lastKey = undefined;
  }

  #childFor(
    node: TreeNode<L>,
    childKey: number,
    key: K,
    pos: number,
    length: number,
  ): TreeNode<L> | undefined {
    let child = node.children?.get(childKey);
    // Token pages that share a first token chain as siblings: take the one that agrees.
    if (child !== undefined && child.next !== undefined) {
      while (child !== undefined && this.#ops.agree(key, pos, child.label, length - pos) === 0)
        child = child.next;
    }
    return child;
  }

  #attach(parent: TreeNode<L>, child: TreeNode<L>): void {
    const key = this.#ops.childKeyOfLabel(child.label);
    if (parent.children === undefined) parent.children = new Map();
    const first = parent.children.get(key);
    child.next = first;
    child.parent = parent;
    parent.children.set(key, child);
  }

  #detach(child: TreeNode<L>): void {
    const parent = child.parent;
    if (parent === undefined || parent.children === undefined) return;
    const key = this.#ops.childKeyOfLabel(child.label);
    let node = parent.children.get(key);
    if (node === child) {
      if (child.next === undefined) parent.children.delete(key);
      else parent.children.set(key, child.next);
    } else {
      while (node !== undefined && node.next !== child) node = node.next;
      if (node !== undefined) node.next = child.next;
    }
    if (parent.children.size === 0) parent.children = undefined;
    child.parent = undefined;
    child.next = undefined;
  }

  /** Splits `node` at `offset`: a new parent takes the head of the label and the node's tenants. */
  #split(node: TreeNode<L>, offset: number): TreeNode<L> {
    const ops = this.#ops;
    const parent = node.parent!;
    this.#detach(node);
    const head = new TreeNode(ops.cut(node.label, 0, offset), parent);
    for (const [id, time] of node.tenants) head.tenants.set(id, time);
    node.label = ops.cut(node.label, offset, ops.labelLength(node.label));
    this.#attach(parent, head);
    this.#attach(head, node);
    this.#nodes++;
    return head;
  }

  #touch(node: TreeNode<L>, id: number, time: number): void {
    if (!node.tenants.has(id)) {
      const length = this.#ops.labelLength(node.label);
      this.#sizes[id]! += length;
      this.#size += length;
    }
    node.tenants.set(id, time);
  }

  #hasChildWith(node: TreeNode<L>, id: number): boolean {
    if (node.children === undefined) return false;
    for (let child of node.children.values()) {
      for (; child !== undefined; child = child.next!) if (child.tenants.has(id)) return true;
    }
    return false;
  }

  /** Removes the tenant from `node` (and the node, once nobody holds it). @returns its parent. */
  #drop(node: TreeNode<L>, id: number): TreeNode<L> | undefined {
    const parent = node.parent;
    if (node.tenants.delete(id)) {
      const length = this.#ops.labelLength(node.label);
      this.#sizes[id]! -= length;
      this.#size -= length;
    }
    this.#leaves[id]!.delete(node);
    // A node nobody holds and nothing hangs from goes, and so may its emptied ancestors.
    let empty: TreeNode<L> | undefined = node;
    while (
      empty !== undefined &&
      empty !== this.#root &&
      empty.tenants.size === 0 &&
      empty.children === undefined
    ) {
      const up: TreeNode<L> | undefined = empty.parent;
      this.#detach(empty);
      this.#nodes--;
      empty = up;
    }
    return parent;
  }

  #idFor(tenant: string): number {
    let id = this.#ids.get(tenant);
    if (id === undefined) {
      if (typeof tenant !== 'string' || tenant.length === 0)
        throw invalidArgument('tenant must be a non-empty string');
      id = this.#free.pop() ?? this.#names.length;
      this.#ids.set(tenant, id);
      this.#names[id] = tenant;
      this.#sizes[id] = 0;
      this.#leaves[id] = new Set();
    }
    return id;
  }

  #retireIfEmpty(id: number): void {
    if (this.#sizes[id] === 0 && this.#leaves[id]!.size === 0) this.#retire(id);
  }

  #retire(id: number): void {
    const name = this.#names[id];
    if (name !== undefined) this.#ids.delete(name);
    this.#names[id] = undefined;
    this.#size -= this.#sizes[id] ?? 0;
    this.#sizes[id] = 0;
    this.#leaves[id] = undefined;
    this.#free.push(id);
  }
}

/** A binary min-heap of a tenant's leaves by last use (oldest first). */
class LeafHeap<L> {
  readonly #items: TreeNode<L>[] = [];
  readonly #id: number;

  constructor(id: number) {
    this.#id = id;
  }

  #time(node: TreeNode<L>): number {
    return node.tenants.get(this.#id) ?? 0;
  }

  push(node: TreeNode<L>): void {
    const items = this.#items;
    items.push(node);
    let i = items.length - 1;
    while (i > 0) {
      const up = (i - 1) >> 1;
      if (this.#time(items[up]!) <= this.#time(items[i]!)) break;
      [items[up], items[i]] = [items[i]!, items[up]!];
      i = up;
    }
  }

  pop(): TreeNode<L> | undefined {
    const items = this.#items;
    const top = items[0];
    const last = items.pop();
    if (items.length > 0 && last !== undefined) {
      items[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < items.length && this.#time(items[l]!) < this.#time(items[m]!)) m = l;
        if (r < items.length && this.#time(items[r]!) < this.#time(items[m]!)) m = r;
        if (m === i) break;
        [items[m], items[i]] = [items[i]!, items[m]!];
        i = m;
      }
    }
    return top;
  }
}
