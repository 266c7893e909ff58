/**
 * The properties of the approximate radix tree, for each key kind (the `radix-tree-*.test.ts`
 * files run one kind each, so the kinds run in parallel): tenant sizes and the tree's
 * total size, eviction bounds (`evict`, `evictAll`, `shrink`), matches against a brute-force
 * model, match-and-insert, tenant removal, forgetting a tenant's entries up to a logical time
 * (`forgetBefore`), and the structural invariants after every operation of random interleavings.
 *
 * Keys come from a small pool and are cut and extended from it, over tiny alphabets, so prefixes
 * are shared, token pages collide on their first token (sibling chains), pages are left partial,
 * and text keys contain surrogate pairs, lone surrogates and pairs cut in half.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RadixTree, type TreeNode } from '../../src/cache/radix-tree.js';
import { TEXT_KEYS, tokenKeys } from '../../src/cache/tree-keys.js';
import { runs } from '../helpers/fc-settings.js';

const PAGE = 4;
const TENANTS = ['A', 'B', 'C', 'D'] as const;

/** What the properties need to know about a key kind, written independently of `src`. */
interface Kind<K, L> {
  readonly name: string;
  make(): RadixTree<K, L>;
  readonly key: fc.Arbitrary<K>;
  /** Units of `key` the tree may use. */
  usable(key: K): number;
  /** Longest common prefix in the tree's units (whole pages; whole code points). */
  common(a: K, b: K): number;
  /** Whether a match may end at `n` units of `key` (a page boundary; not inside a pair). */
  boundary(key: K, n: number): boolean;
  /** The first `n` units of `key` followed by `extra`. */
  derive(key: K, n: number, extra: K): K;
  /** The empty key, and a key's raw length (code units; tokens). */
  readonly empty: K;
  lengthOf(key: K): number;
  labelLength(label: L): number;
  /** The map key a label is filed under in its parent's children. */
  childKey(label: L): number;
  /** A label's first unit of matching, to tell siblings apart. */
  firstUnit(label: L): string;
  /** Kind-specific label checks (page multiples). */
  checkLabel(label: L): void;
}

// ---------------------------------------------------------------------------------------------
// Key kinds
// ---------------------------------------------------------------------------------------------

function tokenOf(value: number): number {
  return Number.isInteger(value) && value >= 0 && value <= 0xffff_ffff ? value : 0;
}

const tokenArb = fc.oneof(
  { arbitrary: fc.constantFrom(0, 1), weight: 12 },
  { arbitrary: fc.constant(2), weight: 3 },
  // Not unsigned 32-bit integers: the tree reads them as token 0.
  { arbitrary: fc.constantFrom(-1, 1.5, Number.NaN, 2 ** 32), weight: 1 },
);

export const TOKENS: Kind<ArrayLike<number>, Uint32Array> = {
  name: `tokens (page ${PAGE})`,
  make: () => new RadixTree(tokenKeys(PAGE), new Uint32Array(0)),
  key: fc.array(tokenArb, { maxLength: 18 }),
  usable: (key) => key.length - (key.length % PAGE),
  common(a, b) {
    const n = Math.min(a.length, b.length);
    let i = 0;
    while (i < n && tokenOf(a[i]!) === tokenOf(b[i]!)) i++;
    return i - (i % PAGE);
  },
  boundary: (_key, n) => n % PAGE === 0,
  derive: (key, n, extra) => [...Array.from(key).slice(0, n), ...Array.from(extra)],
  empty: [],
  lengthOf: (key) => key.length,
  labelLength: (label) => label.length,
  childKey: (label) => label[0]!,
  firstUnit: (label) => Array.from(label.subarray(0, PAGE)).join(','),
  checkLabel(label) {
    expect(label.length % PAGE, 'token label length is a multiple of the page size').toBe(0);
  },
};

const isHigh = (c: number): boolean => c >= 0xd800 && c <= 0xdbff;
const isLow = (c: number): boolean => c >= 0xdc00 && c <= 0xdfff;

