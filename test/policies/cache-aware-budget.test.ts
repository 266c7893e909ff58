/**
 * `cache_aware`'s budget for all trees together (`maxTotalSize`): a client sending many distinct
 * `model` values cannot grow the policy without bound, trees of models no candidate lists go
 * first, the trees of listed models survive a flood, and an emptied tree leaves nothing behind.
 */
import { describe, expect, it } from 'vitest';
import { createPolicy, type Worker, WorkerRegistry } from '../../src/index.js';
import { TREE_CHARGE } from '../../src/policies/cache-aware/model-caches.js';
import { cacheAwareModelCount, cacheAwareTreeOf } from '../../src/policies/cache-aware.js';
import { essay, recountCacheAwareTotal, throwsCode } from '../support/fixtures.js';

/** A registry with `named` workers serving `models` explicitly and `wildcards` serving any. */
async function fleet(
  named: number,
  wildcards: number,
  models: string[] = ['llama'],
): Promise<{ registry: WorkerRegistry; named: Worker[]; wildcards: Worker[] }> {
  const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
  const listed: Worker[] = [];
  const any: Worker[] = [];
  for (let i = 0; i < named; i++)
    listed.push(await registry.register({ url: `http://named-${i}:8000`, models }));
  for (let i = 0; i < wildcards; i++)
    any.push(await registry.register({ url: `http://any-${i}:8000` }));
  return { registry, named: listed, wildcards: any };
}

describe('cache_aware: one budget for all trees (maxTotalSize)', () => {
  it('100,000 distinct model strings keep the total within maxTotalSize and the number of trees bounded', async () => {
    const { registry } = await fleet(0, 4);
    const budget = 64 * 1_024;
    const policy = createPolicy('cache_aware', { maxTotalSize: budget });
    const tokens = Array.from({ length: 64 }, (_, i) => i);
    let peakTrees = 0;

    for (let i = 0; i < 100_000; i++) {
      const model = `junk-${i.toString(36)}`;
      const request = i % 2 === 0 ? { model, text: `hello ${i}` } : { model, tokens };
      expect(policy.select(registry.getByModel(model), request)).toBeDefined();
      if (i % 997 === 0) {
        const stats = policy.stats();
        expect(stats.totalSize).toBeLessThanOrEqual(budget);
        peakTrees = Math.max(peakTrees, stats.trees.length);
      }
    }

    const stats = policy.stats();
    expect(stats.totalSize).toBeLessThanOrEqual(budget);
    expect(stats.totalSize).toBe(recountCacheAwareTotal(stats));
    expect(stats.trees.length).toBeLessThanOrEqual(budget / TREE_CHARGE);
    expect(peakTrees).toBeLessThanOrEqual(budget / TREE_CHARGE);
    expect(cacheAwareModelCount(policy)).toBe(new Set(stats.trees.map((t) => t.model)).size);
    policy.close();
  });

  it('trees of models the workers list survive a flood of junk model names, even as the least recently used', async () => {
    const { registry } = await fleet(2, 2);
    const budget = 32 * 1_024;
    const policy = createPolicy('cache_aware', { maxTotalSize: budget });
    const served = [1, 2, 3, 4].map((i) => essay(i, 400));
    const owners = served.map((text) =>
      policy.select(registry.getByModel('llama'), { model: 'llama', text }),
    );

    // The llama tree is now the oldest; 20,000 junk models fill the budget many times over.
    for (let i = 0; i < 20_000; i++) {
      const model = `junk-${i}`;
      policy.select(registry.getByModel(model), { model, text: essay(100 + (i % 50), 120) });
    }

    const stats = policy.stats();
    expect(stats.totalSize).toBeLessThanOrEqual(budget);
    const llama = cacheAwareTreeOf(policy, 'llama', 'text')!;
    for (const text of served) expect(llama.match(text).matched).toBe(text.length);
    const hits = stats.reasons.cache_hit;
    served.forEach((text, i) => {
      expect(policy.select(registry.getByModel('llama'), { model: 'llama', text })).toBe(owners[i]);
    });
    expect(policy.stats().reasons.cache_hit).toBe(hits + served.length);
    policy.close();
  });

  it('when the listed models alone exceed the budget, every tree keeps its newest entries and the total comes back within it', async () => {
    const { registry } = await fleet(3, 0, ['a', 'b']);
    const budget = 16 * 1_024;
    const policy = createPolicy('cache_aware', { maxTotalSize: budget });
    const texts = Array.from({ length: 200 }, (_, i) => essay(1_000 + i, 300));

    texts.forEach((text, i) => {
      const model = i % 2 === 0 ? 'a' : 'b';
      policy.select(registry.getByModel(model), { model, text });
      expect(policy.stats().totalSize).toBeLessThanOrEqual(budget);
    });

    const stats = policy.stats();
    expect(stats.trees.map((t) => t.model).sort()).toEqual(['a', 'b']);
    const a = cacheAwareTreeOf(policy, 'a', 'text')!;
    const b = cacheAwareTreeOf(policy, 'b', 'text')!;
    expect(a.match(texts[198]!).matched).toBe(300);
    expect(b.match(texts[199]!).matched).toBe(300);
    expect(a.match(texts[0]!).matched).toBeLessThan(300);
    policy.close();
  });

  it('in a fleet of wildcard workers every model competes: the least recently used trees go first', async () => {
    const { registry } = await fleet(0, 2);
    // Trees of 150 characters count 664 units each: three fit, a fourth takes the total over,
    // and eviction goes down to 7/8 of the budget (1,838 units).
    const policy = createPolicy('cache_aware', { maxTotalSize: 2_100 });
    const workers = registry.getAll();
    const select = (model: string, seed: number) =>
      policy.select(workers, { model, text: essay(seed, 150) });
    select('m1', 1);
    select('m2', 2);
    select('m3', 3);
    select('m1', 1); // m1 is now the most recently used

    select('m4', 4);

    const stats = policy.stats();
    expect(stats.trees.map((t) => t.model).sort()).toEqual(['m1', 'm4']);
    expect(stats.totalSize).toBe(2 * 664);
    policy.close();
  });

  it('requests without a model share one tree that counts as listed', async () => {
    const { registry } = await fleet(0, 2);
    const budget = 8 * 1_024;
    const policy = createPolicy('cache_aware', { maxTotalSize: budget });
    const workers = registry.getAll();
    const text = essay(7, 300);
    policy.select(workers, { text });

    for (let i = 0; i < 2_000; i++)
      policy.select(workers, { model: `junk-${i}`, text: essay(i, 50) });

    expect(cacheAwareTreeOf(policy, '', 'text')!.match(text).matched).toBe(300);
    expect(policy.stats().totalSize).toBeLessThanOrEqual(budget);
    policy.close();
  });

  it('stats().totalSize is every tree size plus 512 units and its model string', async () => {
    const { registry } = await fleet(2, 0, ['model-a']);
    const policy = createPolicy('cache_aware');
    const workers = registry.getByModel('model-a');
    policy.select(workers, { model: 'model-a', text: essay(1, 100) });
    policy.select(workers, { model: 'model-a', tokens: Array.from({ length: 32 }, (_, i) => i) });

    const stats = policy.stats();
    expect(stats.trees).toHaveLength(2);
    expect(stats.totalSize).toBe(100 + 32 + 2 * (TREE_CHARGE + 'model-a'.length));
    policy.close();
  });

  it('maxTotalSize must be an integer ≥ 1', () => {
    for (const maxTotalSize of [0, -1, 1.5, Number.NaN, '10'])
      throwsCode(() => createPolicy('cache_aware', { maxTotalSize } as never), 'INVALID_ARGUMENT');
    expect(() => createPolicy('cache_aware', { maxTotalSize: 1 })).not.toThrow();
  });
});

