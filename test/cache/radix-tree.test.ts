/**
 * Scenarios of the approximate radix tree: matching, page alignment, sibling chains,
 * leaf-first and oldest-first eviction, tenant removal, forgetting up to a logical time, surrogates,
 * memory ownership, `clear()`.
 */
import v8 from 'node:v8';
import vm from 'node:vm';
import { describe, expect, it } from 'vitest';
import { RadixTree, type TreeNode } from '../../src/cache/radix-tree.js';
import { MAX_KEY_UNITS, TEXT_KEYS, tokenKeys } from '../../src/cache/tree-keys.js';
import { FleetRouteError } from '../../src/index.js';

type TextTree = RadixTree<string, string>;
type TokenTree = RadixTree<ArrayLike<number>, Uint32Array>;

const textTree = (): TextTree => new RadixTree(TEXT_KEYS, '');
const tokenTree = (pageSize = 4): TokenTree =>
  new RadixTree(tokenKeys(pageSize), new Uint32Array(0));

/** What the cache-aware policy does per request: match, then insert for the chosen worker. */
function route<K, L>(tree: RadixTree<K, L>, key: K, tenant: string): void {
  tree.match(key);
  tree.insert(key, tenant);
}

/** Tenants holding the node a full match of `key` reaches (empty when it does not match fully). */
function holders<K, L>(tree: RadixTree<K, L>, key: K): string[] {
  const m = tree.match(key);
  if (m.matched !== m.length || m.length === 0) return [];
  return [...tree.holdersOf(m)].sort();
}

function matched<K, L>(tree: RadixTree<K, L>, key: K): number {
  return tree.match(key).matched;
}

function nodesOf<L>(root: TreeNode<L>): TreeNode<L>[] {
  const out: TreeNode<L>[] = [];
  const stack = [root];
  while (stack.length > 0) {
    const node = stack.pop()!;
    if (node !== root) out.push(node);
    for (const first of node.children?.values() ?? []) {
      for (let c: TreeNode<L> | undefined = first; c !== undefined; c = c.next) stack.push(c);
    }
  }
  return out;
}

/** A string with its own flat storage (not a slice or a rope of another string). */
function flat(text: string): string {
  return Buffer.from(text, 'latin1').toString('latin1');
}

/** `gc()` without `--expose-gc`: the flag can be set at run time and read from a new context. */
function exposeGc(): (() => void) | undefined {
  const existing = (globalThis as { gc?: () => void }).gc;
  if (existing !== undefined) return existing;
  try {
    v8.setFlagsFromString('--expose-gc');
    return vm.runInNewContext('gc') as () => void;
  } catch {
    return undefined;
  }
}