/** Code-point-wise common prefix, in code units: a pair is one unit, a lone surrogate is one. */
function commonText(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n) {
    const ca = a.codePointAt(i)!;
    if (ca !== b.codePointAt(i)) break;
    i += ca > 0xffff ? 2 : 1;
  }
  return i;
}

function textKind(name: string, pieces: readonly string[]): Kind<string, string> {
  const piece = fc.oneof(
    { arbitrary: fc.constantFrom('a', 'b'), weight: 6 },
    { arbitrary: fc.constantFrom(...pieces), weight: 4 },
  );
  return {
    name,
    make: () => new RadixTree(TEXT_KEYS, ''),
    key: fc.array(piece, { maxLength: 10 }).map((p) => p.join('')),
    usable: (key) => key.length,
    common: commonText,
    boundary: (key, n) => !(n > 0 && isHigh(key.charCodeAt(n - 1)) && isLow(key.charCodeAt(n))),
    derive: (key, n, extra) => key.slice(0, n) + extra,
    empty: '',
    lengthOf: (key) => key.length,
    labelLength: (label) => label.length,
    childKey: (label) => label.codePointAt(0)!,
    firstUnit: (label) => String.fromCodePoint(label.codePointAt(0)!),
    checkLabel() {},
  };
}

/** Pairs, pairs sharing a high surrogate, lone highs and lows, a pair at the top of the range. */
export const TEXT = textKind('text (surrogate pairs and lone surrogates)', [
  '\u{1F600}',
  '\u{1F601}',
  '\uD83D',
  '\uDE00',
  '\u{10FFFF}',
  'é',
]);
/** The same with BMP characters only: isolates surrogate handling from everything else. */
export const BMP = textKind('text (BMP only)', ['c', 'é', '中']);

// ---------------------------------------------------------------------------------------------
// Invariants
// ---------------------------------------------------------------------------------------------

/** Every node below the root, in depth-first order (iterative: deep trees stay safe). */
function nodesOf<L>(root: TreeNode<L>): TreeNode<L>[] {
  const out: TreeNode<L>[] = [];
  const stack: TreeNode<L>[] = [root];
  while (stack.length > 0) {
    const node = stack.pop()!;
    if (node !== root) out.push(node);
    for (const first of node.children?.values() ?? []) {
      for (let c: TreeNode<L> | undefined = first; c !== undefined; c = c.next) stack.push(c);
    }
  }
  return out;
}

function childrenOf<L>(node: TreeNode<L>): TreeNode<L>[] {
  const out: TreeNode<L>[] = [];
  for (const first of node.children?.values() ?? []) {
    for (let c: TreeNode<L> | undefined = first; c !== undefined; c = c.next) out.push(c);
  }
  return out;
}

/**
 * Recounts the tree from `tree.root` and checks it against the tree's own figures:
 * sizes (a), structure, links, tenant inheritance, node count, leaves and tenant ids.
 */
