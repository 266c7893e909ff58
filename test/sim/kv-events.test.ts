/**
 * The engines' KV-cache events in the simulator: every router fed by events ends with the
 * engines' caches as fleetroute keys, restarts empty an engine (and, with events, every
 * router's view of it), a lost batch clears, and with events off nothing changes.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { CacheAwarePolicy } from '../../src/policies/cache-aware.js';
import { comparePolicies } from '../../src/sim/compare.js';
import { Engine } from '../../src/sim/engine.js';
import { KvEventFeed } from '../../src/sim/kv-event-feed.js';
import { PrefixCache } from '../../src/sim/prefix-cache.js';
import type { PolicyRun } from '../../src/sim/result.js';
import { SimRouters } from '../../src/sim/sim-routers.js';
import { simulate } from '../../src/sim/simulation.js';
import {
  resolveSimulationOptions,
  type SimulationOptions,
} from '../../src/sim/simulation-options.js';
import { SimulationRun } from '../../src/sim/simulation-run.js';
import { generatedSharedPrefix, multiTurnChat } from '../../src/sim/workloads/index.js';

/** One delivery to a router, as the policy received it. */
interface Delivery {
  readonly policy: object;
  readonly url: string;
  readonly type: 'stored' | 'removed' | 'cleared';
  readonly keys: readonly number[];
  readonly at: number;
}

const applyKeys = CacheAwarePolicy.prototype.applyKvKeys;
const applyEvents = CacheAwarePolicy.prototype.applyKvEvents;
const restart = Engine.prototype.restart;

/** Records every KV event the `cache_aware` policies receive, with the run's time. */
function recordDeliveries(clock: () => number): Delivery[] {
  vi.restoreAllMocks();
  const log: Delivery[] = [];
  vi.spyOn(CacheAwarePolicy.prototype, 'applyKvKeys').mockImplementation(function (
    this: CacheAwarePolicy,
    url,
    type,
    model,
    keys,
  ) {
    log.push({ policy: this, url, type, keys: [...keys], at: clock() });
    applyKeys.call(this, url, type, model, keys);
  });
  vi.spyOn(CacheAwarePolicy.prototype, 'applyKvEvents').mockImplementation(function (
    this: CacheAwarePolicy,
    url,
    events,
  ) {
    for (const event of events) {
      if (event.type === 'cleared')
        log.push({ policy: this, url, type: 'cleared', keys: [], at: clock() });
    }
    applyEvents.call(this, url, events);
  });
  return log;
}

/** Each router's view, replayed from its deliveries: policy → worker URL → block keys. */
function replay(log: readonly Delivery[]): Map<object, Map<string, Set<number>>> {
  const views = new Map<object, Map<string, Set<number>>>();
  for (const d of log) {
    let view = views.get(d.policy);
    if (view === undefined) {
      view = new Map();
      views.set(d.policy, view);
    }
    let held = view.get(d.url);
    if (held === undefined) {
      held = new Set();
      view.set(d.url, held);
    }
    if (d.type === 'cleared') held.clear();
    else if (d.type === 'stored') for (const k of d.keys) held.add(k);
    else for (const k of d.keys) held.delete(k);
  }
  return views;
}

/** The blocks `engine`'s cache holds, as fleetroute keys. */
function engineKeys(engine: Engine): number[] {
  const keys: number[] = [];
  engine.cache.forEachTagged((tags, from, count) => {
    for (let i = from; i < from + count; i++) keys.push(tags[i]!);
  });
  return keys.sort((a, b) => a - b);
}

const sorted = (set: Set<number> | undefined) => [...(set ?? [])].sort((a, b) => a - b);

/** A run through the internal pieces, so the engines and policies can be read afterwards. */
async function runInside(options: SimulationOptions) {
  const o = resolveSimulationOptions(options);
  const run = new SimulationRun(o);
  const log = recordDeliveries(run.clock);
  const routers = new SimRouters();
  try {
    await routers.open(o, run.urls, run.clock);
    await run.run(routers);
    const stats = routers.policies.map((p) => (p as CacheAwarePolicy).stats());
    return { run, log, stats, policies: routers.policies, result: run.result() };
  } finally {
    await routers.close();
  }
}

/** Small caches, so blocks are evicted as well as stored; answers are cached too (chat). */
const CHAT: SimulationOptions = {
  workload: multiTurnChat({ users: 24, rounds: 4, seed: 3, systemPromptLength: 1 }),
  policy: 'cache_aware',
  fleet: { workers: 4, cacheTokens: 4_096 },
  arrivals: { kind: 'poisson', ratePerSecond: 40 },
  routers: 4,
  kvEvents: true,
  kvEventDelayMs: 0,
};

afterEach(() => {
  vi.restoreAllMocks();
});