describe('RadixTree: matching text', () => {
  it('matches the same text twice in full, for the tenant it was routed to', () => {
    const tree = textTree();
    route(tree, 'You are a helpful assistant. Hello!', 'w1');
    const m = tree.match('You are a helpful assistant. Hello!');
    expect(m.matched).toBe(35);
    expect(m.length).toBe(35);
    expect(holders(tree, 'You are a helpful assistant. Hello!')).toEqual(['w1']);
  });

  it('matches a prefix of a routed text in full, ending inside the edge', () => {
    const tree = textTree();
    route(tree, 'system prompt: be brief. user: hi', 'w1');
    const m = tree.match('system prompt');
    expect(m.matched).toBe(13);
    expect(m.length).toBe(13);
    expect(m.offset).toBe(13);
    expect(tree.nameOf([...m.node.tenants.keys()][0]!)).toBe('w1');
  });

  it('matches a longer text only as far as what was routed', () => {
    const tree = textTree();
    route(tree, 'abc', 'w1');
    expect(tree.match('abcdef')).toMatchObject({ matched: 3, length: 6 });
    expect(matched(tree, 'abX')).toBe(2);
    expect(matched(tree, 'X')).toBe(0);
    expect(tree.match('X').node).toBe(tree.root);
  });

  it('splits a shared prefix: both tenants hold it, each holds its own suffix', () => {
    const tree = textTree();
    route(tree, 'shared-prefix/alpha', 'w1');
    route(tree, 'shared-prefix/beta', 'w2');
    expect(tree.nodeCount).toBe(4); // root, 'shared-prefix/', 'alpha', 'beta'
    expect(holders(tree, 'shared-prefix/')).toEqual(['w1', 'w2']);
    expect(holders(tree, 'shared-prefix/alpha')).toEqual(['w1']);
    expect(holders(tree, 'shared-prefix/beta')).toEqual(['w2']);
    expect(tree.sizeOf('w1')).toBe(19);
    expect(tree.sizeOf('w2')).toBe(18);
    expect(tree.tenantStats()).toEqual([
      { tenant: 'w1', size: 19, leaves: 1 },
      { tenant: 'w2', size: 18, leaves: 1 },
    ]);
  });

  it('a prefix inserted after a longer key becomes a node of its own, held by both', () => {
    const tree = textTree();
    route(tree, 'abcdef', 'w1');
    route(tree, 'abc', 'w2');
    expect(tree.nodeCount).toBe(3);
    expect(holders(tree, 'abc')).toEqual(['w1', 'w2']);
    expect(tree.sizeOf('w2')).toBe(3);
    expect(tree.tenantStats().find((s) => s.tenant === 'w2')!.leaves).toBe(1);
  });

  it('insert without its own match gives the same tree as match-then-insert', () => {
    const a = textTree();
    const b = textTree();
    for (const [key, tenant] of [
      ['hello world', 'w1'],
      ['hello there', 'w2'],
      ['help', 'w1'],
    ] as const) {
      route(a, key, tenant);
      b.insert(key, tenant);
    }
    expect(b.nodeCount).toBe(a.nodeCount);
    expect(b.tenantStats()).toEqual(a.tenantStats());
    for (const key of ['hello world', 'hello there', 'help', 'hel'])
      expect(holders(b, key)).toEqual(holders(a, key));
  });

  it('the empty text matches nothing and inserts nothing', () => {
    const tree = textTree();
    tree.insert('', 'w1');
    expect(tree.match('')).toMatchObject({ matched: 0, length: 0 });
    expect(tree.nodeCount).toBe(1);
    expect(tree.sizeOf('w1')).toBe(0);
  });

  it('rejects an empty tenant name without changing the tree', () => {
    const tree = textTree();
    route(tree, 'abc', 'w1');
    tree.match('abd');
    expect(() => tree.insert('abd', '')).toThrow(FleetRouteError);
    try {
      tree.insert('abd', '');
    } catch (error) {
      expect((error as FleetRouteError).code).toBe('INVALID_ARGUMENT');
    }
    expect(tree.nodeCount).toBe(2);
    expect(tree.tenantCount).toBe(1);
    expect(matched(tree, 'abd')).toBe(2);
  });

  it('uses at most MAX_KEY_UNITS characters of a huge prompt', () => {
    const tree = textTree();
    const huge = 'x'.repeat(MAX_KEY_UNITS + 100);
    route(tree, huge, 'w1');
    expect(tree.match(huge)).toMatchObject({ matched: MAX_KEY_UNITS, length: MAX_KEY_UNITS });
    expect(tree.sizeOf('w1')).toBe(MAX_KEY_UNITS);
  });

  it('a surrogate pair cut by the MAX_KEY_UNITS limit still matches its own key in full', () => {
    // The usable length ends between the two halves of a pair; the key must still match itself.
    const tree = textTree();
    const base = 'a'.repeat(MAX_KEY_UNITS - 1);
    const withPair = `${base}\u{1F600}`;
    route(tree, `${base}b`, 'w1');
    route(tree, withPair, 'w2');
    const m = tree.match(withPair);
    expect(m.matched).toBe(m.length);
    expect(holders(tree, withPair)).toContain('w2');
  });
});