describe('cache_aware: an emptied tree is dropped', () => {
  it('removing the only worker of a tree drops the tree and its model entry', async () => {
    const { registry, named } = await fleet(1, 0, ['m']);
    const policy = createPolicy('cache_aware');
    policy.select(registry.getByModel('m'), { model: 'm', text: essay(1, 200) });
    expect(policy.stats().trees).toHaveLength(1);

    policy.removeWorker(named[0]!.url);

    expect(policy.stats().trees).toEqual([]);
    expect(policy.stats().totalSize).toBe(0);
    expect(cacheAwareTreeOf(policy, 'm', 'text')).toBeUndefined();
    expect(cacheAwareModelCount(policy)).toBe(0);
  });

  it('a request with nothing to store (tokens shorter than a page) creates no tree', async () => {
    const { registry } = await fleet(0, 2);
    const policy = createPolicy('cache_aware', { pageSize: 16 });

    for (let i = 0; i < 100; i++)
      policy.select(registry.getAll(), { model: `m${i}`, tokens: [1, 2, 3] });

    expect(policy.stats().trees).toEqual([]);
    expect(cacheAwareModelCount(policy)).toBe(0);
  });

  it('trees dropped by the budget leave no model entry behind', async () => {
    const { registry } = await fleet(0, 2);
    const policy = createPolicy('cache_aware', { maxTotalSize: 4_096 });

    for (let i = 0; i < 1_000; i++)
      policy.select(registry.getAll(), { model: `m${i}`, text: essay(i, 40) });

    const trees = policy.stats().trees.length;
    expect(trees).toBeGreaterThan(0);
    expect(cacheAwareModelCount(policy)).toBe(trees);
  });

  it('a model whose engine blocks are all cleared keeps no entry', async () => {
    const { registry } = await fleet(1, 0, ['m']);
    const policy = createPolicy('cache_aware');
    const url = registry.getAll()[0]!.url;
    policy.applyKvEvents(url, [{ type: 'stored', model: 'm', hashes: [1n, 2n] }]);
    expect(policy.stats().eventModels).toEqual(['m']);

    policy.applyKvEvents(url, [{ type: 'cleared', model: 'm' }]);

    expect(policy.stats().eventModels).toEqual([]);
    expect(cacheAwareModelCount(policy)).toBe(0);
  });
});
