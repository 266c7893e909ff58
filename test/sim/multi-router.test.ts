/**
 * Several independent routers sharing one fleet: state a router learns from its own traffic
 * (cache_aware's tree) is diluted; placement computed from the request alone is not.
 */
import { describe, expect, it } from 'vitest';
import {
  comparePolicies,
  generatedSharedPrefix,
  type PolicyRun,
  simulate,
  type Workload,
} from '../../src/sim/index.js';

/** `n` requests of 256 tokens of their own, all sent at once. */
function distinct(n: number): Workload {
  return {
    name: 'distinct',
    description: 'distinct',
    parameters: {},
    requests: Array.from({ length: n }, (_, id) => ({
      id,
      promptLength: 256,
      tokens: () => Uint32Array.from({ length: 256 }, (_, i) => id * 1_000 + i),
      outputLength: 8,
    })),
  };
}

/** Everything but the wall-clock routing time. */
const simulated = ({ routingMicrosPerRequest: _, ...rest }: PolicyRun) => rest;

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

  it('round_robin behind 4 routers: the routers start apart, and a seed replays its run', async () => {
    const options = {
      workload: distinct(8),
      policy: 'round_robin',
      routers: 4,
      fleet: { workers: 8 },
    } as const;

    const run = await simulate(options);

    // Each router sends two requests: starting together, all four would send theirs to the same
    // two workers (4 each).
    expect(Math.max(...run.load.perWorker)).toBeLessThan(4);
    expect(simulated(await simulate(options))).toEqual(simulated(run));
  });
});
