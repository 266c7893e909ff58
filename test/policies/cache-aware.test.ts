/**
 * `cache_aware`: prefix affinity through the approximate tree, the imbalance and
 * KV-usage escapes, stale matches, removal, event-driven scoring, and the decision counters.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  blockHashes,
  createPolicy,
  type Worker,
  type WorkerLease,
  WorkerRegistry,
} from '../../src/index.js';
import { cacheAwareTreeOf } from '../../src/policies/cache-aware.js';
import { essay } from '../support/fixtures.js';
import { buildFleet } from '../support/policy-contract.js';

const ready = { status: 'ready', open: false, removed: false, load: 0 } as const;
const fleet = (n: number) => buildFleet(Array.from({ length: n }, () => ready));

/** Gives `worker` exactly `n` leases in flight. */
function load(worker: Worker, n: number): WorkerLease[] {
  return Array.from({ length: n }, () => worker.acquire());
}

describe('cache_aware: prefix affinity', () => {
  it('sends the same text twice to the same worker, and counts a hit the second time', async () => {
    const { workers } = await fleet(4);
    const policy = createPolicy('cache_aware');
    const text = essay(1);

    const first = policy.select(workers, { text });
    const second = policy.select(workers, { text });

    expect(second).toBe(first);
    expect(policy.stats().reasons).toMatchObject({ cache_miss: 1, cache_hit: 1 });
  });

  it('sends a prefix of a routed text to the same worker', async () => {
    const { workers } = await fleet(4);
    const policy = createPolicy('cache_aware');
    const text = essay(2);
    const owner = policy.select(workers, { text });
    // Other traffic makes the owner busier than the rest, but within the balance thresholds.
    for (let i = 0; i < 3; i++) policy.select(workers, { text: essay(10 + i) });

    expect(policy.select(workers, { text: text.slice(0, 300) })).toBe(owner);
  });

  it('follows a continuation of a conversation (the old prompt is a prefix of the new one)', async () => {
    const { workers } = await fleet(8);
    const policy = createPolicy('cache_aware');
    const turns = [essay(3)];
    const owner = policy.select(workers, { text: turns[0]! });
    for (let t = 1; t < 5; t++) {
      turns.push(`${turns[t - 1]} user: question ${t}? assistant: answer ${t}.`);
      expect(policy.select(workers, { text: turns[t]! })).toBe(owner);
    }
  });

  it("decideBy 'load': spreads unrelated prompts to the least-loaded worker (ties: fewer processed, then position)", async () => {
    const { workers } = await fleet(3);
    const policy = createPolicy('cache_aware', { decideBy: 'load' });

    const picks = [0, 1, 2, 3, 4, 5].map((i) =>
      workers.indexOf(policy.select(workers, { text: essay(100 + i) })!),
    );

    expect(picks).toEqual([0, 1, 2, 0, 1, 2]);
  });

  it('keeps one tree per request.model: the same text for two models is matched separately', async () => {
    const { workers } = await fleet(2);
    const policy = createPolicy('cache_aware', { decideBy: 'load' });
    const text = essay(4);
    policy.select(workers, { text, model: 'a' });

    policy.select(workers, { text, model: 'b' });

    expect(policy.stats().reasons).toMatchObject({ cache_miss: 2, cache_hit: 0 });
    expect(
      policy
        .stats()
        .trees.map((t) => t.model)
        .sort(),
    ).toEqual(['a', 'b']);
  });

  it("decideBy 'load': a match below cacheThreshold of the request is a miss", async () => {
    const { workers } = await fleet(4);
    const policy = createPolicy('cache_aware', { decideBy: 'load', cacheThreshold: 0.5 });
    const head = essay(5, 100);
    policy.select(workers, { text: head });

    policy.select(workers, { text: `${head}${essay(6, 300)}` }); // 100 / 400 = 0.25 matched

    expect(policy.stats().reasons).toMatchObject({ cache_hit: 0, cache_miss: 2 });
  });
});