describe('RadixTree: token pages', () => {
  it('keys shorter than one page match nothing and insert nothing', () => {
    const tree = tokenTree(4);
    tree.match([1, 2, 3]);
    tree.insert([1, 2, 3], 'w1');
    expect(tree.match([1, 2, 3])).toMatchObject({ matched: 0, length: 0 });
    expect(tree.nodeCount).toBe(1);
    expect(tree.sizeOf('w1')).toBe(0);
  });

  it('a key with nothing usable registers no tenant', () => {
    const tokens = tokenTree(4);
    route(tokens, [1, 2, 3], 'w1');
    expect(tokens.tenantCount).toBe(0);
    expect(tokens.tenantStats()).toEqual([]);
    const text = textTree();
    route(text, '', 'w1');
    expect(text.tenantCount).toBe(0);
  });

  it('a partial trailing page is neither stored nor matched', () => {
    const tree = tokenTree(4);
    route(tree, [1, 2, 3, 4, 5, 6], 'w1');
    expect(tree.sizeOf('w1')).toBe(4);
    expect(tree.match([1, 2, 3, 4, 5, 6])).toMatchObject({ matched: 4, length: 4 });
    expect(tree.match([1, 2, 3, 4, 5, 6, 7, 8])).toMatchObject({ matched: 4, length: 8 });
    expect(matched(tree, [1, 2, 3])).toBe(0);
    // Three of four tokens of the second page agree: still only the first page matches.
    route(tree, [1, 2, 3, 4, 5, 6, 7, 8], 'w1');
    expect(matched(tree, [1, 2, 3, 4, 5, 6, 7, 9])).toBe(4);
  });

  it('pages sharing a first token but differing later stay separate siblings', () => {
    const tree = tokenTree(4);
    const keys = [
      [1, 2, 3, 4],
      [1, 9, 9, 9],
      [1, 2, 3, 5],
    ];
    for (const [i, key] of keys.entries()) route(tree, key, `w${i}`);
    // One child key (token 1) at the root, chaining three siblings.
    expect(tree.root.children!.size).toBe(1);
    const chain: Uint32Array[] = [];
    for (let c = tree.root.children!.get(1); c !== undefined; c = c.next) chain.push(c.label);
    expect(chain.map((l) => [...l]).sort()).toEqual(keys.map((k) => [...k]).sort());
    expect(tree.nodeCount).toBe(4);
    keys.forEach((key, i) => {
      expect(matched(tree, key)).toBe(4);
      expect(holders(tree, key)).toEqual([`w${i}`]);
    });
    expect(matched(tree, [1, 9, 9, 8])).toBe(0);
    expect(matched(tree, [1, 2, 3, 5, 0, 0, 0, 0])).toBe(4);
  });

  it('sibling chains survive removal of a middle sibling', () => {
    const tree = tokenTree(2);
    route(tree, [7, 1], 'a');
    route(tree, [7, 2], 'b');
    route(tree, [7, 3], 'c');
    expect(tree.removeTenant('b')).toBe(2);
    expect(matched(tree, [7, 1])).toBe(2);
    expect(matched(tree, [7, 3])).toBe(2);
    expect(matched(tree, [7, 2])).toBe(0);
    expect(tree.nodeCount).toBe(3);
  });

  it('splits fall on page boundaries', () => {
    const tree = tokenTree(4);
    route(tree, [1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3], 'w1');
    route(tree, [1, 1, 1, 1, 2, 2, 9, 9], 'w2');
    for (const node of nodesOf(tree.root)) expect(node.label.length % 4).toBe(0);
    expect(matched(tree, [1, 1, 1, 1, 2, 2, 2, 2])).toBe(8);
    expect(tree.sizeOf('w2')).toBe(8);
  });

  it('reads token ids that are not unsigned 32-bit integers as 0', () => {
    const tree = tokenTree(4);
    route(tree, [-1, 1.5, Number.NaN, 2 ** 32], 'w1');
    expect(matched(tree, [0, 0, 0, 0])).toBe(4);
    expect(matched(tree, new Uint32Array([0, 0, 0, 0]))).toBe(4);
    expect(matched(tree, [0, 0, 0, 1])).toBe(0);
  });

  it('typed arrays and plain arrays of the same ids are the same key', () => {
    const tree = tokenTree(4);
    route(tree, new Uint32Array([5, 6, 7, 8, 9, 10, 11, 12]), 'w1');
    expect(matched(tree, [5, 6, 7, 8, 9, 10, 11, 12])).toBe(8);
    expect(matched(tree, new Int32Array([5, 6, 7, 8]))).toBe(4);
  });

  it('stores labels in memory of their own, not views of the caller array', () => {
    const tree = tokenTree(4);
    const key = new Uint32Array([1, 2, 3, 4, 5, 6, 7, 8]);
    route(tree, key, 'w1');
    key.fill(0);
    expect(matched(tree, [1, 2, 3, 4, 5, 6, 7, 8])).toBe(8);
    const leaf = nodesOf(tree.root)[0]!;
    expect(leaf.label.buffer).not.toBe(key.buffer);
    expect(leaf.label.buffer.byteLength).toBe(leaf.label.byteLength);
  });
});

