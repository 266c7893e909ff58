/**
 * Sanity anchors: figures the simulator must reproduce because they follow from the workload
 * alone, and behaviours that must hold for any credible fleet model.
 */
import { describe, expect, it } from 'vitest';
import {
  ceilingHitRate,
  comparePolicies,
  generatedSharedPrefix,
  simulate,
  singleHotPrefix,
  zeroReuse,
} from '../../src/sim/index.js';

/** Infinite caches and one request at a time: no timing effects at all. */
const ideal = {
  fleet: { workers: 8, cacheTokens: Number.POSITIVE_INFINITY },
  arrivals: { kind: 'closed_loop', concurrency: 1 },
} as const;

describe('sanity anchors', () => {
  it('shared prefix, defaults: the ceiling is 88.2 %, and cache_aware reaches it with ideal caches', async () => {
    const workload = generatedSharedPrefix();
    expect(ceilingHitRate(workload)).toBeCloseTo((64 * 15 * 2048) / (1024 * 2176), 10);
    const run = await simulate({ workload, policy: 'cache_aware', ...ideal });
    expect(run.hitRate).toBeCloseTo(0.8824, 4);
  });

  it('shared prefix, defaults: round_robin over 8 workers reaches 52.5 % (mean of 5 seeds)', async () => {
    // Expected: a group's 16 prompts land on 8·(1 − (7/8)^16) ≈ 7.06 distinct workers, each of
    // which prefills the system prompt once: (16 − 7.06) · 2048 / (16 · 2176) = 52.6 %.
    const rates: number[] = [];
    for (let seed = 1; seed <= 5; seed++) {
      const workload = generatedSharedPrefix({ seed });
      const run = await simulate({ workload, policy: 'round_robin', seed, ...ideal });
      expect(run.hitRate).toBeGreaterThan(0.5);
      expect(run.hitRate).toBeLessThan(0.55);
      rates.push(run.hitRate);
    }
    const mean = rates.reduce((a, b) => a + b, 0) / rates.length;
    expect(mean).toBeGreaterThan(0.515);
    expect(mean).toBeLessThan(0.535);
  });

  it("single hot prefix on 2 workers at 80 % load: cache_aware's TTFT p50 is within 10 % of round_robin's", async () => {
    const workload = singleHotPrefix();
    const c = await comparePolicies({
      workload,
      policies: ['round_robin', 'cache_aware'],
      fleet: { workers: 2 },
    });
    const [rr, ca] = c.runs;
    expect(ca!.ttftMs.p50).toBeLessThanOrEqual(1.1 * rr!.ttftMs.p50);
    expect(ca!.load.maxOverMean).toBeLessThan(1.1);
  });

  // The hit bound belongs to `decideBy: 'load'` (the cost model spreads a hot prefix by cost).
  it("…and with decideBy 'load' without its hit bound (loadFactor: Infinity) it is not: the bound is what spreads the prefix", async () => {
    const c = await comparePolicies({
      workload: singleHotPrefix(),
      policies: ['round_robin', 'cache_aware'],
      policyConfigs: { cache_aware: { decideBy: 'load', loadFactor: Number.POSITIVE_INFINITY } },
      fleet: { workers: 2 },
    });
    const [rr, ca] = c.runs;
    expect(ca!.ttftMs.p50).toBeGreaterThan(1.1 * rr!.ttftMs.p50);
  });

  it('zero reuse: every policy hits ≈ 0 % and no worker ever holds a useful prefix', async () => {
    const c = await comparePolicies({ workload: zeroReuse() });
    expect(c.ceiling).toBe(0);
    for (const run of c.runs) {
      expect(run.hitRate, run.policy).toBeLessThan(0.001);
      expect(run.precision, run.policy).toBeUndefined();
      expect(run.completed).toBe(512);
    }
  });
});