describe('KV events in the simulator', () => {
  it('reach every router: at delay 0 without loss, each router ends holding every engine cache as fleetroute keys', async () => {
    const { run, log, stats, policies } = await runInside(CHAT);
    expect(log.some((d) => d.type === 'removed')).toBe(true);
    const views = replay(log);
    expect(views.size).toBe(4);
    for (const policy of policies) {
      const view = views.get(policy)!;
      run.engines.forEach((engine, w) => {
        expect(sorted(view.get(run.urls[w]!))).toEqual(engineKeys(engine));
      });
    }
    for (const engine of run.engines) expect(engineKeys(engine).length).toBeGreaterThan(0);
    // Every router scored requests from the events.
    for (const s of stats) {
      expect(s.eventModels).toEqual(['']);
      expect(s.reasons.event_overlap).toBeGreaterThan(0);
    }
  });

  it('batches per engine step and delivers them in order after the delay', async () => {
    const { log } = await runInside({ ...CHAT, routers: 2, kvEventDelayMs: 7 });
    const first = log[0]!.policy;
    const times = log.filter((d) => d.policy === first).map((d) => d.at);
    expect(times).toEqual([...times].sort((a, b) => a - b));
    expect(times[0]).toBeGreaterThanOrEqual(7);
  });

  it('an engine restart empties its cache; with events every router is told cleared after the delay', async () => {
    const restarts: { worker: number; at: number; left: number }[] = [];
    let clock = () => 0;
    const options = { ...CHAT, kvEventDelayMs: 5, engineRestarts: 3 };
    const o = resolveSimulationOptions(options);
    const run = new SimulationRun(o);
    clock = run.clock;
    const log = recordDeliveries(run.clock);
    vi.spyOn(Engine.prototype, 'restart').mockImplementation(function (this: Engine) {
      restart.call(this);
      restarts.push({ worker: this.index, at: clock(), left: engineKeys(this).length });
    });
    const routers = new SimRouters();
    await routers.open(o, run.urls, run.clock);
    try {
      await run.run(routers);
    } finally {
      await routers.close();
    }
    expect(restarts.map((r) => r.worker)).toEqual([0, 1, 2]);
    expect(restarts.every((r) => r.left === 0)).toBe(true);
    const cleared = log.filter((d) => d.type === 'cleared');
    expect(cleared).toHaveLength(3 * 4);
    for (const r of restarts) {
      const told = cleared.filter((d) => d.url === run.urls[r.worker]);
      expect(new Set(told.map((d) => d.policy)).size).toBe(4);
      for (const d of told) expect(d.at).toBe(r.at + 5);
    }
    // Blocks published after the restart reach the routers again.
    const views = replay(log);
    for (const view of views.values()) {
      run.engines.forEach((engine, w) => {
        expect(sorted(view.get(run.urls[w]!))).toEqual(engineKeys(engine));
      });
    }
  });

  it('restarts cost hit rate in approximate mode, where routers are not told', async () => {
    const calls = recordDeliveries(() => 0);
    const approximate = { ...CHAT, kvEvents: false, routers: 1 };
    const steady = await simulate(approximate);
    const restarted = await simulate({ ...approximate, engineRestarts: 8 });
    expect(calls).toHaveLength(0);
    expect(restarted.hitRate).toBeLessThan(steady.hitRate);
  });

  it('a lost batch clears that worker in the router, which then goes on with later batches', async () => {
    const all = await runInside({ ...CHAT, routers: 2, kvEventLoss: 1 });
    expect(all.log.every((d) => d.type === 'cleared')).toBe(true);
    expect(all.log.length).toBeGreaterThan(0);

    const some = await runInside({ ...CHAT, routers: 2, kvEventLoss: 0.3 });
    const cleared = some.log.filter((d) => d.type === 'cleared').length;
    const batches = new Set(some.log.map((d) => `${String(d.at)} ${d.url}`)).size;
    expect(cleared / (batches * 2)).toBeGreaterThan(0.15);
    expect(cleared / (batches * 2)).toBeLessThan(0.45);
    // What a router holds is at most what the engine holds: a lost removal cleared the worker.
    for (const view of replay(some.log).values()) {
      some.run.engines.forEach((engine, w) => {
        const held = new Set(engineKeys(engine));
        for (const key of view.get(some.run.urls[w]!) ?? []) expect(held.has(key)).toBe(true);
      });
    }
    // The draws come from the run's seed: the same run again is the same.
    const again = await runInside({ ...CHAT, routers: 2, kvEventLoss: 0.3 });
    expect(again.log.map((d) => [d.type, d.url, d.at, d.keys.length])).toEqual(
      some.log.map((d) => [d.type, d.url, d.at, d.keys.length]),
    );
  });

  it('with kvEvents off, or no policy that takes events, nothing is computed and figures are unchanged', async () => {
    const log = recordDeliveries(() => 0);
    const base = { ...CHAT, kvEvents: false };
    const figures = (r: PolicyRun) => ({ ...r, routingMicrosPerRequest: 0 });
    const off = await simulate(base);
    const { kvEvents: _on, kvEventDelayMs: _delay, ...untouched } = CHAT;
    const defaults = await simulate(untouched);
    expect(figures(off)).toEqual(figures(defaults));
    const rr = await simulate({ ...base, policy: 'round_robin' });
    const rrEvents = await simulate({ ...base, policy: 'round_robin', kvEvents: true });
    expect(figures(rrEvents)).toEqual(figures(rr));
    expect(log).toHaveLength(0);
  });

  it('rejects a block size that is not a multiple of the page size', () => {
    expect(() =>
      resolveSimulationOptions({ ...CHAT, fleet: { blockSize: 8 }, kvEvents: true }),
    ).toThrow(/fleet\.blockSize \(8\) must equal cache_aware's pageSize \(16\)/);
    expect(() =>
      resolveSimulationOptions({ ...CHAT, fleet: { blockSize: 8 }, policyConfig: { pageSize: 4 } }),
    ).not.toThrow();
    expect(() =>
      resolveSimulationOptions({ ...CHAT, fleet: { blockSize: 8 }, kvEvents: false }),
    ).not.toThrow();
  });

  it('feeds several pages per block when the block size is a multiple of the page size', async () => {
    const { run, log } = await runInside({
      ...CHAT,
      routers: 2,
      fleet: { ...CHAT.fleet, blockSize: 32 },
    });
    for (const d of log) expect(d.keys.length % 2).toBe(0);
    for (const view of replay(log).values()) {
      run.engines.forEach((engine, w) => {
        expect(sorted(view.get(run.urls[w]!))).toEqual(engineKeys(engine));
      });
    }
  });
});

describe('KvEventFeed', () => {
  it('keeps the order of one step: a block evicted then stored again ends stored', () => {
    const calls: [string, readonly number[]][] = [];
    const policy = {
      name: 'cache_aware',
      select: () => undefined,
      applyKvKeys: (_url: string, type: string, _model: unknown, keys: readonly number[]) =>
        calls.push([type, [...keys]]),
      applyKvEvents: () => calls.push(['cleared', []]),
    };
    const scheduled: number[] = [];
    const feed = KvEventFeed.of(
      [policy as never],
      ['http://w0'],
      { delayMs: 3, loss: 0, seed: 1, pageSize: 16, blockSize: 16 },
      (time) => scheduled.push(time),
    )!;
    const cache = new PrefixCache(1);
    feed.attach([{ index: 0, cache } as unknown as Engine]);
    const a = Float64Array.of(1);
    const b = Float64Array.of(2);
    cache.admit(a, 0, 1, false);
    cache.keep(a, 0, 1, Float64Array.of(10)); // A stored
    cache.admit(b, 0, 1, false); // A evicted
    cache.keep(b, 0, 1, Float64Array.of(20)); // B stored
    cache.release([], 0);
    cache.admit(a, 0, 1, true); // B evicted (forced past capacity)
    cache.keep(a, 0, 1, Float64Array.of(10)); // A stored again
    feed.flush(0, 100);
    expect(scheduled).toEqual([103]);
    feed.deliver(0);
    const held = new Set<number>();
    for (const [type, keys] of calls) {
      for (const k of keys) type === 'stored' ? held.add(k) : held.delete(k);
    }
    expect([...held]).toEqual([10]);
    expect(calls.map(([type]) => type)).toEqual([
      'stored',
      'removed',
      'stored',
      'removed',
      'stored',
    ]);
  });
});

describe('comparePolicies with kvEvents', () => {
  it('runs cache_aware approximate and with events, at 1 router and at K', async () => {
    const workload = generatedSharedPrefix({ groups: 8, promptsPerGroup: 8 });
    const c = await comparePolicies({
      workload,
      policies: ['round_robin', 'cache_aware'],
      fleet: { workers: 4 },
      routers: 3,
      kvEvents: true,
      kvEventDelayMs: 2,
      threads: 1,
      oracle: false,
    });
    expect(c.runs.map((r) => r.policy)).toEqual([
      'round_robin',
      'cache_aware (1 router)',
      'cache_aware+events (1 router)',
      'cache_aware',
      'cache_aware+events',
    ]);
    expect(c.routers).toBe(3);
    expect(c.kvEvents).toEqual({ delayMs: 2, loss: 0 });
    const byLabel = new Map(c.runs.map((r) => [r.policy, r]));
    // Three routers with events keep the hit rate the approximate tree loses.
    expect(byLabel.get('cache_aware+events')!.hitRate).toBeGreaterThan(
      byLabel.get('cache_aware')!.hitRate,
    );
  });

  it('without kvEvents runs each policy once, as before', async () => {
    const c = await comparePolicies({
      workload: generatedSharedPrefix({ groups: 4, promptsPerGroup: 4 }),
      policies: ['cache_aware'],
      routers: 2,
      threads: 1,
      oracle: false,
    });
    expect(c.runs.map((r) => r.policy)).toEqual(['cache_aware']);
    expect(c.kvEvents).toBeUndefined();
  });
});