describe('RadixTree: eviction', () => {
  it('evicts the least recently used branch first', () => {
    // Two branches under one shared prefix; alpha is routed again after beta, so beta is older.
    const tree = textTree();
    route(tree, 'prefix/alpha-0123456789', 'w1'); // t1
    route(tree, 'prefix/beta-0123456789', 'w1'); // t2
    route(tree, 'prefix/alpha-0123456789', 'w1'); // t3: alpha is fresh again
    const size = tree.sizeOf('w1'); // 7 + 16 + 15
    expect(size).toBe(38);
    const evicted = tree.evict('w1', size - 1);
    expect(evicted).toBe(15);
    expect(matched(tree, 'prefix/beta-0123456789')).toBe(7);
    expect(matched(tree, 'prefix/alpha-0123456789')).toBe(23);
  });

  it('evicts the other branch when the last-use order is the other way round', () => {
    const tree = textTree();
    route(tree, 'prefix/alpha-0123456789', 'w1'); // t1
    route(tree, 'prefix/beta-0123456789', 'w1'); // t2: alpha is older
    expect(tree.evict('w1', 37)).toBe(16);
    expect(matched(tree, 'prefix/alpha-0123456789')).toBe(7);
    expect(matched(tree, 'prefix/beta-0123456789')).toBe(22);
  });

  it('evicts leaf-first: a shared prefix goes only after every leaf below it', () => {
    const tree = textTree();
    route(tree, 'prefix/alpha-0123456789', 'w1');
    route(tree, 'prefix/beta-0123456789', 'w1');
    route(tree, 'other', 'w1'); // the newest leaf
    // 43 units; down to 30 takes the oldest leaf (alpha, 16), never the shared 'prefix/'.
    expect(tree.evict('w1', 30)).toBe(16);
    expect(matched(tree, 'prefix/alpha-0123456789')).toBe(7);
    expect(matched(tree, 'prefix/beta-0123456789')).toBe(22);
    // Now down to 5: both leaves, then the prefix once it became a leaf; 'other' is newest.
    expect(tree.evict('w1', 5)).toBe(22);
    expect(matched(tree, 'prefix/beta-0123456789')).toBe(0);
    expect(matched(tree, 'other')).toBe(5);
    expect(tree.nodeCount).toBe(2);
  });

  it('returns the units evicted, 0 under budget and for an unknown tenant', () => {
    const tree = tokenTree(2);
    route(tree, [1, 1, 2, 2, 3, 3], 'w1');
    route(tree, [1, 1, 4, 4], 'w1');
    expect(tree.sizeOf('w1')).toBe(8);
    expect(tree.evict('w1', 8)).toBe(0);
    expect(tree.evict('nobody', 0)).toBe(0);
    expect(tree.evict('w1', 7)).toBe(4);
    expect(tree.sizeOf('w1')).toBe(4);
    expect(tree.evict('w1', 0)).toBe(4);
    expect(tree.sizeOf('w1')).toBe(0);
    expect(tree.tenantCount).toBe(0);
    expect(tree.nodeCount).toBe(1);
  });

  it('evicting one tenant keeps the nodes other tenants hold', () => {
    const tree = textTree();
    route(tree, 'common prompt, question one', 'w1');
    route(tree, 'common prompt, question one', 'w2');
    route(tree, 'common prompt, question two', 'w1');
    expect(tree.evict('w1', 0)).toBe(27 + 3);
    expect(holders(tree, 'common prompt, question one')).toEqual(['w2']);
    expect(matched(tree, 'common prompt, question two')).toBe(24);
    expect(tree.sizeOf('w2')).toBe(27);
    expect(tree.tenantStats()).toEqual([{ tenant: 'w2', size: 27, leaves: 1 }]);
  });

  it('evictAll bounds every tenant and returns the sum evicted', () => {
    const tree = textTree();
    for (let i = 0; i < 10; i++) route(tree, `prompt ${i} for everyone`, `w${i % 3}`);
    const before = tree.tenantStats().reduce((s, t) => s + t.size, 0);
    const evicted = tree.evictAll(20);
    const after = tree.tenantStats().reduce((s, t) => s + t.size, 0);
    expect(evicted).toBe(before - after);
    for (const s of tree.tenantStats()) expect(s.size).toBeLessThanOrEqual(20);
  });

  it('size is the sum of the tenant sizes, shared labels counted once per tenant, and 0 when empty', () => {
    const tree = textTree();
    expect(tree.size).toBe(0);
    route(tree, 'shared prefix, then a', 'w1');
    route(tree, 'shared prefix, then b', 'w2');

    expect(tree.size).toBe(2 * 'shared prefix, then a'.length);
    tree.removeTenant('w1');
    tree.removeTenant('w2');
    expect(tree.size).toBe(0);
    expect(tree.nodeCount).toBe(1);
  });

  it('shrink(ratio) cuts every tenant to that share of its size, oldest leaves first', () => {
    const tree = textTree();
    const prompts = [0, 1, 2, 3].map((i) => `prompt ${i} `.repeat(5));
    for (const p of prompts) route(tree, p, 'w1');
    route(tree, prompts[0]!, 'w2');
    const w1 = tree.sizeOf('w1');
    const w2 = tree.sizeOf('w2');

    const evicted = tree.shrink(0.5);

    expect(tree.sizeOf('w1')).toBeLessThanOrEqual(Math.floor(w1 / 2));
    expect(tree.sizeOf('w2')).toBeLessThanOrEqual(Math.floor(w2 / 2));
    expect(evicted).toBe(w1 + w2 - tree.size);
    expect(holders(tree, prompts[3]!)).toEqual(['w1']); // the newest of w1 stays
    const rest = tree.size;
    expect(tree.shrink(0)).toBe(rest);
    expect(tree.nodeCount).toBe(1);
  });

  it('a tenant evicted to nothing can come back', () => {
    const tree = textTree();
    route(tree, 'abc', 'w1');
    tree.evict('w1', 0);
    route(tree, 'abd', 'w1');
    expect(holders(tree, 'abd')).toEqual(['w1']);
    expect(tree.sizeOf('w1')).toBe(3);
  });
});