// The fixed load bounds of `decideBy: 'load'` (the cost model's guard: cache-aware-ttft.test.ts).
describe("cache_aware decideBy 'load': escapes", () => {
  it('imbalance (abs 5, rel 2; loads 20 vs 0) always goes to the idle worker', async () => {
    const { workers } = await fleet(2);
    const policy = createPolicy('cache_aware', {
      decideBy: 'load',
      balanceAbsThreshold: 5,
      balanceRelThreshold: 2,
    });
    const text = essay(7);
    const owner = policy.select(workers, { text })!;
    const idle = workers.find((w) => w !== owner)!;
    const leases = load(owner, 20);

    for (let i = 0; i < 10; i++) expect(policy.select(workers, { text })).toBe(idle);

    expect(policy.stats().reasons.imbalanced).toBe(10);
    for (const lease of leases) lease.release();
  });

  it('the imbalanced request is inserted for the worker it went to', async () => {
    const { workers } = await fleet(2);
    const policy = createPolicy('cache_aware', {
      decideBy: 'load',
      balanceAbsThreshold: 5,
      balanceRelThreshold: 2,
    });
    const text = essay(8);
    const owner = policy.select(workers, { text })!;
    const idle = workers.find((w) => w !== owner)!;
    const leases = load(owner, 20);
    policy.select(workers, { text });
    for (const lease of leases) lease.release();

    const tree = cacheAwareTreeOf(policy, '', 'text')!;
    expect(tree.sizeOf(idle.url)).toBe(text.length);
  });

  it('a holder over the hit bound spills the request to the least-loaded worker, which then holds the prefix too', async () => {
    const { workers } = await fleet(4);
    const policy = createPolicy('cache_aware', { decideBy: 'load' });
    const text = essay(21);
    const owner = policy.select(workers, { text })!;
    // 8 in flight, all on the owner: bound = ceil(1.5 × 9 / 4) = 4 < 8 + 1.
    const leases = load(owner, 8);

    const spilled = policy.select(workers, { text })!;
    expect(spilled).not.toBe(owner);
    expect(policy.stats().reasons.holder_overloaded).toBe(1);
    // The second holder now takes the prefix's traffic while the owner is busy: a cache hit.
    expect(policy.select(workers, { text })).toBe(spilled);
    expect(policy.stats().reasons.cache_hit).toBe(1);
    for (const lease of leases) lease.release();
  });

  it('explains what the picked worker holds: the match on a hit, nothing when a holder is passed over', async () => {
    const { workers } = await fleet(4);
    const policy = createPolicy('cache_aware', { decideBy: 'load' });
    const text = essay(23);
    const owner = policy.select(workers, { text })!;
    expect(policy.select(workers, { text })).toBe(owner);
    const hit = policy.explain()!;
    expect(hit.branch).toBe('cache_hit');
    expect(hit.held).toBe(hit.matched);
    expect(hit.held).toBeGreaterThan(0.9);

    const leases = load(owner, 8);
    expect(policy.select(workers, { text })).not.toBe(owner);
    const passed = policy.explain()!;
    expect(passed.branch).toBe('holder_overloaded');
    expect(passed.matched).toBeGreaterThan(0.9);
    expect(passed.held).toBe(0);
    for (const lease of leases) lease.release();
  });

  it('in the cost model, explains the share the winner holds', async () => {
    const { workers } = await fleet(4);
    const policy = createPolicy('cache_aware');
    const text = essay(24);
    const owner = policy.select(workers, { text })!;
    expect(policy.select(workers, { text })).toBe(owner);
    expect(policy.explain()!.held).toBeGreaterThan(0.9);
    const leases = load(owner, 64);
    const other = policy.select(workers, { text })!;
    if (other !== owner) expect(policy.explain()!.held).toBe(0);
    for (const lease of leases) lease.release();
  });

  it('a holder within the bound keeps its prefix (3 of 9 in flight: 3 + 1 ≤ ceil(1.5 × 10 / 4))', async () => {
    const { workers } = await fleet(4);
    const policy = createPolicy('cache_aware', { decideBy: 'load' });
    const text = essay(22);
    const owner = policy.select(workers, { text })!;
    const leases = workers.flatMap((w) => load(w, w === owner ? 3 : 2));

    expect(policy.select(workers, { text })).toBe(owner);
    expect(policy.stats().reasons.holder_overloaded).toBe(0);
    for (const lease of leases) lease.release();
  });

  it('loadFactor: Infinity follows every match until the imbalance escape (the bare algorithm)', async () => {
    const { workers } = await fleet(4);
    const policy = createPolicy('cache_aware', {
      decideBy: 'load',
      loadFactor: Number.POSITIVE_INFINITY,
    });
    const text = essay(23);
    const owner = policy.select(workers, { text })!;
    const leases = load(owner, 60);

    expect(policy.select(workers, { text })).toBe(owner);
    for (const lease of leases) lease.release();
  });

  it('loadSlack widens the bound by that many requests', async () => {
    const { workers } = await fleet(4);
    const policy = createPolicy('cache_aware', { decideBy: 'load', loadSlack: 10 });
    const text = essay(24);
    const owner = policy.select(workers, { text })!;
    const leases = load(owner, 12); // bound = ceil(1.5 × 13 / 4) + 10 = 15

    expect(policy.select(workers, { text })).toBe(owner);
    for (const lease of leases) lease.release();
  });

  it('KV usage: uniform high usage does not fire the spread trigger', async () => {
    const { workers } = await fleet(3);
    const policy = createPolicy('cache_aware', { kvUsageSpreadThreshold: 0.5, clock: () => 0 });
    policy.updateLoads(new Map(workers.map((w) => [w.url, { tokenUsage: 0.92 }])));
    const text = essay(9);
    const owner = policy.select(workers, { text });

    expect(policy.select(workers, { text })).toBe(owner);
    expect(policy.stats().reasons.imbalanced).toBe(0);
  });

  it('KV usage: one hot worker with the rest idle fires through the spread', async () => {
    const { workers } = await fleet(3);
    const policy = createPolicy('cache_aware', { kvUsageSpreadThreshold: 0.5, clock: () => 0 });
    const text = essay(10);
    const owner = policy.select(workers, { text })!;
    policy.updateLoads(
      new Map(workers.map((w) => [w.url, { tokenUsage: w === owner ? 0.9 : 0.05 }])),
    );

    expect(policy.select(workers, { text })).not.toBe(owner);
    expect(policy.stats().reasons.imbalanced).toBe(1);
  });

  it('KV usage: the overload ceiling fires below the spread', async () => {
    const { workers } = await fleet(3);
    const policy = createPolicy('cache_aware', {
      kvUsageSpreadThreshold: 0.5,
      kvUsageCeiling: 0.95,
      clock: () => 0,
    });
    const text = essay(11);
    const owner = policy.select(workers, { text })!;
    policy.updateLoads(
      new Map(workers.map((w) => [w.url, { tokenUsage: w === owner ? 0.97 : 0.9 }])),
    );

    expect(policy.select(workers, { text })).not.toBe(owner);
    expect(policy.stats().reasons.imbalanced).toBe(1);
  });

  it('KV usage triggers are off by default', async () => {
    const { workers } = await fleet(2);
    const policy = createPolicy('cache_aware', { clock: () => 0 });
    const text = essay(12);
    const owner = policy.select(workers, { text })!;
    policy.updateLoads(new Map(workers.map((w) => [w.url, { tokenUsage: w === owner ? 1 : 0 }])));

    expect(policy.select(workers, { text })).toBe(owner);
  });
});