function checkInvariants<K, L>(tree: RadixTree<K, L>, kind: Kind<K, L>): void {
  const root = tree.root;
  expect(root.parent, 'the root has no parent').toBeUndefined();
  expect(root.tenants.size, 'the root names no tenant').toBe(0);
  expect(kind.labelLength(root.label), 'the root label is empty').toBe(0);
  const sizes = new Map<number, number>();
  const leaves = new Map<number, number>();
  let count = 1;
  const stack: TreeNode<L>[] = [root];
  while (stack.length > 0) {
    const node = stack.pop()!;
    if (node.children !== undefined)
      expect(node.children.size, 'a children map is never left empty').toBeGreaterThan(0);
    const firsts = new Set<string>();
    for (const [key, first] of node.children ?? []) {
      for (let c: TreeNode<L> | undefined = first; c !== undefined; c = c.next) {
        count++;
        stack.push(c);
        expect(c.parent, 'a child points at its parent').toBe(node);
        expect(kind.childKey(c.label), 'a child is filed under its first unit').toBe(key);
        const unit = kind.firstUnit(c.label);
        expect(firsts.has(unit), `siblings differ in their first unit (${unit})`).toBe(false);
        firsts.add(unit);
        if (node !== root) {
          for (const id of c.tenants.keys())
            expect(node.tenants.has(id), 'a parent holds every tenant of its child').toBe(true);
        }
      }
    }
    if (node === root) continue;
    const length = kind.labelLength(node.label);
    expect(length, 'a non-root label is non-empty').toBeGreaterThan(0);
    kind.checkLabel(node.label);
    expect(
      node.tenants.size > 0 || node.children !== undefined,
      'no node but the root is tenant-less and child-less',
    ).toBe(true);
    const kids = childrenOf(node);
    for (const id of node.tenants.keys()) {
      const name = tree.nameOf(id);
      expect(name, `tenant id ${id} on a node has a name`).toBeDefined();
      expect(tree.idOf(name!), 'the name maps back to the same id').toBe(id);
      sizes.set(id, (sizes.get(id) ?? 0) + length);
      if (!kids.some((k) => k.tenants.has(id))) leaves.set(id, (leaves.get(id) ?? 0) + 1);
    }
  }
  expect(tree.nodeCount, 'nodeCount equals a recount').toBe(count);
  const stats = tree.tenantStats();
  expect(tree.tenantCount).toBe(stats.length);
  expect(tree.size, 'size is the sum of the tenant sizes').toBe(
    stats.reduce((sum, s) => sum + s.size, 0),
  );
  expect(tree.size === 0, 'size is 0 exactly when the tree is empty').toBe(count === 1);
  for (const s of stats) {
    const id = tree.idOf(s.tenant);
    expect(id, `${s.tenant} has an id`).toBeGreaterThanOrEqual(0);
    expect(s.size, `size of ${s.tenant} = sum of its labels`).toBe(sizes.get(id) ?? 0);
    expect(tree.sizeOf(s.tenant)).toBe(s.size);
    expect(s.leaves, `indexed leaves of ${s.tenant} = recount`).toBe(leaves.get(id) ?? 0);
  }
  for (const id of sizes.keys()) {
    const name = tree.nameOf(id)!;
    expect(
      stats.some((s) => s.tenant === name),
      `${name} is listed`,
    ).toBe(true);
  }
}

/** Text: a label never starts with the low half of a pair whose high half ends its parent. */
export function checkNoSplitPairs(tree: RadixTree<string, string>): void {
  for (const node of nodesOf(tree.root)) {
    const parent = node.parent!;
    if (parent === tree.root) continue;
    const split =
      isHigh(parent.label.charCodeAt(parent.label.length - 1)) && isLow(node.label.charCodeAt(0));
    expect(
      split,
      `no split inside a pair: ${JSON.stringify(parent.label)} | ${JSON.stringify(node.label)}`,
    ).toBe(false);
  }
}

// ---------------------------------------------------------------------------------------------
// Operations and the model
// ---------------------------------------------------------------------------------------------

type Op<K> =
  | { readonly op: 'route'; readonly key: K; readonly tenant: string }
  | { readonly op: 'insert'; readonly key: K; readonly tenant: string }
  | { readonly op: 'match'; readonly key: K }
  | { readonly op: 'evict'; readonly tenant: string; readonly max: number }
  | { readonly op: 'evictAll'; readonly max: number }
  | { readonly op: 'shrink'; readonly ratio: number }
  | { readonly op: 'remove'; readonly tenant: string }
  /** `forgetBefore(tenant, clock − back)`: `back` counts inserts back from the latest. */
  | { readonly op: 'forget'; readonly tenant: string; readonly back: number };

type OpName = Op<unknown>['op'];

/** A key drawn from the pool: the whole entry, or its first `cut` units then `extra`. */
interface KeyRef<K> {
  readonly from: number;
  readonly whole: boolean;
  readonly cut: number;
  readonly extended: boolean;
  readonly extra: K;
}

/**
 * Operation lists (resolved against a pool of keys, so the reported counterexample shows the
 * real keys) with the given operation weights.
 */
