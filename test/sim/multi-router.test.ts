/**
 * Several independent routers sharing one fleet: state a router learns from its own traffic
 * (cache_aware's tree) is diluted; placement computed from the request alone is not.
 */
import { describe, expect, it } from 'vitest';
import { comparePolicies, generatedSharedPrefix } from '../../src/sim/index.js';

describe('multi-router mode', () => {
  it('4 routers cost cache_aware hit rate; consistent_hashing routes exactly as one router does', async () => {
    const workload = generatedSharedPrefix();
    const policies = ['consistent_hashing', 'cache_aware'] as const;
    const one = await comparePolicies({ workload, policies });
    const four = await comparePolicies({ workload, policies, routers: 4 });
    expect(four.routers).toBe(4);
    const [ch1, ca1] = one.runs;
    const [ch4, ca4] = four.runs;
    expect(ca4!.hitRate).toBeLessThan(ca1!.hitRate - 0.05);
    expect(ch4!.load.perWorker).toEqual(ch1!.load.perWorker);
    expect(ch4!.hitRate).toBe(ch1!.hitRate);
  });
});