describe('RadixTree: a match followed by a mutation', () => {
  // `insert` continues from the last `match` of the same key; a removal in between must not
  // leave it continuing from nodes that are gone.
  it('insert after evict continues from a fresh descent', () => {
    const tree = textTree();
    route(tree, 'abcdef', 'w1');
    tree.match('abcdef');
    tree.evict('w1', 0);
    tree.insert('abcdef', 'w2');
    expect(matched(tree, 'abcdef')).toBe(6);
    expect(tree.sizeOf('w2')).toBe(6);
    expect(tree.nodeCount).toBe(2);
  });

  it('insert after removeTenant continues from a fresh descent', () => {
    // The same array object throughout: a token key is recognised by identity.
    const tree = tokenTree(4);
    const key = [1, 2, 3, 4, 5, 6, 7, 8];
    route(tree, key, 'w1');
    tree.match(key);
    tree.removeTenant('w1');
    tree.insert(key, 'w2');
    expect(matched(tree, [1, 2, 3, 4, 5, 6, 7, 8])).toBe(8);
    expect(tree.sizeOf('w2')).toBe(8);
    expect(tree.nodeCount).toBe(2);
  });

  it('insert after an eviction that removed the matched edge does not throw', () => {
    const tree = textTree();
    route(tree, 'abcdef', 'w1');
    tree.match('abcxyz'); // ends inside the edge 'abcdef'
    tree.evict('w1', 0); // the edge is gone
    expect(() => tree.insert('abcxyz', 'w2')).not.toThrow();
    expect(matched(tree, 'abcxyz')).toBe(6);
  });
});

