/**
 * Memory soak of the text radix tree under a size budget: 200,000 prompts of about 4 KB routed
 * over 64 workers (tenants), evicted to the budget every 1,000 prompts, the way the cache-aware
 * policy's timer does. Not timed: it checks that what stays on the heap is bounded by the
 * budget, not by the traffic (200,000 × 4 KB = 800 MB of prompts go through).
 *
 * Traffic: 64 system prompts of ~3 KB (8 products × 8 roles; a role's prompt starts with its
 * product's ~1 KB preamble), each served by 4 workers, and a unique ~1 KB user turn per request.
 * So the tree shares 1 KB and 3 KB prefixes and grows one ~1 KB leaf per request, like real
 * chat traffic.
 *
 * Bound. `evictAll(MAX)` leaves every tenant at most MAX characters, so the tree's characters,
 * each label counted once, are at most 64 × MAX (shared labels count once but may be held by
 * several tenants). At 8 bytes per cached character (the budget `maxTreeSize` documents: label
 * bytes, node objects, tenant maps and leaf sets included) plus 16 MiB of fixed slack for the
 * test runner, the retained heap must stay below 64 × MAX × 8 B + 16 MiB = 48 MiB for
 * MAX = 65,536. A leak of evicted nodes or of whole prompts would show as hundreds of MB.
 *
 * A tighter guard for this traffic: every prompt is ASCII, so labels are one-byte strings
 * (1 B per character) and a node (object, tenant map, children map, leaf-set entry: ~0.5 KB)
 * adds about 0.5 B per character at labels of ~1 KB; measured 1.5 B per cached character.
 * Labels that were slices of their prompts (each 1 KB leaf keeping a 4 KB prompt) measured
 * 4.4 B, so the guard is 3 B per cached character.
 */
import v8 from 'node:v8';
import vm from 'node:vm';
import { describe, expect, it } from 'vitest';
import { RadixTree, type TreeNode } from '../../src/cache/radix-tree.js';
import { TEXT_KEYS } from '../../src/cache/tree-keys.js';

const TENANTS = 64;
const PRODUCTS = 8;
const ROLES = 8; // PRODUCTS × ROLES = 64 system prompts
const WORKERS_PER_PROMPT = 4;
const INSERTS = 200_000;
const EVICT_EVERY = 1_000;
const MAX = 65_536; // characters per tenant
const BYTES_PER_CHAR = 8;
const ONE_BYTE_GUARD = 3; // bytes per cached character for this ASCII traffic
const SLACK = 16 * 1024 * 1024;
const BOUND = TENANTS * MAX * BYTES_PER_CHAR + SLACK;

/** `gc()` without `--expose-gc` on the command line: set the flag now, read it from a context. */
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

/** mulberry32: a small seeded generator, so every run routes the same traffic. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

const WORDS = (
  'the a of to and in you your is for with on as be this that are it answer user assistant ' +
  'request context tool call json schema return value must should never always please step ' +
  'model token cache worker route prompt reply format output input example policy safety'
).split(' ');

function text(next: () => number, chars: number): string {
  const parts: string[] = [];
  let length = 0;
  while (length < chars) {
    const word = WORDS[Math.floor(next() * WORDS.length)]!;
    parts.push(word);
    length += word.length + 1;
  }
  return parts.join(' ').slice(0, chars);
}

function cachedCharacters(root: TreeNode<string>): number {
  let chars = 0;
  const stack = [root];
  while (stack.length > 0) {
    const node = stack.pop()!;
    chars += node.label.length;
    for (const first of node.children?.values() ?? []) {
      for (let c: TreeNode<string> | undefined = first; c !== undefined; c = c.next) stack.push(c);
    }
  }
  return chars;
}

const gc = exposeGc();

describe('RadixTree memory soak', () => {
  it.skipIf(gc === undefined)(
    'keeps the heap bounded by the size budget over 200,000 prompts of 4 KB',
    { timeout: 120_000 },
    () => {
      const next = rng(0x5eed);
      const preambles = Array.from(
        { length: PRODUCTS },
        (_, p) => `You are the assistant of product ${p}. ${text(next, 1000)}\n`,
      );
      const systems = Array.from({ length: PRODUCTS * ROLES }, (_, s) =>
        TEXT_KEYS.copy(
          `${preambles[s % PRODUCTS]}Role ${s}: ${text(next, 2000)}\n`,
          0,
          Number.MAX_SAFE_INTEGER,
        ),
      );
      const corpus = text(next, 256 * 1024);

      gc!();
      const before = process.memoryUsage().heapUsed;
      const tree = new RadixTree(TEXT_KEYS, '');
      const names = Array.from({ length: TENANTS }, (_, t) => `http://10.0.0.${t}:8000`);
      let worst = 0;
      let evicted = 0;
      for (let i = 1; i <= INSERTS; i++) {
        const s = Math.floor(next() * systems.length);
        const worker = (s + (TENANTS / WORKERS_PER_PROMPT) * Math.floor(next() * 4)) % TENANTS;
        const offset = Math.floor(next() * (corpus.length - 1024));
        const prompt = `${systems[s]}User ${i}: ${corpus.slice(offset, offset + 1000)}`;
        tree.match(prompt);
        tree.insert(prompt, names[worker]!);
        if (i % EVICT_EVERY === 0) {
          evicted += tree.evictAll(MAX);
          for (const stat of tree.tenantStats()) worst = Math.max(worst, stat.size);
        }
      }
      tree.match(''); // drop the descent state's reference to the last prompt
      gc!();
      const retained = process.memoryUsage().heapUsed - before;

      const stats = tree.tenantStats();
      const held = stats.reduce((sum, s) => sum + s.size, 0);
      const cached = cachedCharacters(tree.root);
      const perChar = retained / cached;
      console.info(
        `soak: ${INSERTS} prompts, ${tree.nodeCount} nodes, ${stats.length} tenants, ` +
          `${cached} cached chars (${held} held across tenants), ${evicted} evicted; ` +
          `retained heap ${(retained / 1048576).toFixed(1)} MiB ` +
          `(bound ${(BOUND / 1048576).toFixed(0)} MiB), ${perChar.toFixed(2)} B per cached char`,
      );

      expect(worst).toBeLessThanOrEqual(MAX);
      expect(stats).toHaveLength(TENANTS);
      expect(held).toBeLessThanOrEqual(TENANTS * MAX);
      expect(cached).toBeLessThanOrEqual(held);
      // The budget is used, not evicted away: most tenants are close to it.
      expect(held).toBeGreaterThan(TENANTS * MAX * 0.5);
      expect(retained).toBeLessThan(BOUND);
      expect(perChar).toBeLessThanOrEqual(BYTES_PER_CHAR);
      expect(perChar).toBeLessThan(ONE_BYTE_GUARD);
    },
  );
});
