/**
 * The candidate view: what the registry attaches to every array it hands out (in-flight figures,
 * an availability version scoped to that array's groups, positions, its ring), and what any
 * other list gets on first use.
 */
import { describe, expect, it } from 'vitest';
import { WorkerRegistry } from '../../src/index.js';
import { viewOf } from '../../src/workers/candidate-view.js';

async function registryWith(models: Record<string, string[] | undefined>) {
  const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
  for (const [url, served] of Object.entries(models))
    await registry.register(served === undefined ? { url } : { url, models: served });
  return registry;
}

describe('CandidateView of a registry array', () => {
  it('is the same object for the same array, and reports in-flight figures in O(groups)', async () => {
    const registry = await registryWith({ 'http://a:1': ['m'], 'http://b:1': ['m', 'n'] });
    const workers = registry.getByModel('m');
    const view = viewOf(workers);
    expect(viewOf(workers)).toBe(view);
    expect(view.loadBounds(new Float64Array(3))).toBe(true); // a registry array: O(groups) figures
    const lease = workers[1]!.acquire();
    workers[1]!.acquire();
    const bounds = new Float64Array(3);
    expect(view.totalLoad()).toBe(2);
    expect(view.loadBounds(bounds)).toBe(true);
    expect([...bounds]).toEqual([0, 2, 2]);
    lease.release();
    expect(view.totalLoad()).toBe(1);
  });

  it('moves its version when a member turns available or unavailable, not for another model or another registry', async () => {
    const registry = await registryWith({
      'http://a:1': ['m'],
      'http://b:1': ['m'],
      'http://c:1': ['n'],
    });
    const other = await registryWith({ 'http://x:1': ['m'] });
    const view = viewOf(registry.getByModel('m'));
    const start = view.version;

    await registry.transitionStatus(registry.getByUrl('http://c:1')!.id, 'not_ready');
    await other.transitionStatus(other.getByUrl('http://x:1')!.id, 'not_ready');
    expect(view.version).toBe(start); // another model, another registry

    await registry.transitionStatus(registry.getByUrl('http://a:1')!.id, 'not_ready');
    const afterStatus = view.version;
    expect(afterStatus).not.toBe(start);
    registry.getByUrl('http://b:1')!.circuitBreaker.forceOpen();
    expect(view.version).not.toBe(afterStatus); // a breaker that opens makes it unavailable too
  });

  it('moves its version when a member whose breaker is open leaves or rejoins ready', async () => {
    // Unavailable before and after, but no longer ready: a figure over the ready members (the
    // least_load nominal throughput) must be recomputed.
    const registry = await registryWith({ 'http://a:1': ['m'], 'http://b:1': ['m'] });
    const view = viewOf(registry.getByModel('m'));
    const a = registry.getByUrl('http://a:1')!;
    a.circuitBreaker.forceOpen();
    const open = view.version;
    await registry.transitionStatus(a.id, 'not_ready');
    const notReady = view.version;
    expect(notReady).not.toBe(open);
    await registry.transitionStatus(a.id, 'ready');
    const ready = view.version;
    expect(ready).not.toBe(notReady);
    a.acquire().release();
    expect(view.version).toBe(ready); // in-flight changes are not membership changes
  });

  it('gives the registry’s ring while the array is current, and none once it is stale', async () => {
    const registry = await registryWith({ 'http://a:1': ['m'], 'http://b:1': ['n'] });
    const stale = registry.getByModel('m');
    expect(viewOf(stale).ring()).toBe(registry.getHashRing('m'));
    await registry.register({ url: 'http://c:1', models: ['m'] });
    expect(viewOf(stale).ring()).toBeUndefined();
    expect(viewOf(registry.getByModel('m')).ring()).toBe(registry.getHashRing('m'));
  });

  it('finds positions by URL and workers by URL or id, never a non-worker carrying a URL', async () => {
    const registry = await registryWith({ 'http://a:1': ['m'], 'http://b:1': ['m'] });
    const [a, b] = registry.getByModel('m') as [never, never];
    const lookalike = { url: 'http://a:1', id: 'w1' };
    const view = viewOf([lookalike as never, undefined as never, b, a]);
    expect(view.loadBounds(new Float64Array(3))).toBe(false); // not a registry array
    expect(view.indexOf('http://a:1')).toBe(3);
    expect(view.indexOf('http://b:1')).toBe(2);
    expect(view.indexOf('http://nope:1')).toBe(-1);
    expect(view.byUrlOrId((a as { id: string }).id)).toBe(a);
    expect(view.ring()).toBeUndefined();
  });
});

describe('CandidateView of another list', () => {
  it('sums in-flight counts in one pass (non-workers count 0) and has no load bounds', async () => {
    const registry = await registryWith({ 'http://a:1': ['m'], 'http://b:1': ['m'] });
    const [a, b] = registry.getByModel('m');
    a!.acquire();
    b!.acquire();
    b!.acquire();
    const view = viewOf([b!, null as never, a!]);
    expect(view.totalLoad()).toBe(3);
    expect(view.loadBounds(new Float64Array(3))).toBe(false);
  });

  it('moves its version with its workers’ registry, and only that registry', async () => {
    const registry = await registryWith({ 'http://a:1': ['m'], 'http://b:1': ['n'] });
    const other = await registryWith({ 'http://x:1': ['m'] });
    const view = viewOf([registry.getByUrl('http://a:1')!]);
    const start = view.version;
    await other.transitionStatus(other.getByUrl('http://x:1')!.id, 'draining');
    expect(view.version).toBe(start);
    await registry.transitionStatus(registry.getByUrl('http://b:1')!.id, 'draining');
    expect(view.version).not.toBe(start);
  });
});