describe('RadixTree: removeTenant', () => {
  it('returns 0 for an unknown tenant and changes nothing', () => {
    const tree = textTree();
    route(tree, 'abc', 'w1');
    expect(tree.removeTenant('nobody')).toBe(0);
    expect(tree.sizeOf('w1')).toBe(3);
    expect(tree.nodeCount).toBe(2);
  });

  it('removes every entry of the tenant and returns its size, keeping the others', () => {
    const tree = textTree();
    route(tree, 'shared system prompt: A', 'w1');
    route(tree, 'shared system prompt: B', 'w2');
    route(tree, 'shared system prompt: C', 'w1');
    route(tree, 'w1 only', 'w1');
    const id = tree.idOf('w1');
    expect(tree.removeTenant('w1')).toBe(22 + 1 + 1 + 7);
    expect(tree.sizeOf('w1')).toBe(0);
    expect(tree.idOf('w1')).toBe(-1);
    for (const node of nodesOf(tree.root)) expect(node.tenants.has(id)).toBe(false);
    expect(holders(tree, 'shared system prompt: B')).toEqual(['w2']);
    expect(matched(tree, 'shared system prompt: A')).toBe(22);
    expect(matched(tree, 'w1 only')).toBe(0);
    expect(tree.nodeCount).toBe(3);
    expect(tree.removeTenant('w1')).toBe(0);
  });

  it("a new tenant reusing a removed tenant's slot starts empty", () => {
    const tree = textTree();
    route(tree, 'abc', 'w1');
    route(tree, 'xyz', 'w2');
    tree.removeTenant('w1');
    route(tree, 'xy', 'w3');
    expect(tree.sizeOf('w3')).toBe(2);
    expect(holders(tree, 'abc')).toEqual([]);
    expect(holders(tree, 'xyz')).toEqual(['w2']);
    expect(holders(tree, 'xy')).toEqual(['w2', 'w3']);
  });
});

