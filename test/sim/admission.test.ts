/**
 * The simulator's priorities, tenants and admission: the seeded mix of priorities and tenants
 * over any workload, and routers with admission control driven on simulated time — every request
 * served or rejected exactly once, low priorities shed before high ones, deadlines on simulated
 * time, and runs without these options unchanged.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  agentConversations,
  type Comparison,
  comparePolicies,
  generatedSharedPrefix,
  type PolicyRun,
  simulate,
  type Workload,
} from '../../src/sim/index.js';
import { LOW_PRIORITY, RequestMix } from '../../src/sim/request-mix.js';
import { runs } from '../helpers/fc-settings.js';

const small = (): Workload =>
  generatedSharedPrefix({ groups: 8, promptsPerGroup: 24, systemPromptLength: 512, seed: 3 });
const FLEET = { workers: 4 } as const;

/** `run` without its wall-clock figure. */
function strip(run: PolicyRun): PolicyRun {
  return { ...run, routingMicrosPerRequest: 0 };
}

function stripAll(c: Comparison): unknown {
  return { ...c, runs: c.runs.map(strip), oracle: c.oracle && strip(c.oracle) };
}

function rejected(run: PolicyRun): number {
  const r = run.admission!.rejected;
  return r.shed + r.queue_full + r.timeout;
}

describe('the priority and tenant mix', () => {
  it('is a function of the seed and the request: equal seeds give equal mixes', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 0xffff_ffff }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.integer({ min: 1, max: 12 }),
        fc.double({ min: 1, max: 50, noNaN: true }),
        (seed, share, tenants, factor) => {
          const o = { seed, lowPriorityShare: share, tenants, heavyTenantFactor: factor };
          const a = RequestMix.of(o);
          const b = RequestMix.of(o);
          if (share === 0 && tenants === 1) return a === undefined;
          for (let id = 0; id < 200; id += 7) {
            expect(a!.priorityOf(id)).toBe(b!.priorityOf(id));
            expect(a!.tenantOf(id)).toBe(b!.tenantOf(id));
            const tenant = a!.tenantOf(id);
            if (tenants === 1) expect(tenant).toBeUndefined();
            else expect(Number(tenant!.slice('tenant-'.length))).toBeLessThan(tenants);
          }
          return true;
        },
      ),
      runs(50, 300),
    );
  });

  it('draws the low-priority share and the heavy tenant in the proportions asked', () => {
    const mix = RequestMix.of({
      seed: 7,
      lowPriorityShare: 0.25,
      tenants: 4,
      heavyTenantFactor: 10,
    })!;
    const n = 20_000;
    let low = 0;
    let heavy = 0;
    for (let id = 0; id < n; id++) {
      if (mix.priorityOf(id) === LOW_PRIORITY) low++;
      if (mix.tenantOf(id) === 'tenant-0') heavy++;
    }
    expect(low / n).toBeCloseTo(0.25, 1);
    // 10 / (10 + 3) of the requests.
    expect(heavy / n).toBeCloseTo(10 / 13, 1);
    const other = RequestMix.of({
      seed: 8,
      lowPriorityShare: 0.25,
      tenants: 4,
      heavyTenantFactor: 10,
    })!;
    let differ = 0;
    for (let id = 0; id < 200; id++) if (other.priorityOf(id) !== mix.priorityOf(id)) differ++;
    expect(differ).toBeGreaterThan(0);
  });

  it('reaches the routers: the admission figures count each priority and tenant drawn', async () => {
    const workload = small();
    const o = { seed: 5, lowPriorityShare: 0.3, tenants: 3, heavyTenantFactor: 4 };
    const run = await simulate({
      workload,
      policy: 'round_robin',
      fleet: FLEET,
      admission: true,
      ...o,
    });
    const mix = RequestMix.of(o)!;
    const expected = new Map<number, number>();
    const tenants = new Map<string, number>();
    for (const request of workload.requests) {
      const p = mix.priorityOf(request.id) ?? 0;
      expected.set(p, (expected.get(p) ?? 0) + 1);
      const t = mix.tenantOf(request.id)!;
      tenants.set(t, (tenants.get(t) ?? 0) + 1);
    }
    const a = run.admission!;
    expect(new Map(a.byPriority.map((p) => [p.priority, p.requests]))).toEqual(expected);
    expect(new Map(a.tenants.map((t) => [t.tenant, t.requests]))).toEqual(tenants);
  });

  it('is the same in worker threads as in this thread', async () => {
    const options = {
      workload: small(),
      policies: ['round_robin', 'cache_aware'] as const,
      fleet: FLEET,
      load: 1.5,
      oracle: false,
      admission: { maxPrefilling: 2 },
      lowPriorityShare: 0.3,
      tenants: 3,
      heavyTenantFactor: 5,
    };
    const serial = await comparePolicies({ ...options, threads: 1 });
    const threaded = await comparePolicies({ ...options, threads: 2 });
    expect(stripAll(threaded)).toEqual(stripAll(serial));
    expect(serial.runs[0]!.admission!.byPriority.length).toBe(2);
  });
});

