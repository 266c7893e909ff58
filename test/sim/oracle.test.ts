/**
 * The oracle run: routing with perfect knowledge of the engines' caches under prefix_hash's
 * bounded-load rule. Its pick rule on a hand-built fleet, its place in a comparison, and how it
 * compares with the policies.
 */
import { describe, expect, it } from 'vitest';
import {
  comparePolicies,
  DEFAULT_POLICIES,
  formatComparison,
  generatedSharedPrefix,
  multiTurnChat,
  simulate,
} from '../../src/sim/index.js';
import { type OracleEngine, OracleView, oraclePolicy } from '../../src/sim/oracle.js';
import type { PrefixCache } from '../../src/sim/prefix-cache.js';
import type { Worker } from '../../src/workers/worker.js';

const URLS = ['http://w0', 'http://w1', 'http://w2', 'http://w3'];

/** An engine whose cache holds the first `held` blocks of any prompt, with `inFlight` requests. */
function engine(held: number, inFlight: number): OracleEngine {
  const cache = { match: (_keys: Float64Array, limit: number) => Math.min(held, limit) };
  return { cache: cache as unknown as PrefixCache, inFlight };
}

/** Workers as the router hands them to a policy: URL, availability, the processed count. */
function workers(available: readonly boolean[] = [true, true, true, true]): Worker[] {
  return URLS.map(
    (url, i) =>
      ({
        url,
        isAvailable: () => available[i]!,
        incrementProcessed: () => undefined,
      }) as unknown as Worker,
  );
}

/** The engine index the oracle picks for a 10-block prompt (160 tokens of 16). */
function pick(engines: OracleEngine[], available?: readonly boolean[]): number | undefined {
  const view = new OracleView(16, URLS);
  view.observe(new Float64Array(10), 161, engines);
  const worker = oraclePolicy(view).select(workers(available));
  return worker === undefined ? undefined : URLS.indexOf(worker.url);
}

describe('the oracle pick', () => {
  it.each([
    // [matches, in flight, expected]; the bound is ceil(1.25 × (total + 1) / 4)
    [[2, 5, 3, 0], [1, 1, 1, 1], 1], // longest match
    [[4, 4, 4, 0], [2, 1, 1, 0], 1], // equal matches: fewest in flight, then lowest index
    [[0, 9, 3, 0], [1, 3, 1, 1], 2], // w1 is over the bound: ceil(1.25 × 7 / 4) = 3 < 3 + 1
    [[0, 0, 0, 0], [0, 0, 0, 0], 0], // nothing cached, idle fleet: lowest index
  ])('matches %j with in flight %j → worker %i', (matches, inFlight, expected) => {
    const engines = matches.map((m, i) => engine(m, inFlight[i]!));
    expect(pick(engines)).toBe(expected);
  });

  it('counts at most (promptLength − 1) / blockSize blocks, as the engine serves them', () => {
    const view = new OracleView(16, URLS);
    // 3 in flight: the bound is ceil(1.25 × 4 / 4) = 2, so every worker is a candidate.
    const engines = [engine(10, 1), engine(9, 0), engine(0, 1), engine(0, 1)];
    // 161 tokens: 10 blocks count, and w0's 10 beat w1's 9 despite its load.
    view.observe(new Float64Array(10), 161, engines);
    expect(oraclePolicy(view).select(workers())?.url).toBe(URLS[0]);
    // 145 tokens: the last token is never cached, so 9 blocks count; w0 and w1 tie, w1 is idle.
    view.observe(new Float64Array(10), 145, engines);
    expect(oraclePolicy(view).select(workers())?.url).toBe(URLS[1]);
  });

  it('never picks an unavailable worker, and returns undefined when none is', () => {
    const engines = [engine(8, 0), engine(1, 0), engine(0, 0), engine(0, 0)];
    expect(pick(engines, [false, true, true, true])).toBe(1);
    expect(pick(engines, [false, false, false, false])).toBeUndefined();
  });
});

describe('the oracle run in a comparison', () => {
  it('is reported as `oracle` by default, absent with oracle: false, and never part of simulate', async () => {
    const workload = generatedSharedPrefix({ groups: 8, promptsPerGroup: 6 });
    const policies = ['round_robin', 'cache_aware'] as const;
    const withOracle = await comparePolicies({ workload, policies, threads: 1 });
    expect(withOracle.oracle?.policy).toBe('oracle');
    expect(withOracle.oracle?.completed).toBe(48);
    expect(withOracle.runs.map((r) => r.policy)).toEqual([...policies]);
    const without = await comparePolicies({ workload, policies, threads: 1, oracle: false });
    expect(without.oracle).toBeUndefined();
    expect('oracle' in without).toBe(false);
    expect(without.runs).toHaveLength(2);
    const alone = await simulate({ workload, policy: 'cache_aware' });
    expect(alone.policy).toBe('cache_aware');
  });

  it('puts an oracle row and an "of oracle" column in the text table', async () => {
    const workload = generatedSharedPrefix({ groups: 8, promptsPerGroup: 6 });
    const policies = ['round_robin'] as const;
    const c = await comparePolicies({ workload, policies, threads: 1 });
    const text = formatComparison(c);
    const lines = text.split('\n');
    const header = lines.find((l) => l.startsWith('policy'))!;
    expect(header).toMatch(/of ceiling +of oracle/);
    const oracleRow = lines.find((l) => l.startsWith('oracle '))!;
    expect(oracleRow).toContain('100.0 %');
    const share = `${((c.runs[0]!.hitRate / c.oracle!.hitRate) * 100).toFixed(1)} %`;
    expect(lines.find((l) => l.startsWith('round_robin'))).toContain(share);
    const plain = formatComparison(await comparePolicies({ workload, policies, oracle: false }));
    expect(plain).not.toContain('oracle');
  });
});

/*
 * The oracle is greedy and bounded: it sees what the caches hold now, not what the prefills in
 * flight are about to add, and it leaves a worker once its load passes prefix_hash's bound.
 * At the default fleet and 80 % load that costs it about 1.6 points of hit rate against the
 * policies that keep affinity regardless (cache_aware 86.4 % vs 84.8 % on shared-prefix,
 * 94.4 % vs 94.0 % on chat), hence the tolerance. Without the tolerance it is at least
 * prefix_hash, which follows the same bound with only its own view of the load, and every
 * policy that spreads by load (bucket ties it on chat).
 */
describe('the oracle against the policies at the default fleet', () => {
  const TOLERANCE = 0.02;
  for (const workload of [generatedSharedPrefix(), multiTurnChat()]) {
    it(`${workload.name}: at least every policy's hit rate, within ${TOLERANCE}`, async () => {
      const c = await comparePolicies({ workload });
      expect(c.runs.map((r) => r.policy)).toEqual([...DEFAULT_POLICIES]);
      const oracle = c.oracle!.hitRate;
      for (const run of c.runs)
        expect(oracle, run.policy).toBeGreaterThanOrEqual(run.hitRate - TOLERANCE);
      const spreading = ['random', 'round_robin', 'power_of_two', 'least_load', 'bucket'];
      for (const run of c.runs.filter((r) => [...spreading, 'prefix_hash'].includes(r.policy))) {
        expect(oracle, run.policy).toBeGreaterThanOrEqual(run.hitRate);
      }
      expect(c.oracle!.precision).toBeGreaterThan(0.95);
    });
  }
});
