/**
 * `cache_aware.workerRestarted(url, restart)`: an engine that restarted holds nothing, so the
 * policy forgets what it believed that worker's cache held, and the worker stays a candidate.
 * Seen by the health loop: everything, in its approximate trees and in its engine block index.
 * Seen by its start time, a poll late: only what it learned before the worker's previous report,
 * in the trees (`cache-aware-restart-start-time.test.ts`).
 */
import { describe, expect, it } from 'vitest';
import { blockHashes, createPolicy, WorkerRegistry, type WorkerRestart } from '../../src/index.js';
import { cacheAwareTreeOf } from '../../src/policies/cache-aware.js';
import { essay } from '../support/fixtures.js';

const HEALTH: WorkerRestart = { detectedBy: 'health' };

async function fleet(n: number) {
  const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
  for (let i = 0; i < n; i++)
    await registry.register({ url: `http://gpu${i}:8000`, models: ['m'] });
  return registry.getByModel('m');
}

describe('cache_aware: an engine restart the health loop saw (approximate trees)', () => {
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
    policy.workerRestarted(a.url, HEALTH);

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

    policy.workerRestarted(a.url, HEALTH);

    expect(policy.select([a], { model: 'm', text })).toBe(a);
    expect(policy.select([a], { model: 'm', text })).toBe(a);
    expect(policy.explain()?.branch).toBe('cache_hit');
  });

  it('without a restart argument (a caller in plain JavaScript), forgets everything too', async () => {
    const workers = await fleet(2);
    const a = workers[0]!;
    const policy = createPolicy('cache_aware', { missPlacement: 'least_load' });
    const text = essay(44);
    expect(policy.select(workers, { model: 'm', text })).toBe(a);

    (policy.workerRestarted as (url: string) => void).call(policy, a.url);

    expect(cacheAwareTreeOf(policy, 'm', 'text')).toBeUndefined();
  });

  it('ignores a URL that is not a string, and one it never saw', async () => {
    const workers = await fleet(2);
    const policy = createPolicy('cache_aware', { missPlacement: 'least_load' });
    const text = essay(43);
    policy.select(workers, { model: 'm', text });

    policy.workerRestarted(7 as never, HEALTH);
    policy.workerRestarted('http://elsewhere:8000', HEALTH);
    policy.workerRestarted('http://elsewhere:8000', { detectedBy: 'start_time' });

    policy.select(workers, { model: 'm', text });
    expect(policy.explain()?.branch).toBe('cache_hit');
  });
});

describe('cache_aware: an engine restart the health loop saw (event mode)', () => {
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

    policy.workerRestarted(a.url, HEALTH);

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

    policy.workerRestarted(placed.url, HEALTH);

    policy.select(workers, { model: 'm', tokens: prompt });
    expect(policy.explain()?.branch).toBe('cache_miss');
  });
});