export function opsArb<K, L>(
  kind: Kind<K, L>,
  weights: Partial<Record<OpName, number>>,
  maxLength = 40,
): fc.Arbitrary<Op<K>[]> {
  const ref: fc.Arbitrary<KeyRef<K>> = fc.record({
    from: fc.nat(),
    whole: fc.boolean(),
    cut: fc.nat(),
    extended: fc.boolean(),
    extra: kind.key,
  });
  const tenant = fc.constantFrom(...TENANTS);
  const max = fc.oneof(fc.constant(0), fc.nat({ max: 24 }));
  type Raw =
    | { op: 'route' | 'insert'; ref: KeyRef<K>; tenant: string }
    | { op: 'match'; ref: KeyRef<K> }
    | { op: 'evict'; tenant: string; max: number }
    | { op: 'evictAll'; max: number }
    | { op: 'shrink'; ratio: number }
    | { op: 'remove'; tenant: string }
    | { op: 'forget'; tenant: string; back: number };
  const choices: fc.WeightedArbitrary<Raw>[] = [];
  const add = (name: OpName, arb: fc.Arbitrary<Raw>): void => {
    const weight = weights[name] ?? 0;
    if (weight > 0) choices.push({ arbitrary: arb, weight });
  };
  add('route', fc.record({ op: fc.constant('route' as const), ref, tenant }));
  add('insert', fc.record({ op: fc.constant('insert' as const), ref, tenant }));
  add('match', fc.record({ op: fc.constant('match' as const), ref }));
  add('evict', fc.record({ op: fc.constant('evict' as const), tenant, max }));
  add('evictAll', fc.record({ op: fc.constant('evictAll' as const), max }));
  add(
    'shrink',
    fc.record({
      op: fc.constant('shrink' as const),
      ratio: fc.oneof(fc.constantFrom(0, 1), fc.double({ min: 0, max: 1, noNaN: true })),
    }),
  );
  add('remove', fc.record({ op: fc.constant('remove' as const), tenant }));
  add(
    'forget',
    fc.record({
      op: fc.constant('forget' as const),
      tenant,
      back: fc.oneof(fc.constant(0), fc.nat({ max: 12 }), fc.constant(-1)),
    }),
  );
  return fc
    .tuple(
      fc.array(kind.key, { minLength: 1, maxLength: 4 }),
      fc.array(fc.oneof(...choices), { maxLength }),
    )
    .map(([pool, raws]) => {
      const resolve = (r: KeyRef<K>): K => {
        const base = pool[r.from % pool.length]!;
        if (r.whole) return base;
        const cut = r.cut % (kind.lengthOf(base) + 1);
        return kind.derive(base, cut, r.extended ? r.extra : kind.empty);
      };
      return raws.map((r): Op<K> => {
        switch (r.op) {
          case 'route':
          case 'insert':
            return { op: r.op, key: resolve(r.ref), tenant: r.tenant };
          case 'match':
            return { op: 'match', key: resolve(r.ref) };
          default:
            return r;
        }
      });
    });
}