describe('cache_aware: failures and removal', () => {
  it('a circuit-broken match goes to the least-loaded worker (stale_match), not to the first worker', async () => {
    const { workers } = await fleet(3);
    const policy = createPolicy('cache_aware');
    const text = essay(13);
    const owner = policy.select(workers, { text })!;
    const leases = load(workers[0] === owner ? workers[1]! : workers[0]!, 1); // the first other worker is busier
    expect(owner).toBeDefined();
    owner.circuitBreaker.forceOpen();

    const chosen = policy.select(workers, { text })!;

    const expected = workers.filter((w) => w !== owner).sort((a, b) => a.load - b.load)[0];
    expect(chosen).toBe(expected);
    expect(policy.stats().reasons.stale_match).toBe(1);
    expect(cacheAwareTreeOf(policy, '', 'text')!.sizeOf(chosen.url)).toBe(text.length);
    for (const lease of leases) lease.release();
  });

  it('a match whose worker is not among the candidates is stale', async () => {
    const { workers } = await fleet(3);
    const policy = createPolicy('cache_aware');
    const text = essay(14);
    const owner = policy.select(workers, { text })!;

    const chosen = policy.select(
      workers.filter((w) => w !== owner),
      { text },
    );

    expect(chosen).not.toBe(owner);
    expect(policy.stats().reasons.stale_match).toBe(1);
  });

  it('a removed worker is never chosen and its entries are gone', async () => {
    const { registry, workers } = await fleet(3);
    const policy = createPolicy('cache_aware');
    const texts = [0, 1, 2, 3, 4, 5].map((i) => essay(20 + i));
    const owners = texts.map((text) => policy.select(workers, { text })!);
    const gone = owners[0]!;
    await registry.remove(gone.id);
    policy.removeWorker(gone.url);

    const tree = cacheAwareTreeOf(policy, '', 'text')!;
    expect(tree.sizeOf(gone.url)).toBe(0);
    expect(tree.idOf(gone.url)).toBe(-1);
    for (const text of texts) expect(policy.select(workers, { text })).not.toBe(gone);
  });
});

