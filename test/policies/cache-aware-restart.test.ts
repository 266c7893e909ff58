/**
 * `cache_aware.workerRestarted(url)`: an engine that restarted holds nothing, so the policy
 * forgets what it believed that worker's cache held — in its approximate trees and in its
 * engine block index — and the worker stays a candidate.
 */
import { describe, expect, it } from 'vitest';
import { blockHashes, createPolicy, WorkerRegistry } from '../../src/index.js';
import { cacheAwareTreeOf } from '../../src/policies/cache-aware.js';
import { essay } from '../support/fixtures.js';

async function fleet(n: number) {
  const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
  for (let i = 0; i < n; i++)
    await registry.register({ url: `http://gpu${i}:8000`, models: ['m'] });
  return registry.getByModel('m');
}

describe('cache_aware: an engine restart (approximate trees)', () => {
  it('a prompt sent to the restarted worker no longer matches it; other workers keep theirs', async () => {
    // Arrange: misses go to the least-loaded worker, so the first prompt lands on gpu0 and the
    // second on gpu1; each is a hit on its worker the second time.
    const workers = await fleet(2);
    const [a, b] = workers as [(typeof workers)[number], (typeof workers)[number]];
    const policy = createPolicy('cache_aware', { missPlacement: 'least_load' });
    const onA = essay(40);
    const onB = essay(41);
    const tokensOnA = Array.from({ length: 64 }, (_, i) => 900 + i);
    expect(policy.select(workers, { model: 'm', text: onA })).toBe(a);
    expect(policy.select(workers, { model: 'm', text: onB })).toBe(b);
    expect(policy.select(workers, { model: 'm', tokens: tokensOnA })).toBe(a);
    expect(policy.select(workers, { model: 'm', text: onA })).toBe(a);
    expect(policy.explain()?.branch).toBe('cache_hit');

    // Act
    policy.workerRestarted(a.url);

    // Assert: nothing of gpu0 is left in either tree, and the prompt is a miss again.
    expect(cacheAwareTreeOf(policy, 'm', 'text')?.sizeOf(a.url)).toBe(0);
    expect(cacheAwareTreeOf(policy, 'm', 'tokens')).toBeUndefined(); // gpu0 was its only tenant
    policy.select(workers, { model: 'm', text: onA });
    expect(policy.explain()?.branch).toBe('cache_miss');
    policy.select(workers, { model: 'm', tokens: tokensOnA });
    expect(policy.explain()?.branch).toBe('cache_miss');
    expect(policy.select(workers, { model: 'm', text: onB })).toBe(b);
    expect(policy.explain()?.branch).toBe('cache_hit');
  });

  it('the restarted worker stays a candidate, and holds what it is sent afterwards', async () => {
    const workers = await fleet(2);
    const a = workers[0]!;
    const policy = createPolicy('cache_aware', { missPlacement: 'least_load' });
    const text = essay(42);
    policy.select(workers, { model: 'm', text });

    policy.workerRestarted(a.url);

    expect(policy.select([a], { model: 'm', text })).toBe(a);
    expect(policy.select([a], { model: 'm', text })).toBe(a);
    expect(policy.explain()?.branch).toBe('cache_hit');
  });

  it('ignores a URL that is not a string, and one it never saw', async () => {
    const workers = await fleet(2);
    const policy = createPolicy('cache_aware', { missPlacement: 'least_load' });
    const text = essay(43);
    policy.select(workers, { model: 'm', text });

    policy.workerRestarted(7 as never);
    policy.workerRestarted('http://elsewhere:8000');

    policy.select(workers, { model: 'm', text });
    expect(policy.explain()?.branch).toBe('cache_hit');
  });
});

describe('cache_aware: an engine restart (event mode)', () => {
  const prompt = Array.from({ length: 64 }, (_, i) => 500 + i); // 4 blocks of 16
  const other = blockHashes(prompt.map((t) => t + 7));

  it('a prompt whose blocks the restarted engine reported no longer overlaps it', async () => {
    const workers = await fleet(4);
    const a = workers[0]!;
    const policy = createPolicy('cache_aware', { missPlacement: 'least_load' });
    policy.applyKvEvents(a.url, [{ type: 'stored', model: 'm', hashes: blockHashes(prompt) }]);
    policy.applyKvEvents(workers[3]!.url, [{ type: 'stored', model: 'm', hashes: other }]);
    expect(policy.select(workers, { model: 'm', tokens: prompt })).toBe(a);
    expect(policy.explain()?.branch).toBe('event_overlap');

    policy.workerRestarted(a.url);

    // Still scored from events (gpu3's blocks are known), but nobody holds the prompt.
    expect(policy.stats().eventModels).toEqual(['m']);
    policy.select(workers, { model: 'm', tokens: prompt });
    expect(policy.explain()?.branch).toBe('cache_miss');
  });

  it('a miss placed on the restarted worker, its events still due, no longer draws the prompt there', async () => {
    const workers = await fleet(4);
    const policy = createPolicy('cache_aware', { missPlacement: 'least_load' });
    policy.applyKvEvents(workers[3]!.url, [{ type: 'stored', model: 'm', hashes: other }]);
    const placed = policy.select(workers, { model: 'm', tokens: prompt })!;
    expect(policy.explain()?.branch).toBe('cache_miss');
    expect(policy.select(workers, { model: 'm', tokens: prompt })).toBe(placed);
    expect(policy.explain()?.branch).toBe('cache_hit'); // the placement, within pendingTtlMs

    policy.workerRestarted(placed.url);

    policy.select(workers, { model: 'm', tokens: prompt });
    expect(policy.explain()?.branch).toBe('cache_miss');
  });
});