/** Replays `ops` on a fresh tree, checking each operation's contract and every invariant. */
export function replay<K, L>(
  kind: Kind<K, L>,
  ops: readonly Op<K>[],
  extra: (tree: RadixTree<K, L>) => void = () => {},
): RadixTree<K, L> {
  const tree = kind.make();
  const inserted: K[] = [];
  let forgetful = false;
  for (const op of ops) {
    switch (op.op) {
      case 'route':
      case 'insert': {
        if (op.op === 'route') tree.match(op.key);
        const clock = tree.clock;
        tree.insert(op.key, op.tenant);
        expect(tree.clock, 'an insert with usable units ticks the clock once').toBe(
          kind.usable(op.key) > 0 ? clock + 1 : clock,
        );
        inserted.push(op.key);
        checkRouted(tree, kind, op.key, op.tenant);
        break;
      }
      case 'match':
        checkMatch(tree, kind, op.key, inserted, forgetful);
        break;
      case 'evict': {
        const before = sizesOf(tree);
        const lru = lruSnapshot(tree, op.tenant);
        const evicted = tree.evict(op.tenant, op.max);
        lru();
        const after = tree.sizeOf(op.tenant);
        expect(after, `evict(${op.tenant}, ${op.max}) bounds the tenant`).toBeLessThanOrEqual(
          op.max,
        );
        expect(evicted, 'evict returns the units evicted').toBe(
          (before.get(op.tenant) ?? 0) - after,
        );
        for (const [t, size] of before)
          if (t !== op.tenant) expect(tree.sizeOf(t), `evict leaves ${t} alone`).toBe(size);
        forgetful ||= evicted > 0;
        break;
      }
      case 'evictAll': {
        const before = sizesOf(tree);
        const lrus = [...before.keys()].map((t) => lruSnapshot(tree, t));
        const evicted = tree.evictAll(op.max);
        for (const lru of lrus) lru();
        let total = 0;
        for (const [t, size] of before) {
          expect(tree.sizeOf(t), `evictAll(${op.max}) bounds ${t}`).toBeLessThanOrEqual(op.max);
          total += size - tree.sizeOf(t);
        }
        expect(evicted, 'evictAll returns the units evicted').toBe(total);
        forgetful ||= evicted > 0;
        break;
      }
      case 'shrink': {
        const before = sizesOf(tree);
        const total = tree.size;
        const lrus = [...before.keys()].map((t) => lruSnapshot(tree, t));
        const evicted = tree.shrink(op.ratio);
        for (const lru of lrus) lru();
        for (const [t, size] of before) {
          expect(tree.sizeOf(t), `shrink(${op.ratio}) scales ${t}`).toBeLessThanOrEqual(
            Math.floor(size * op.ratio),
          );
        }
        expect(evicted, 'shrink returns the units evicted').toBe(total - tree.size);
        expect(tree.size).toBeLessThanOrEqual(total * op.ratio);
        forgetful ||= evicted > 0;
        break;
      }
      case 'remove': {
        const before = sizesOf(tree);
        const id = tree.idOf(op.tenant);
        const removed = tree.removeTenant(op.tenant);
        expect(removed, 'removeTenant returns the tenant size').toBe(before.get(op.tenant) ?? 0);
        expect(tree.sizeOf(op.tenant)).toBe(0);
        expect(tree.idOf(op.tenant)).toBe(-1);
        if (id >= 0) {
          for (const node of nodesOf(tree.root))
            expect(node.tenants.has(id), `no node names ${op.tenant} after removal`).toBe(false);
        }
        for (const [t, size] of before)
          if (t !== op.tenant) expect(tree.sizeOf(t), `removal leaves ${t} alone`).toBe(size);
        forgetful ||= removed > 0;
        break;
      }
      case 'forget': {
        const forgotten = checkForget(tree, op.tenant, tree.clock - op.back);
        forgetful ||= forgotten > 0;
        break;
      }
    }
    checkInvariants(tree, kind);
    extra(tree);
  }
  return tree;
}

/**
 * Eviction order, leaf-first and oldest-first: a node's tenant map holds the logical time of the
 * tenant's last use, so after an eviction every node dropped for the tenant must be no newer
 * than any leaf the tenant keeps. Take the snapshot before `evict`, call the result after.
 */
function lruSnapshot<K, L>(tree: RadixTree<K, L>, tenant: string): () => void {
  const id = tree.idOf(tenant);
  const held = new Map<TreeNode<L>, number>();
  for (const node of nodesOf(tree.root)) {
    const time = node.tenants.get(id);
    if (time !== undefined) held.set(node, time);
  }
  return () => {
    let newestDropped = Number.NEGATIVE_INFINITY;
    for (const [node, time] of held) {
      if (!node.tenants.has(id) || tree.idOf(tenant) !== id)
        newestDropped = Math.max(newestDropped, time);
    }
    if (tree.idOf(tenant) !== id) return;
    for (const node of nodesOf(tree.root)) {
      const time = node.tenants.get(id);
      if (time === undefined || childrenOf(node).some((c) => c.tenants.has(id))) continue;
      expect(
        time,
        `${tenant}: a kept leaf is no older than anything evicted`,
      ).toBeGreaterThanOrEqual(newestDropped);
    }
  };
}