describe('cache_aware: odd candidate lists', () => {
  it('[a, {}, 3, null, b], holes and undefined entries, with text and with tokens: a hit still follows its prefix', async () => {
    const { workers } = await fleet(2);
    const [a, b] = workers as [Worker, Worker];
    // biome-ignore lint/suspicious/noSparseArray: a list with a hole is the case under test
    const sparse = [a, , b] as Worker[];
    const lists = [[a, {}, 3, null, b], sparse, [undefined, a, undefined, b]] as Worker[][];
    const policy = createPolicy('cache_aware');
    const tokens = Array.from({ length: 64 }, (_, i) => i);

    for (const list of lists) {
      for (const request of [{ text: essay(30 + lists.indexOf(list)) }, { tokens, model: 'm' }]) {
        const first = policy.select(list, request);
        expect([a, b]).toContain(first);
        expect(policy.select(list, request)).toBe(first);
      }
    }
    expect(policy.stats().reasons.stale_match).toBe(0);
  });

  it('an object carrying a worker’s URL is not that worker: the match still goes to the real one', async () => {
    const { workers } = await fleet(2);
    const [a, b] = workers as [Worker, Worker];
    const impostor = { url: a.url, id: a.id, load: 0 };
    const list = [impostor, a, b] as unknown as Worker[];
    const policy = createPolicy('cache_aware');
    const text = essay(33);
    expect(policy.select(list, { text })).toBe(a);

    expect(policy.select(list, { text })).toBe(a);

    expect(policy.stats().reasons).toMatchObject({ cache_hit: 1, stale_match: 0 });
  });
});

