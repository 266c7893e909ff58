import { describe, expect, it } from 'vitest';
import { createPolicy, type Worker } from '../../src/index.js';
import { buildFleet } from '../support/policy-contract.js';

const ready = { status: 'ready', open: false, removed: false, load: 0 } as const;
const withLoad = (load: number) => ({ ...ready, load });

/** A random source that replays the given values (the sampler draws two indices). */
function scripted(values: number[]): () => number {
  let i = 0;
  return () => values[i++ % values.length]!;
}

describe('power_of_two', () => {
  it('keeps the sample with fewer requests in flight when there are no load reports', async () => {
    const { workers } = await buildFleet([withLoad(5), withLoad(1)]);
    const policy = createPolicy('power_of_two', { seed: 3 });

    for (let r = 0; r < 10; r++) {
      const chosen = policy.select(workers)!;
      expect(chosen).toBe(workers[1]);
      chosen.acquire().release(); // load unchanged
    }
  });

  it('compares KV-cache usage when both samples have a fresh report, whatever their in-flight counts', async () => {
    const { workers } = await buildFleet([withLoad(0), withLoad(9)]);
    const now = 0;
    const policy = createPolicy('power_of_two', { seed: 3, clock: () => now });
    policy.updateLoads(
      new Map([
        [workers[0]!.url, { tokenUsage: 0.9 }],
        [workers[1]!.url, { tokenUsage: 0.2 }],
      ]),
    );

    expect(policy.select(workers)).toBe(workers[1]);
  });

  it('never mixes usage and counts: with one report missing it compares in-flight counts', async () => {
    const { workers } = await buildFleet([withLoad(0), withLoad(9)]);
    const policy = createPolicy('power_of_two', { seed: 3, clock: () => 0 });
    policy.updateLoads(new Map([[workers[1]!.url, { tokenUsage: 0 }]]));

    expect(policy.select(workers)).toBe(workers[0]);
  });

  it('ignores a report older than staleAfterMs', async () => {
    const { workers } = await buildFleet([withLoad(0), withLoad(9)]);
    let now = 0;
    const policy = createPolicy('power_of_two', { seed: 3, clock: () => now, staleAfterMs: 1000 });
    policy.updateLoads(
      new Map([
        [workers[0]!.url, { tokenUsage: 0.9 }],
        [workers[1]!.url, { tokenUsage: 0.1 }],
      ]),
    );
    expect(policy.select(workers)).toBe(workers[1]);

    now = 1001;

    expect(policy.select(workers)).toBe(workers[0]);
  });

  it('a tie goes to the first sample', async () => {
    const { workers } = await buildFleet([withLoad(2), withLoad(2), withLoad(2)]);
    // First draw: index floor(0.7·3) = 2; second draw among the rest.
    const policy = createPolicy('power_of_two', { random: scripted([0.7, 0.1]) });

    expect(policy.select(workers)).toBe(workers[2]);
  });

  it('removeWorker and reset forget load reports', async () => {
    const { workers } = await buildFleet([withLoad(0), withLoad(9)]);
    const policy = createPolicy('power_of_two', { seed: 3, clock: () => 0 });
    const reports = new Map([
      [workers[0]!.url, { tokenUsage: 0.9 }],
      [workers[1]!.url, { tokenUsage: 0.1 }],
    ]);
    policy.updateLoads(reports);
    policy.removeWorker(workers[1]!.url);
    expect(policy.select(workers)).toBe(workers[0]); // back to counts
    policy.updateLoads(reports);
    policy.reset();
    expect(policy.select(workers)).toBe(workers[0]);
  });

  it('bad reports (NaN, negative, Infinity, unknown URLs, not a map) do not throw and are ignored', async () => {
    const { workers } = await buildFleet([withLoad(0), withLoad(9)]);
    const policy = createPolicy('power_of_two', { seed: 3, clock: () => 0 });
    expect(() =>
      policy.updateLoads(
        new Map<string, object>([
          [workers[0]!.url, { tokenUsage: Number.NaN }],
          [workers[1]!.url, { tokenUsage: -1, queuedTokens: Number.POSITIVE_INFINITY }],
          ['http://unknown:1', { tokenUsage: 0.5 }],
        ]) as never,
      ),
    ).not.toThrow();
    expect(() => policy.updateLoads({} as never)).not.toThrow();

    expect(policy.select(workers)).toBe(workers[0]); // no valid usage: counts decide
  });

  it('keeps the busiest worker within ln ln n / ln 2 + O(1) of the mean (balls into bins, seeded)', async () => {
    // n requests that never finish, over n workers: one random choice leaves the busiest worker
    // near ln n / ln ln n; two choices near ln ln n / ln 2 (Azar, Broder, Karlin, Upfal).
    const n = 512;
    const { workers } = await buildFleet(Array.from({ length: n }, () => ready));
    const maxLoad = (policy: { select(w: readonly Worker[]): Worker | undefined }): number => {
      const leases = [];
      for (let r = 0; r < n; r++) leases.push(policy.select(workers)!.acquire());
      const max = Math.max(...workers.map((w) => w.load));
      for (const lease of leases) lease.release();
      return max;
    };
    const band = Math.log(Math.log(n)) / Math.log(2) + 2;
    for (const seed of [1, 2, 3, 4, 5]) {
      const twoChoices = maxLoad(createPolicy('power_of_two', { seed }));
      const oneChoice = maxLoad(createPolicy('random', { seed }));
      expect(twoChoices).toBeLessThanOrEqual(Math.ceil(band));
      expect(twoChoices).toBeLessThan(oneChoice);
    }
  });
});