describe('simulate with admission', () => {
  it('serves or rejects every request exactly once', async () => {
    for (const load of [0.5, 1.5, 3]) {
      const c = await comparePolicies({
        workload: small(),
        policies: ['round_robin', 'least_load', 'cache_aware'],
        fleet: FLEET,
        load,
        threads: 1,
        oracle: false,
        admission: { maxPrefilling: 2, maxWaitMs: 2_000 },
        lowPriorityShare: 0.3,
      });
      for (const run of c.runs) {
        const a = run.admission!;
        expect(a.served + rejected(run)).toBe(run.requests);
        expect(run.completed).toBe(a.served);
        expect(a.byPriority.reduce((sum, p) => sum + p.served, 0)).toBe(a.served);
        expect(a.tenants.reduce((sum, t) => sum + t.served, 0)).toBe(a.served);
        expect(run.load.perWorker.reduce((sum, n) => sum + n, 0)).toBe(a.served);
      }
    }
  });

  it('accounts for every request with closed-loop arrivals, several routers and shared state', async () => {
    for (const extra of [
      { arrivals: { kind: 'closed_loop' as const, concurrency: 40 } },
      { routers: 3, sharedState: 'memory' },
    ]) {
      const run = await simulate({
        workload: small(),
        policy: 'cache_aware',
        fleet: FLEET,
        arrivals: { kind: 'all_at_once' },
        admission: { maxPrefilling: 1, maxWaitMs: 400 },
        lowPriorityShare: 0.2,
        ...extra,
      });
      expect(run.admission!.served + rejected(run)).toBe(run.requests);
      expect(rejected(run)).toBeGreaterThan(0);
    }
  });

  it('skipLowPriority: the high-priority requests alone, at their own arrivals; followers of a skipped turn still run', async () => {
    const workload = small();
    const o = { seed: 5, lowPriorityShare: 0.4 };
    const mix = RequestMix.of({ ...o, tenants: 1, heavyTenantFactor: 1 })!;
    const high = workload.requests.filter((r) => mix.priorityOf(r.id) === undefined).length;
    expect(high).toBeLessThan(workload.requests.length);
    const base = { workload, policy: 'round_robin', fleet: FLEET, ...o } as const;
    const skipped = await simulate({ ...base, admission: true, skipLowPriority: true });
    expect(skipped.completed).toBe(high);
    expect(skipped.admission!.byPriority.map((p) => [p.priority, p.requests])).toEqual([[0, high]]);
    const whole = await simulate({ ...base, admission: true });
    expect(whole.completed + rejected(whole)).toBe(workload.requests.length);
    // Turns that follow a skipped one are released as after a completion: the run ends.
    const agent = agentConversations({ conversations: 12, seed: 2 });
    const run = await simulate({
      workload: agent,
      policy: 'cache_aware',
      fleet: FLEET,
      ...o,
      skipLowPriority: true,
    });
    const agentMix = agent.requests.filter((r) => mix.priorityOf(r.id) === undefined).length;
    expect(run.completed).toBe(agentMix);
  });

  it('sheds low priority before high under overload', async () => {
    const run = await simulate({
      workload: small(),
      policy: 'least_load',
      fleet: FLEET,
      arrivals: { kind: 'poisson', ratePerSecond: 400 },
      admission: { maxPrefilling: 2, maxWaitMs: 60_000 },
      lowPriorityShare: 0.5,
    });
    const [high, low] = run.admission!.byPriority;
    expect(high!.priority).toBe(0);
    expect(low!.priority).toBe(LOW_PRIORITY);
    expect(run.admission!.rejected.shed).toBeGreaterThan(0);
    expect(high!.served).toBe(high!.requests);
    expect(low!.served).toBeLessThan(low!.requests);
  });

  it('turns requests away when their wait runs out in simulated time, the same each run', async () => {
    const options = {
      workload: small(),
      policy: 'round_robin' as const,
      fleet: FLEET,
      arrivals: { kind: 'all_at_once' as const },
      admission: { maxPrefilling: 1, maxWaitMs: 300 },
    };
    const first = await simulate(options);
    const second = await simulate(options);
    expect(first.admission!.rejected.timeout).toBeGreaterThan(0);
    expect(first.admission!.queueWaitMs.p99).toBeLessThanOrEqual(300);
    expect(first.admission!.servedAfterWait).toBeGreaterThan(0);
    expect(strip(second)).toEqual(strip(first));
  });

  it('leaves a run without these options as it was', async () => {
    const base = { workload: small(), policy: 'cache_aware' as const, fleet: FLEET, seed: 2 };
    const plain = await simulate(base);
    const off = await simulate({
      ...base,
      admission: false,
      lowPriorityShare: 0,
      tenants: 1,
      heavyTenantFactor: 1,
    });
    expect(strip(off)).toEqual(strip(plain));
    expect(plain.admission).toBeUndefined();
  });

  it('refuses a clock in the admission options, and bad priorities or tenants in a workload', async () => {
    const workload = small();
    await expect(
      simulate({ workload, policy: 'round_robin', admission: { clock: () => 0 } as never }),
    ).rejects.toThrow(/admission\.clock/);
    const bad = {
      ...workload,
      requests: workload.requests.map((r, i) =>
        i === 2 ? { ...r, tokens: r.tokens, priority: 1.5 } : r,
      ),
    };
    await expect(simulate({ workload: bad, policy: 'round_robin' })).rejects.toThrow(
      /requests\[2\]\.priority/,
    );
  });
});