/** Every tenant's stamps: tenant name → (node → logical time of its last use). */
function stampsOf<K, L>(tree: RadixTree<K, L>): Map<string, Map<TreeNode<L>, number>> {
  const stamps = new Map<string, Map<TreeNode<L>, number>>();
  for (const node of nodesOf(tree.root)) {
    for (const [id, time] of node.tenants) {
      const name = tree.nameOf(id)!;
      let held = stamps.get(name);
      if (held === undefined) stamps.set(name, (held = new Map()));
      held.set(node, time);
    }
  }
  return stamps;
}

/**
 * `forgetBefore(tenant, time)` removes the tenant from exactly the nodes it held stamped at or
 * before `time`, keeps every newer stamp as it was, and leaves the other tenants and the clock
 * alone. @returns units forgotten.
 */
function checkForget<K, L>(tree: RadixTree<K, L>, tenant: string, time: number): number {
  const before = stampsOf(tree);
  const sizes = sizesOf(tree);
  const clock = tree.clock;
  const forgotten = tree.forgetBefore(tenant, time);
  const after = stampsOf(tree);
  const kept = new Map([...(before.get(tenant) ?? [])].filter(([, t]) => t > time));
  expect(
    after.get(tenant) ?? new Map(),
    `${tenant} keeps exactly what is newer than ${time}`,
  ).toEqual(kept);
  expect(forgotten, 'forgetBefore returns the units forgotten').toBe(
    (sizes.get(tenant) ?? 0) - tree.sizeOf(tenant),
  );
  if (kept.size === 0) expect(tree.idOf(tenant), `${tenant} is retired once empty`).toBe(-1);
  for (const [t, held] of before) {
    if (t !== tenant) expect(after.get(t), `forgetBefore leaves ${t} alone`).toEqual(held);
  }
  expect(tree.clock, 'forgetBefore does not move the clock').toBe(clock);
  return forgotten;
}

function sizesOf<K, L>(tree: RadixTree<K, L>): Map<string, number> {
  return new Map(tree.tenantStats().map((s) => [s.tenant, s.size]));
}

/** (d): after inserting `key` for `tenant`, `key` matches fully and its node names the tenant. */
function checkRouted<K, L>(tree: RadixTree<K, L>, kind: Kind<K, L>, key: K, tenant: string): void {
  const usable = kind.usable(key);
  const m = tree.match(key);
  expect(m.length, 'match length is the usable length').toBe(usable);
  expect(m.matched, 'an inserted key matches fully').toBe(usable);
  if (usable === 0) return;
  expect(m.node.tenants.has(tree.idOf(tenant)), 'the match node names the tenant').toBe(true);
  expect(tree.sizeOf(tenant)).toBeGreaterThanOrEqual(usable);
}

/** (c): a match against the brute-force model. */
function checkMatch<K, L>(
  tree: RadixTree<K, L>,
  kind: Kind<K, L>,
  key: K,
  inserted: readonly K[],
  forgetful: boolean,
): void {
  const m = tree.match(key);
  const usable = kind.usable(key);
  const best = inserted.reduce((b, k) => Math.max(b, kind.common(key, k)), 0);
  expect(m.length).toBe(usable);
  expect(m.matched, 'never beyond the usable length').toBeLessThanOrEqual(usable);
  expect(m.matched, 'never beyond the longest inserted key sharing the prefix').toBeLessThanOrEqual(
    best,
  );
  expect(kind.boundary(key, m.matched), 'a match ends on a unit boundary').toBe(true);
  if (!forgetful) expect(m.matched, 'exactly the longest common prefix').toBe(best);
  if (m.matched > 0) {
    expect(m.node).not.toBe(tree.root);
    expect(m.offset).toBeGreaterThan(0);
    expect(m.offset).toBeLessThanOrEqual(kind.labelLength(m.node.label));
  } else {
    expect(m.node).toBe(tree.root);
  }
}