describe('cache_aware: token requests', () => {
  const tokens = (seed: number, n: number) =>
    Array.from({ length: n }, (_, i) => (seed * 1000 + i) % 50_000);

  it('token requests shorter than one page match nothing and store nothing', async () => {
    const { workers } = await fleet(2);
    const policy = createPolicy('cache_aware', { pageSize: 16 });

    policy.select(workers, { tokens: tokens(1, 15) });
    policy.select(workers, { tokens: tokens(1, 15) });

    expect(policy.stats().reasons).toMatchObject({ cache_hit: 0, cache_miss: 2 });
    expect(cacheAwareTreeOf(policy, '', 'tokens')?.nodeCount ?? 1).toBe(1);
  });

  it('requests sharing full pages stick; a partial trailing page never matches', async () => {
    const { workers } = await fleet(4);
    const policy = createPolicy('cache_aware', { pageSize: 4, cacheThreshold: 0.5 });
    const owner = policy.select(workers, { tokens: tokens(2, 40) })!;

    expect(policy.select(workers, { tokens: [...tokens(2, 40), 9, 9] })).toBe(owner); // 2 extra: partial page
    expect(policy.stats().reasons.cache_hit).toBe(1);
    expect(cacheAwareTreeOf(policy, '', 'tokens')!.sizeOf(owner.url)).toBe(40);
  });

  it('tokens win over text when a request has both', async () => {
    const { workers } = await fleet(2);
    const policy = createPolicy('cache_aware');
    policy.select(workers, { tokens: tokens(3, 64), text: 'ignored' });

    expect(cacheAwareTreeOf(policy, '', 'text')).toBeUndefined();
    expect(cacheAwareTreeOf(policy, '', 'tokens')!.nodeCount).toBe(2);
  });
});

