/**
 * LoRA adapters in the simulator: the engines' adapter slots (LRU of idle adapters, a load time
 * that blocks the step, waiting when every slot is busy), the `lora` workload, adapter reports,
 * block keys that never match across adapters, and `adapterAware` runs.
 */
import { describe, expect, it } from 'vitest';
import type { LoadReport, Policy } from '../../src/index.js';
import { AdapterSlots } from '../../src/sim/adapter-slots.js';
import { keyByAdapter } from '../../src/sim/adapters.js';
import { blockKeys } from '../../src/sim/block-keys.js';
import { Engine, type Job } from '../../src/sim/engine.js';
import { EventQueue } from '../../src/sim/event-queue.js';
import { DEFAULT_FLEET_MODEL, type FleetModel } from '../../src/sim/fleet-model.js';
import {
  comparePolicies,
  formatComparison,
  generatedSharedPrefix,
  loraAdapters,
  renderHtmlReport,
  simulate,
} from '../../src/sim/index.js';
import { deliverLoads } from '../../src/sim/load-polls.js';
import type { SimRequest } from '../../src/sim/workload.js';

describe('AdapterSlots', () => {
  it('loads into free slots, then evicts the least recently used idle adapter', () => {
    const slots = new AdapterSlots(2);

    expect(slots.acquire('a')).toBe('loaded');
    expect(slots.acquire('b')).toBe('loaded');
    slots.release('a');
    slots.release('b');
    expect(slots.acquire('a')).toBe('resident'); // a is now the most recently used
    slots.release('a');
    expect(slots.acquire('c')).toBe('loaded'); // evicts b

    expect(slots.resident()).toEqual(['a', 'c']);
    expect(slots.loads).toBe(3);
  });

  it('refuses a new adapter while every slot holds one with requests running', () => {
    const slots = new AdapterSlots(1);
    slots.acquire('a');

    expect(slots.admits('b')).toBe(false);
    expect(slots.acquire('b')).toBe('full');
    expect(slots.admits('a')).toBe(true);
    slots.release('a');
    expect(slots.acquire('b')).toBe('loaded');
    expect(slots.running()).toEqual(['b']);
  });

  it('forgets idle adapters on a restart, keeping those of running requests', () => {
    const slots = new AdapterSlots(3);
    slots.acquire('a');
    slots.acquire('b');
    slots.release('b');

    slots.restart();

    expect(slots.resident()).toEqual(['a']);
  });
});

function request(id: number, adapter: string | undefined, length = 1_600): SimRequest {
  const tokens = new Uint32Array(length).map((_, i) => 7 + i);
  return {
    id,
    promptLength: length,
    outputLength: 2,
    tokens: () => tokens,
    ...(adapter === undefined ? {} : { adapter }),
  };
}

/** Runs one engine over requests submitted at time 0, in order; returns each one's TTFT and start. */
function run(model: Partial<FleetModel>, requests: SimRequest[]) {
  const m = { ...DEFAULT_FLEET_MODEL, ...model };
  const queue = new EventQueue();
  const done = new Map<number, { ttft: number; cached: number }>();
  const engine = new Engine(0, m, {
    wakeAt: (time) => queue.push(time, 1, 0),
    completed: (job: Job) =>
      done.set(job.request.id, { ttft: job.firstTokenAt - job.sentAt, cached: job.cachedTokens }),
  });
  for (const r of requests) {
    const keys = blockKeys(r.tokens(), m.blockSize);
    if (r.adapter !== undefined) keyByAdapter(keys, r.adapter);
    engine.submit(r, keys, undefined, 0);
  }
  for (let e = queue.pop(); e !== undefined; e = queue.pop()) engine.step(e.time);
  return { done, engine };
}

describe('Engine with LoRA adapters', () => {
  it('adds adapterLoadMs to the first token of a request whose adapter is not loaded', () => {
    const base = run({ adapterLoadMs: 300 }, [request(0, undefined)]);
    const lora = run({ adapterLoadMs: 300 }, [request(0, 'a')]);

    expect(base.done.get(0)!.ttft).toBeCloseTo(200, 6); // 1,600 tokens at 8,000 tok/s
    expect(lora.done.get(0)!.ttft).toBeCloseTo(200 + 300, 6);
    expect(lora.engine.adapters.loads).toBe(1);
  });

  it('makes a request wait while every slot holds an adapter with requests running', () => {
    const { done, engine } = run({ maxLoras: 1, adapterLoadMs: 100 }, [
      request(0, 'a'),
      request(1, 'b'),
    ]);

    expect(done.get(0)!.ttft).toBeCloseTo(200 + 100, 6);
    expect(done.get(1)!.ttft).toBeGreaterThan(done.get(0)!.ttft + 100);
    expect(engine.adapters.loads).toBe(2);
  });

  it('never matches the prefix cache across adapters', () => {
    const { done } = run({ adapterLoadMs: 0 }, [request(0, 'a'), request(1, 'b'), request(2, 'a')]);

    expect(done.get(1)!.cached).toBe(0);
    expect(done.get(2)!.cached).toBeGreaterThan(0);
  });

  it('reports its adapters once one was used: resident, running, waiting and slots', () => {
    const engine = new Engine(
      0,
      { ...DEFAULT_FLEET_MODEL, maxLoras: 3 },
      {
        wakeAt: () => undefined,
        completed: () => undefined,
      },
    );
    const policy = { updateLoads: (r: ReadonlyMap<string, LoadReport>) => reports.push(r) };
    const reports: ReadonlyMap<string, LoadReport>[] = [];

    deliverLoads([policy as unknown as Policy], [engine], ['http://w0'], 0);
    const r = request(0, 'a');
    engine.submit(r, blockKeys(r.tokens(), 16), undefined, 0);
    deliverLoads([policy as unknown as Policy], [engine], ['http://w0'], 1);

    deliverLoads([policy as unknown as Policy], [engine], ['http://w0'], 2, false);

    expect(reports[0]!.get('http://w0')).not.toHaveProperty('adapters');
    expect(reports[2]!.get('http://w0')!.adapters).toEqual({
      running: ['a'],
      waiting: [],
      maxAdapters: 3,
    });
    expect(reports[1]!.get('http://w0')!.adapters).toEqual({
      running: ['a'],
      waiting: [],
      resident: ['a'],
      maxAdapters: 3,
    });
  });
});