describe('RadixTree: forgetBefore (a restarted engine, seen late)', () => {
  it('the clock counts inserts with usable units and survives clear()', () => {
    const tree = tokenTree(4);
    expect(tree.clock).toBe(0);
    route(tree, [1, 2, 3, 4], 'w1');
    route(tree, [1, 2], 'w1'); // shorter than a page: no entry, no tick
    route(
      tree,
      'abcd'.split('').map((c) => c.charCodeAt(0)),
      'w2',
    );
    expect(tree.clock).toBe(2);
    tree.clear();
    expect(tree.clock).toBe(2);
  });

  it('forgets what the tenant was sent up to the time, keeps what it was sent since', () => {
    const tree = textTree();
    route(tree, 'system prompt/old question', 'w1'); // t1
    route(tree, 'system prompt/old question', 'w2'); // t2
    const mark = tree.clock;
    route(tree, 'other prompt/new question', 'w1'); // t3

    expect(tree.forgetBefore('w1', mark)).toBe(26);

    expect(holders(tree, 'system prompt/old question')).toEqual(['w2']);
    expect(holders(tree, 'other prompt/new question')).toEqual(['w1']);
    expect(tree.sizeOf('w1')).toBe(25);
    expect(tree.tenantStats().find((s) => s.tenant === 'w1')?.leaves).toBe(1);
  });

  it('a shared prefix touched since stays, and becomes the tenant’s leaf', () => {
    const tree = textTree();
    route(tree, 'prefix/alpha', 'w1'); // t1: 'prefix/alpha'
    route(tree, 'prefix/beta', 'w1'); // t2: splits at 'prefix/'
    const mark = tree.clock;
    route(tree, 'prefix/', 'w1'); // t3: only the shared prefix is new

    expect(tree.forgetBefore('w1', mark)).toBe(5 + 4);

    expect(matched(tree, 'prefix/alpha')).toBe(7);
    expect(holders(tree, 'prefix/')).toEqual(['w1']);
    expect(tree.tenantStats()).toEqual([{ tenant: 'w1', size: 7, leaves: 1 }]);
    // Its leaf is known: evicting it empties the tenant.
    expect(tree.evict('w1', 0)).toBe(7);
    expect(tree.nodeCount).toBe(1);
  });

  it('forgets nothing before the tenant’s oldest entry, everything at the clock, 0 for a stranger', () => {
    const tree = textTree();
    route(tree, 'abc', 'w1');
    route(tree, 'xyz', 'w2');
    expect(tree.forgetBefore('w1', 0)).toBe(0);
    expect(tree.forgetBefore('nobody', tree.clock)).toBe(0);
    expect(tree.forgetBefore('w1', tree.clock)).toBe(3);
    expect(tree.idOf('w1')).toBe(-1);
    expect(holders(tree, 'xyz')).toEqual(['w2']);
    expect(tree.nodeCount).toBe(2);
  });
});

describe('RadixTree: surrogates', () => {
  const PAIR_00 = '\u{1F600}'; // \uD83D\uDE00
  const PAIR_01 = '\u{1F601}'; // \uD83D\uDE01, same high surrogate
  const HIGH = '\uD83D';
  const LOW = '\uDE00';

  it('lone surrogates and pairs sharing a high surrogate do not corrupt each other', () => {
    const tree = textTree();
    const keys = [
      `x${PAIR_00}tail`,
      `x${HIGH}`,
      `x${PAIR_01}`,
      `x${HIGH}y`,
      `x${LOW}`,
      `x${PAIR_00}`,
      `${LOW}${HIGH}`,
      `x${HIGH}${HIGH}`,
    ];
    for (const [i, key] of keys.entries()) route(tree, key, `w${i}`);
    keys.forEach((key, i) => {
      expect(tree.match(key).matched, JSON.stringify(key)).toBe(key.length);
      expect(holders(tree, key), JSON.stringify(key)).toContain(`w${i}`);
    });
    // Re-routing every key in reverse order changes nothing that was already there.
    const nodes = tree.nodeCount;
    for (let i = keys.length - 1; i >= 0; i--) route(tree, keys[i]!, `w${i}`);
    expect(tree.nodeCount).toBe(nodes);
  });

  it('a pair is one unit of matching: never half of it', () => {
    const tree = textTree();
    route(tree, `a${PAIR_00}b`, 'w1');
    expect(matched(tree, `a${PAIR_01}`)).toBe(1);
    expect(matched(tree, `a${HIGH}`)).toBe(1);
    expect(matched(tree, `a${PAIR_00}`)).toBe(3);
  });

  it('a key ending in a lone high surrogate is not half-matched by a pair', () => {
    // `a\uD83D` shares one character with `a😀`, not one and a half.
    const tree = textTree();
    route(tree, `a${HIGH}`, 'w1');
    expect(matched(tree, `a${PAIR_00}`)).toBe(1);
    route(tree, `a${HIGH}b`, 'w2');
    expect(matched(tree, `a${PAIR_01}`)).toBe(1);
  });

  it('never splits an edge between the two halves of a pair', () => {
    const tree = textTree();
    route(tree, `a${HIGH}`, 'w1');
    route(tree, `a${PAIR_00}`, 'w2');
    route(tree, `b${HIGH}c`, 'w1');
    route(tree, `b${PAIR_00}`, 'w2');
    for (const node of nodesOf(tree.root)) {
      const parent = node.parent!;
      if (parent === tree.root) continue;
      const last = parent.label.charCodeAt(parent.label.length - 1);
      const first = node.label.charCodeAt(0);
      expect(
        last >= 0xd800 && last <= 0xdbff && first >= 0xdc00 && first <= 0xdfff,
        `${JSON.stringify(parent.label)} | ${JSON.stringify(node.label)}`,
      ).toBe(false);
    }
  });
});

