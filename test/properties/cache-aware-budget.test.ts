/**
 * Properties of `cache_aware`'s budget for all trees together, over random interleavings of
 * selections for listed and unlisted models, worker removals, timer evictions and engine events:
 *
 * - the total is exactly every tree's size plus its fixed charge, and never above `maxTotalSize`;
 * - no tree is empty, and no model entry outlives its trees and blocks;
 * - a tree of a listed model loses entries to the budget only once no unlisted tree is left.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type CacheAwareStats,
  createPolicy,
  type Worker,
  WorkerRegistry,
} from '../../src/index.js';
import { cacheAwareModelCount } from '../../src/policies/cache-aware.js';
import { runs } from '../helpers/fc-settings.js';
import { recountCacheAwareTotal } from '../support/fixtures.js';

/** Models some worker lists (`''`: requests without a model, which count as listed). */
const LISTED = ['', 'a', 'b'] as const;
/** Models only wildcard workers serve. */
const UNLISTED = ['x', 'y', 'z', 'w'] as const;

type Op =
  | { op: 'select'; model: string; text: number; tokens: boolean }
  | { op: 'remove'; worker: number }
  | { op: 'evict' }
  | { op: 'stored'; model: string; worker: number }
  | { op: 'cleared'; worker: number };

const modelArb = fc.constantFrom<string>(...LISTED, ...UNLISTED);
const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 12,
    arbitrary: fc.record({
      op: fc.constant('select' as const),
      model: modelArb,
      text: fc.nat({ max: 11 }),
      tokens: fc.boolean(),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('remove' as const), worker: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('evict' as const) }) },
  {
    weight: 1,
    arbitrary: fc.record({ op: fc.constant('stored' as const), model: modelArb, worker: fc.nat() }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('cleared' as const), worker: fc.nat() }) },
);

/** Prompts 0–11: groups of four share a head, so matches, hits and splits happen. */
function prompt(i: number): string {
  const head = ['system: you are helpful. ', 'document: lorem ipsum dolor. ', 'q&a: '][i % 3]!;
  return head.repeat(1 + (i % 4)) + `question ${i}`.repeat(1 + (i % 5));
}

function tokensOf(text: string): number[] {
  return Array.from(text, (c) => c.charCodeAt(0));
}

function listedSizes(stats: CacheAwareStats): Map<string, number> {
  const sizes = new Map<string, number>();
  for (const t of stats.trees) {
    if ((LISTED as readonly string[]).includes(t.model)) sizes.set(`${t.model}/${t.kind}`, t.size);
  }
  return sizes;
}

describe('cache_aware budget properties', () => {
  it('the total is exact and within maxTotalSize; no empty tree or orphan entry; listed trees shrink only after every unlisted tree is gone', async () => {
    const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
    const workers: Worker[] = [
      await registry.register({ url: 'http://a0:8000', models: ['a'] }),
      await registry.register({ url: 'http://a1:8000', models: ['a'] }),
      await registry.register({ url: 'http://b0:8000', models: ['b'] }),
      await registry.register({ url: 'http://any0:8000' }),
      await registry.register({ url: 'http://any1:8000' }),
    ];
    const candidates = (model: string): readonly Worker[] =>
      model === '' ? registry.getAll() : registry.getByModel(model);

    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1_000, max: 6_000 }),
        fc.array(opArb, { minLength: 1, maxLength: 80 }),
        async (budget, ops) => {
          // maxTreeSize is large so that only the total budget ever trims a listed tree.
          const policy = createPolicy('cache_aware', {
            maxTotalSize: budget,
            maxTreeSize: 1_000_000,
            pageSize: 4,
          });
          for (const op of ops) {
            const before = policy.stats();
            switch (op.op) {
              case 'select': {
                const text = prompt(op.text);
                const request = op.tokens
                  ? { model: op.model, tokens: tokensOf(text) }
                  : { model: op.model, text };
                policy.select(candidates(op.model), request);
                break;
              }
              case 'remove':
                policy.removeWorker(workers[op.worker % workers.length]!.url);
                break;
              case 'evict':
                policy.evict();
                break;
              case 'stored':
                policy.applyKvEvents(workers[op.worker % workers.length]!.url, [
                  { type: 'stored', model: op.model, hashes: [op.worker + 1] },
                ]);
                break;
              case 'cleared':
                policy.applyKvEvents(workers[op.worker % workers.length]!.url, [
                  { type: 'cleared' },
                ]);
                break;
            }
            const stats = policy.stats();
            expect(stats.totalSize, 'the total is every tree plus its charge').toBe(
              recountCacheAwareTotal(stats),
            );
            expect(stats.totalSize, 'the total stays within the budget').toBeLessThanOrEqual(
              budget,
            );
            for (const t of stats.trees) {
              expect(t.size, `${t.model}/${t.kind} is not empty`).toBeGreaterThan(0);
              expect(t.tenants).toBeGreaterThan(0);
              expect(t.nodes).toBeGreaterThan(1);
            }
            const models = new Set([...stats.trees.map((t) => t.model), ...stats.eventModels]);
            expect(cacheAwareModelCount(policy), 'no entry without trees or blocks').toBe(
              models.size,
            );
            if (op.op === 'select') {
              const after = listedSizes(stats);
              const shrunk = [...listedSizes(before)].some(
                ([tree, size]) => (after.get(tree) ?? 0) < size,
              );
              if (shrunk) {
                const unlisted = stats.trees.filter(
                  (t) => !(LISTED as readonly string[]).includes(t.model),
                );
                expect(unlisted, 'a listed tree shrank while unlisted trees remain').toEqual([]);
              }
            }
          }
          policy.close();
        },
      ),
      runs(100, 500),
    );
  });
});
