/**
 * The quality targets of docs/quality.md, on the simulator's default run (`npm start`):
 * shared-prefix defaults, 8 workers, Poisson arrivals at 80 % of capacity. The simulation is
 * deterministic, so these are exact checks of routing behaviour, not of timing.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import {
  type Comparison,
  comparePolicies,
  generatedSharedPrefix,
  type PolicyRun,
} from '../../src/sim/index.js';

let c: Comparison;
const run = (policy: string): PolicyRun => c.runs.find((r) => r.policy === policy)!;

beforeAll(async () => {
  c = await comparePolicies({ workload: generatedSharedPrefix() });
});

describe('quality targets (shared prefix, 8 workers, 80 % load)', () => {
  it('runs every default policy on Poisson arrivals at 80 % of capacity', () => {
    expect(c.arrivals).toMatch(/^Poisson, .* \(80 % of capacity\)$/);
    expect(c.runs.map((r) => r.policy)).toContain('cache_aware');
    for (const r of c.runs) expect(r.completed, r.policy).toBe(1024);
  });

  it('cache_aware reaches ≥ 90 % of the ceiling and ≥ 1.6 × round_robin’s hit rate', () => {
    expect(run('cache_aware').hitRate).toBeGreaterThanOrEqual(0.9 * c.ceiling);
    expect(run('cache_aware').hitRate).toBeGreaterThanOrEqual(1.6 * run('round_robin').hitRate);
  });

  it('cache_aware’s TTFT p50 is ≤ 0.5 × round_robin’s, with per-worker load max/mean ≤ 1.3', () => {
    expect(run('cache_aware').ttftMs.p50).toBeLessThanOrEqual(0.5 * run('round_robin').ttftMs.p50);
    expect(run('cache_aware').load.maxOverMean).toBeLessThanOrEqual(1.3);
  });

  it('prefix_hash and consistent_hashing (routing key = group) are within 10 % of cache_aware’s hit rate', () => {
    const best = run('cache_aware').hitRate;
    expect(run('prefix_hash').hitRate).toBeGreaterThanOrEqual(0.9 * best);
    expect(run('consistent_hashing').hitRate).toBeGreaterThanOrEqual(0.9 * best);
  });
});