describe('cache_aware: event-driven mode', () => {
  const prompt = Array.from({ length: 64 }, (_, i) => 500 + i); // 4 blocks of 16

  async function eventFleet(decideBy: 'ttft' | 'load' = 'ttft') {
    const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
    for (let i = 0; i < 4; i++)
      await registry.register({ url: `http://kv${i}:8000`, models: ['m'] });
    const workers = registry.getByModel('m');
    const policy = createPolicy('cache_aware', { decideBy });
    return { workers, policy, hashes: blockHashes(prompt) };
  }

  it('the worker holding the most consecutive prefix blocks wins', async () => {
    const { workers, policy, hashes } = await eventFleet();
    policy.applyKvEvents(workers[0]!.url, [
      { type: 'stored', model: 'm', hashes: hashes.slice(0, 1) },
    ]);
    policy.applyKvEvents(workers[1]!.url, [
      { type: 'stored', model: 'm', hashes: hashes.slice(0, 3) },
    ]);
    policy.applyKvEvents(workers[2]!.url, [
      { type: 'stored', model: 'm', hashes: [hashes[0]!, hashes[2]!, hashes[3]!] },
    ]);

    expect(policy.select(workers, { model: 'm', tokens: prompt })).toBe(workers[1]);
    expect(policy.stats().reasons.event_overlap).toBe(1);
  });

  it("decideBy 'load', equal overlap: the lower load wins, then the smaller block count", async () => {
    const { workers, policy, hashes } = await eventFleet('load');
    const other = blockHashes(prompt.map((t) => t + 1));
    policy.applyKvEvents(workers[0]!.url, [
      { type: 'stored', model: 'm', hashes: hashes.slice(0, 2) },
    ]);
    policy.applyKvEvents(workers[1]!.url, [
      { type: 'stored', model: 'm', hashes: [...hashes.slice(0, 2), ...other] },
    ]);
    policy.applyKvEvents(workers[2]!.url, [
      { type: 'stored', model: 'm', hashes: hashes.slice(0, 2) },
    ]);
    const leases = load(workers[0]!, 2);

    // workers 1 and 2 tie on overlap and load; worker 2 holds fewer blocks.
    expect(policy.select(workers, { model: 'm', tokens: prompt })).toBe(workers[2]);
    leases.push(...load(workers[2]!, 3));
    expect(policy.select(workers, { model: 'm', tokens: prompt })).toBe(workers[1]); // now the lowest load
    for (const lease of leases) lease.release();
  });

  it('no overlap goes to the prompt’s owner on the ring, as a miss in tree mode does', async () => {
    const { workers, policy } = await eventFleet();
    const ring = createPolicy('prefix_hash');
    policy.applyKvEvents(workers[3]!.url, [
      { type: 'stored', model: 'm', hashes: blockHashes(prompt.map((t) => t * 2)) },
    ]);

    const owner = ring.select(workers, { model: 'm', tokens: prompt });
    expect(owner).not.toBe(workers[0]); // what the least-loaded rule would pick (all idle)
    expect(policy.select(workers, { model: 'm', tokens: prompt })).toBe(owner);
    expect(policy.stats().reasons.cache_miss).toBe(1);
  });

  it('with missPlacement least_load, no overlap goes to the least-loaded worker', async () => {
    const { workers } = await eventFleet();
    const policy = createPolicy('cache_aware', { missPlacement: 'least_load' });
    policy.applyKvEvents(workers[3]!.url, [
      { type: 'stored', model: 'm', hashes: blockHashes(prompt.map((t) => t * 2)) },
    ]);
    // Worker 1 alone has nothing in flight.
    const leases = [...load(workers[0]!, 1), ...load(workers[2]!, 1), ...load(workers[3]!, 2)];

    expect(policy.select(workers, { model: 'm', tokens: prompt })).toBe(workers[1]);
    expect(policy.stats().reasons.cache_miss).toBe(1);
    for (const lease of leases) lease.release();
  });

  it('a miss placed while its events are due draws the same prompt to the same worker (pendingTtlMs)', async () => {
    // Arrange: event mode is on for the model (another prompt's blocks are known); a new prompt
    // is placed on the least-loaded worker, which then gets busier before its engine reports it.
    const { workers } = await eventFleet();
    let now = 0;
    const make = (pendingTtlMs?: number) =>
      createPolicy('cache_aware', {
        missPlacement: 'least_load',
        clock: () => now,
        ...(pendingTtlMs === undefined ? {} : { pendingTtlMs }),
      });
    const other = blockHashes(prompt.map((t) => t + 7));
    for (const ttl of [undefined, 0] as const) {
      const policy = make(ttl);
      policy.applyKvEvents(workers[3]!.url, [{ type: 'stored', model: 'm', hashes: other }]);
      const first = policy.select(workers, { model: 'm', tokens: prompt })!;
      const leases = load(first, 2);
      const again = policy.select(workers, { model: 'm', tokens: prompt });
      // Act / Assert: with the default TTL the placement holds; with 0 the prompt moves.
      if (ttl === undefined) {
        expect(again).toBe(first);
        expect(policy.stats().reasons.cache_hit).toBe(1);
        now += 10_001; // past the TTL: a miss again, placed on the least-loaded worker
        expect(policy.select(workers, { model: 'm', tokens: prompt })).not.toBe(first);
      } else {
        expect(again).not.toBe(first);
        expect(policy.stats().reasons.cache_hit).toBe(0);
      }
      for (const lease of leases) lease.release();
      policy.close();
    }
  });

  it("decideBy 'load': a holder over the event-mode bound loses the request to the least-loaded worker (eventLoadFactor)", async () => {
    const { workers, hashes } = await eventFleet();
    for (const eventLoadFactor of [3, Number.POSITIVE_INFINITY]) {
      const policy = createPolicy('cache_aware', {
        decideBy: 'load',
        eventLoadFactor,
        balanceAbsThreshold: 1_000,
      });
      policy.applyKvEvents(workers[2]!.url, [{ type: 'stored', model: 'm', hashes }]);
      // 4 in flight on the holder: the cap is ceil(3 × 5 / 4) = 4, and 4 + 1 exceeds it.
      const leases = load(workers[2]!, 4);
      const chosen = policy.select(workers, { model: 'm', tokens: prompt });
      if (eventLoadFactor === 3) {
        expect(chosen).not.toBe(workers[2]);
        expect(policy.stats().reasons.holder_overloaded).toBe(1);
      } else {
        expect(chosen).toBe(workers[2]);
        expect(policy.stats().reasons.event_overlap).toBe(1);
      }
      for (const lease of leases) lease.release();
      policy.close();
    }
  });

  it('removed and cleared blocks stop counting', async () => {
    const { workers, policy, hashes } = await eventFleet();
    policy.applyKvEvents(workers[2]!.url, [{ type: 'stored', model: 'm', hashes }]);
    policy.applyKvEvents(workers[3]!.url, [
      { type: 'stored', model: 'm', hashes: hashes.slice(0, 2) },
    ]);
    expect(policy.select(workers, { model: 'm', tokens: prompt })).toBe(workers[2]);

    policy.applyKvEvents(workers[2]!.url, [
      { type: 'removed', model: 'm', hashes: hashes.slice(1) },
    ]);
    expect(policy.select(workers, { model: 'm', tokens: prompt })).toBe(workers[3]);

    policy.applyKvEvents(workers[3]!.url, [{ type: 'cleared' }]);
    expect(policy.select(workers, { model: 'm', tokens: prompt })).toBe(workers[2]);
  });

  it('rejects bad events before applying any of them', async () => {
    const { workers, policy, hashes } = await eventFleet();
    expect(() =>
      policy.applyKvEvents(workers[0]!.url, [
        { type: 'stored', model: 'm', hashes },
        { type: 'stored', model: 'm', hashes: [-1n] },
      ]),
    ).toThrow(/block hash/);
    expect(policy.stats().eventModels).toEqual([]);
    expect(() => policy.applyKvEvents(workers[0]!.url, [{ type: 'evicted' } as never])).toThrow(
      /type/,
    );
    expect(() => policy.applyKvEvents('', [])).toThrow(/workerUrl/);
  });
});