describe('RadixTree: clear', () => {
  it('forgets every node, tenant and size, and takes new keys afterwards', () => {
    const tree = tokenTree(2);
    route(tree, [1, 2, 3, 4], 'w1');
    route(tree, [1, 2, 5, 6], 'w2');
    tree.match([1, 2, 3, 4]);
    tree.clear();
    expect(tree.nodeCount).toBe(1);
    expect(tree.tenantCount).toBe(0);
    expect(tree.tenantStats()).toEqual([]);
    expect(tree.sizeOf('w1')).toBe(0);
    expect(tree.root.children).toBeUndefined();
    expect(tree.match([1, 2, 3, 4])).toMatchObject({ matched: 0, length: 4 });
    // `insert` right after `clear` must not continue from a match made before it.
    tree.match([1, 2, 3, 4]);
    tree.clear();
    tree.insert([1, 2, 3, 4], 'w3');
    expect(holders(tree, [1, 2, 3, 4])).toEqual(['w3']);
    expect(tree.sizeOf('w3')).toBe(4);
    expect(tree.nodeCount).toBe(2);
  });
});

describe('RadixTree: memory', () => {
  const gc = exposeGc();

  it.skipIf(gc === undefined)('labels do not keep the routed prompts alive', () => {
    // 40 prompts of 256 KiB share all but their last 64 characters. The tree needs one copy of
    // the prefix (256 KiB) and 40 short suffix labels; if a suffix label were a slice of its
    // prompt, every prompt (10 MiB in all) would stay reachable through it.
    const PROMPT = 256 * 1024;
    const COUNT = 40;
    const prefix = 'p'.repeat(PROMPT - 64);
    gc!();
    const before = process.memoryUsage().heapUsed;
    const tree = textTree();
    for (let i = 0; i < COUNT; i++) {
      // Distinct first characters: one prefix node and one 64-character leaf per prompt.
      const suffix = String.fromCharCode(0x41 + i) + 's'.repeat(63);
      route(tree, flat(prefix + suffix), `w${i % 4}`);
    }
    tree.match('unrelated'); // the descent state no longer points at the last prompt
    gc!();
    const retained = process.memoryUsage().heapUsed - before;
    expect(tree.nodeCount).toBe(2 + COUNT);
    expect(retained).toBeLessThan(3 * 1024 * 1024);
  });
});

describe('RadixTree.holdersOf', () => {
  it('names the tenants holding the node a match reached, in a reused array', () => {
    const tree = textTree();
    route(tree, 'system prompt: be brief. question one', 'http://a:1');
    route(tree, 'system prompt: be brief. question two', 'http://b:1');
    const shared = tree.holdersOf(tree.match('system prompt: be brief. question'));
    expect([...shared].sort()).toEqual(['http://a:1', 'http://b:1']);
    const only = tree.holdersOf(tree.match('system prompt: be brief. question one'));
    expect(only).toEqual(['http://a:1']);
    expect(only).toBe(shared); // the same scratch array: read it before the next call
    tree.removeTenant('http://a:1');
    expect(tree.holdersOf(tree.match('system prompt: be brief. question'))).toEqual(['http://b:1']);
  });
});