// ---------------------------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------------------------

export function properties<K, L>(kind: Kind<K, L>): void {
  describe(kind.name, () => {
    it('(a) each tenant size is the sum of the labels naming it', () => {
      fc.assert(
        fc.property(opsArb(kind, { route: 1 }), (ops) => {
          replay(kind, ops);
        }),
        runs(300, 2000),
      );
    });

    it('(b) evict, evictAll and shrink bound every tenant, evicting oldest leaves first', () => {
      fc.assert(
        fc.property(opsArb(kind, { route: 6, evict: 2, evictAll: 1, shrink: 1 }), (ops) => {
          replay(kind, ops);
        }),
        runs(300, 2000),
      );
    });

    it('(c) a match equals the longest common prefix with the inserted keys', () => {
      fc.assert(
        fc.property(opsArb(kind, { route: 3, match: 3 }), (ops) => {
          replay(kind, ops);
        }),
        runs(300, 2000),
      );
    });

    it('(c) with eviction and removal, a match never exceeds any inserted key', () => {
      fc.assert(
        fc.property(
          opsArb(kind, { route: 4, match: 4, evict: 1, evictAll: 1, remove: 1 }),
          (ops) => {
            replay(kind, ops);
          },
        ),
        runs(300, 2000),
      );
    });

    it('(d) after match-and-insert, the key matches fully and names the tenant', () => {
      fc.assert(
        fc.property(opsArb(kind, { route: 4, evict: 1 }), kind.key, (ops, key) => {
          const tree = replay(kind, ops);
          for (const tenant of TENANTS) {
            tree.match(key);
            tree.insert(key, tenant);
            checkRouted(tree, kind, key, tenant);
            checkInvariants(tree, kind);
          }
        }),
        runs(300, 2000),
      );
    });

    it('(e) removeTenant leaves no node naming the tenant', () => {
      fc.assert(
        fc.property(
          opsArb(kind, { route: 5, evict: 1, remove: 1 }),
          fc.constantFrom(...TENANTS),
          (ops, tenant) => {
            const tree = replay(kind, [...ops, { op: 'remove', tenant }]);
            for (const t of TENANTS) tree.removeTenant(t);
            expect(tree.nodeCount, 'removing every tenant empties the tree').toBe(1);
            expect(tree.tenantCount).toBe(0);
          },
        ),
        runs(300, 2000),
      );
    });

    it('(g) forgetBefore removes exactly the stamps at or before the time, leaf-first', () => {
      fc.assert(
        fc.property(
          opsArb(kind, { route: 6, insert: 1, evict: 1, forget: 2 }),
          fc.constantFrom(...TENANTS),
          fc.nat({ max: 40 }),
          (ops, tenant, back) => {
            const tree = replay(kind, ops);
            checkForget(tree, tenant, tree.clock - back);
            checkInvariants(tree, kind);
            // Forgetting up to the clock forgets everything the tenant held.
            checkForget(tree, tenant, tree.clock);
            expect(tree.sizeOf(tenant)).toBe(0);
            checkInvariants(tree, kind);
          },
        ),
        runs(300, 2000),
      );
    });

    it('(f) interleavings that match before each insert keep every invariant', () => {
      fc.assert(
        fc.property(
          opsArb(
            kind,
            { route: 6, match: 3, evict: 2, evictAll: 1, shrink: 1, remove: 1, forget: 1 },
            60,
          ),
          (ops) => {
            replay(kind, ops);
          },
        ),
        runs(300, 2000),
      );
    });

    it('(f) free interleavings (insert without its own match) keep every invariant', () => {
      fc.assert(
        fc.property(
          opsArb(
            kind,
            {
              route: 3,
              insert: 3,
              match: 3,
              evict: 2,
              evictAll: 1,
              shrink: 1,
              remove: 1,
              forget: 1,
            },
            60,
          ),
          (ops) => {
            replay(kind, ops);
          },
        ),
        runs(300, 2000),
      );
    });
  });
}