describe('cache_aware: eviction and lifecycle', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('evict() trims every worker to maxTreeSize, least recently used first', async () => {
    const { workers } = await fleet(1);
    const policy = createPolicy('cache_aware', { maxTreeSize: 1_000 });
    const texts = [0, 1, 2, 3].map((i) => essay(40 + i, 400));
    for (const text of texts) policy.select(workers, { text });

    policy.evict();

    const tree = cacheAwareTreeOf(policy, '', 'text')!;
    expect(tree.sizeOf(workers[0]!.url)).toBeLessThanOrEqual(1_000);
    expect(tree.match(texts[3]!).matched).toBe(400); // the newest survives
    expect(tree.match(texts[0]!).matched).toBeLessThan(400);
  });

  it('a worker past twice its budget is evicted at once, between timer runs', async () => {
    const { workers } = await fleet(1);
    const policy = createPolicy('cache_aware', { maxTreeSize: 500 });
    for (let i = 0; i < 10; i++) policy.select(workers, { text: essay(60 + i, 400) });

    expect(cacheAwareTreeOf(policy, '', 'text')!.sizeOf(workers[0]!.url)).toBeLessThanOrEqual(
      1_000,
    );
  });

  it('the eviction timer runs every evictionIntervalMs, is unref’d, and stops at close()', async () => {
    vi.useFakeTimers();
    const { workers } = await fleet(1);
    const policy = createPolicy('cache_aware', { maxTreeSize: 100, evictionIntervalMs: 1_000 });
    const unref = vi.spyOn(globalThis, 'setInterval');
    policy.select(workers, { text: essay(80, 150) });
    expect(unref).toHaveBeenCalledTimes(1);
    const tree = cacheAwareTreeOf(policy, '', 'text')!;
    expect(tree.sizeOf(workers[0]!.url)).toBe(150);

    vi.advanceTimersByTime(1_000);
    expect(tree.sizeOf(workers[0]!.url)).toBeLessThanOrEqual(100);

    policy.close();
    expect(vi.getTimerCount()).toBe(0);
    expect(policy.select(workers, { text: 'x' })).toBeUndefined();
    unref.mockRestore();
  });

  it('reset() forgets trees, block data and counters', async () => {
    const { workers } = await fleet(2);
    const policy = createPolicy('cache_aware');
    policy.select(workers, { text: essay(90) });
    policy.applyKvEvents(workers[0]!.url, [{ type: 'stored', hashes: [1n] }]);

    policy.reset();

    expect(policy.stats()).toEqual({
      reasons: {
        cache_hit: 0,
        cache_miss: 0,
        imbalanced: 0,
        stale_match: 0,
        event_overlap: 0,
        holder_overloaded: 0,
      },
      totalSize: 0,
      trees: [],
      eventModels: [],
    });
  });
});