describe('the lora workload', () => {
  it('draws adapters by Zipf popularity, each with its own shared prefix, reproducibly', () => {
    const w = loraAdapters({ requests: 2_000, adapters: 8, prefixLength: 32, suffixLength: 8 });
    const counts = new Map<string, number>();
    for (const r of w.requests) counts.set(r.adapter!, (counts.get(r.adapter!) ?? 0) + 1);
    const [a, b] = w.requests.filter((r) => r.adapter === 'lora-0');

    expect(counts.get('lora-0')!).toBeGreaterThan(counts.get('lora-7')! * 4);
    expect(a!.tokens().subarray(0, 32)).toEqual(b!.tokens().subarray(0, 32));
    expect(
      loraAdapters({
        requests: 2_000,
        adapters: 8,
        prefixLength: 32,
        suffixLength: 8,
      }).requests[5]!.tokens(),
    ).toEqual(w.requests[5]!.tokens());
  });

  it('refuses unknown options', () => {
    expect(() => loraAdapters({ adaptors: 3 } as never)).toThrow(/adaptors is not an option/);
  });
});

describe('simulate on the lora workload', () => {
  const workload = loraAdapters({
    requests: 600,
    adapters: 16,
    prefixLength: 256,
    suffixLength: 64,
  });
  const options = {
    workload,
    policy: 'cache_aware' as const,
    fleet: { workers: 4, maxLoras: 2 },
    arrivals: { kind: 'poisson' as const, ratePerSecond: 8 },
    loadPollIntervalMs: 1_000,
  };

  it('reports adapter loads per worker, and adapterAware loads fewer adapters', async () => {
    const plain = await simulate(options);
    const aware = await simulate({ ...options, adapterAware: true });

    expect(plain.adapters!.perWorker).toHaveLength(4);
    expect(plain.adapters!.loads).toBe(plain.adapters!.perWorker.reduce((s, n) => s + n, 0));
    expect(aware.policy).toBe('adapterAware(cache_aware)');
    expect(aware.adapters!.loads).toBeLessThan(plain.adapters!.loads);
  });

  it('has comparePolicies run each policy with and without adapterAware', async () => {
    const c = await comparePolicies({
      ...options,
      policies: ['cache_aware'],
      adapterAware: { spillLoad: 4 },
      oracle: false,
      threads: 1,
    });

    expect(c.runs.map((r) => r.policy)).toEqual(['cache_aware', 'adapterAware(cache_aware)']);
    const text = formatComparison(c);
    expect(text).toContain('adapters  2 LoRA slots per worker, 500 ms per adapter load');
    expect(text).toMatch(/adapter loads\s+loads\/worker max\/min/);
    const html = renderHtmlReport(c);
    expect(html).toContain('Adapter loads');
    expect(html).toContain('<code>maxLoras</code>');
  });

  it('refuses a clock among the adapterAware options', async () => {
    await expect(
      simulate({ ...options, adapterAware: { clock: () => 0 } as never }),
    ).rejects.toThrow(/adapterAware\.clock/);
  });
});

describe('adapterAware is transparent to the simulator’s KV events and shared state', () => {
  const workload = loraAdapters({
    requests: 300,
    adapters: 8,
    prefixLength: 256,
    suffixLength: 64,
  });
  const options = {
    workload,
    policy: 'cache_aware' as const,
    fleet: { workers: 4 },
    arrivals: { kind: 'poisson' as const, ratePerSecond: 8 },
    adapterAware: true,
  };

  it('feeds the engines’ KV events to the wrapped cache_aware: base-model runs as without it', async () => {
    const base = {
      workload: generatedSharedPrefix({ groups: 8, promptsPerGroup: 16 }),
      policy: 'cache_aware' as const,
      fleet: { workers: 4 },
      routers: 2,
      arrivals: { kind: 'poisson' as const, ratePerSecond: 20 },
      kvEvents: true,
    };

    const plain = await simulate(base);
    const wrapped = await simulate({ ...base, adapterAware: true });

    expect(wrapped.decisions.event_overlap).toBeGreaterThan(0);
    expect(wrapped.decisions).toEqual(plain.decisions);
    expect(wrapped.hitRate).toBe(plain.hitRate);
  });

  it('shares the wrapped cache_aware’s placements between routers', async () => {
    const run = await simulate({ ...options, routers: 2, sharedState: 'memory' });

    expect(run.completed).toBe(300);
    expect(run.adapters!.loads).toBeGreaterThan(0);
  });
});
