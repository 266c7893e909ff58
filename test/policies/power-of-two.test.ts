import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createPolicy, type LoadReport, type Worker } from '../../src/index.js';
import { runs } from '../helpers/fc-settings.js';
import { buildFleet } from '../support/policy-contract.js';

const ready = { status: 'ready', open: false, removed: false, load: 0 } as const;
const withLoad = (load: number) => ({ ...ready, load });

/** A random source that replays the given values (the sampler draws two indices). */
function scripted(values: number[]): () => number {
  let i = 0;
  return () => values[i++ % values.length]!;
}

/** Routes `count` requests and keeps every lease open; returns how many each worker got. */
function route(
  policy: { select(w: readonly Worker[]): Worker | undefined },
  workers: readonly Worker[],
  count: number,
): number[] {
  const got = workers.map(() => 0);
  for (let r = 0; r < count; r++) {
    const chosen = policy.select(workers)!;
    chosen.acquire();
    got[workers.indexOf(chosen)]!++;
  }
  return got;
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

  it('once first tokens are marked, keeps the sample with fewer requests awaiting one, whatever decodes', async () => {
    // Arrange: w0 has one request in prefill; w1 has four in flight, all past their first token.
    const { workers } = await buildFleet([withLoad(0), withLoad(0)]);
    const prefilling = workers[0]!.acquire();
    for (let i = 0; i < 4; i++) workers[1]!.acquire().firstToken();
    const policy = createPolicy('power_of_two', { seed: 3 });

    // Act / Assert: w1 while w0 prefills; w0 (less in flight) once it is past its first token.
    for (let r = 0; r < 5; r++) expect(policy.select(workers)).toBe(workers[1]);
    prefilling.firstToken();
    for (let r = 0; r < 5; r++) expect(policy.select(workers)).toBe(workers[0]);
  });

  it('compares reported requests (running + waiting) when both samples have a fresh report, whatever their in-flight counts', async () => {
    const { workers } = await buildFleet([withLoad(0), withLoad(9)]);
    const policy = createPolicy('power_of_two', { seed: 3, clock: () => 0 });
    policy.updateLoads(
      new Map([
        [workers[0]!.url, { runningRequests: 7, waitingRequests: 2 }],
        [workers[1]!.url, { runningRequests: 1 }],
      ]),
    );

    expect(policy.select(workers)).toBe(workers[1]);
  });

  it('stops sending to a worker a stale-ish report calls empty once this router has filled it', async () => {
    // Arrange: 5 s after the poll, the report still says A is empty and B has 10 requests.
    const { workers } = await buildFleet([ready, ready]);
    let now = 0;
    const policy = createPolicy('power_of_two', { seed: 7, clock: () => now });
    policy.updateLoads(
      new Map<string, LoadReport>([
        [workers[0]!.url, { runningRequests: 0, waitingRequests: 0, tokenUsage: 0 }],
        [workers[1]!.url, { runningRequests: 6, waitingRequests: 4, tokenUsage: 0.9 }],
      ]),
    );
    now = 5_000;

    // Act: 30 requests, none finishing.
    const first = route(policy, workers, 10);
    const rest = route(policy, workers, 20);

    // Assert: A takes the first 10 (it really was emptier), then the two share the traffic.
    expect(first).toEqual([10, 0]);
    expect(rest[1]).toBeGreaterThanOrEqual(9);
    expect(Math.abs(first[0]! + rest[0]! - (10 + rest[1]!))).toBeLessThanOrEqual(1);
  });

  it('over two workers with fresh reports, evens out reported + sent requests (any reports, any count)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.nat({ max: 40 }),
        fc.nat({ max: 40 }),
        fc.nat({ max: 40 }),
        fc.nat({ max: 120 }),
        fc.integer({ min: 1, max: 1_000 }),
        async (runningA, waitingA, runningB, count, seed) => {
          const { workers } = await buildFleet([ready, ready]);
          const policy = createPolicy('power_of_two', { seed, clock: () => 0 });
          policy.updateLoads(
            new Map<string, LoadReport>([
              [workers[0]!.url, { runningRequests: runningA, waitingRequests: waitingA }],
              [workers[1]!.url, { runningRequests: runningB }],
            ]),
          );

          const [sentA, sentB] = route(policy, workers, count);

          const gap = Math.abs(runningA + waitingA - runningB);
          if (count <= gap) {
            expect(Math.min(sentA!, sentB!)).toBe(0); // everything to the emptier one
          } else {
            expect(
              Math.abs(runningA + waitingA + sentA! - (runningB + sentB!)),
            ).toBeLessThanOrEqual(1);
          }
        },
      ),
      runs(100, 500),
    );
  });

  it('a new report starts the sent count again from 0', async () => {
    const { workers } = await buildFleet([ready, ready]);
    const policy = createPolicy('power_of_two', { seed: 3, clock: () => 0 });
    const reports = new Map<string, LoadReport>([
      [workers[0]!.url, { runningRequests: 0 }],
      [workers[1]!.url, { runningRequests: 3 }],
    ]);
    policy.updateLoads(reports);
    expect(route(policy, workers, 3)).toEqual([3, 0]);

    policy.updateLoads(reports); // the same counts again: A is back to 0 + nothing sent

    expect(route(policy, workers, 3)).toEqual([3, 0]);
  });

  it("a report that called a worker busy stops repelling traffic once this router's requests there finish", async () => {
    // Arrange: this router holds 6 requests on A and 2 on B when the report arrives, and the
    // report counts exactly those. Then A's 6 finish; the next report is 10 s away.
    const { workers } = await buildFleet([ready, ready]);
    let now = 0;
    const policy = createPolicy('power_of_two', { seed: 11, clock: () => now });
    const onA = Array.from({ length: 6 }, () => workers[0]!.acquire());
    const onB = Array.from({ length: 2 }, () => workers[1]!.acquire());
    policy.select(workers)?.incrementProcessed(); // the policy has seen the list
    policy.updateLoads(
      new Map<string, LoadReport>([
        [workers[0]!.url, { runningRequests: 6 }],
        [workers[1]!.url, { runningRequests: 2 }],
      ]),
    );
    now = 1_000;
    for (const lease of onA) lease.release();

    // Act: 6 requests, none finishing.
    const sent = route(policy, workers, 6);

    // Assert: A (0 now) takes the first two, then the two share: A ends within one of B (2 + sent).
    expect(sent[0]).toBeGreaterThanOrEqual(3);
    expect(Math.abs(sent[0]! - (2 + sent[1]!))).toBeLessThanOrEqual(1);
    for (const lease of onB) lease.release();
  });

  it('reads the in-flight count of a worker of another list the first time it samples it', async () => {
    const { workers } = await buildFleet([ready, ready]);
    const policy = createPolicy('power_of_two', { seed: 11, clock: () => 0 });
    const held = [workers[0]!.acquire(), workers[0]!.acquire()];
    policy.updateLoads(
      new Map<string, LoadReport>([
        [workers[0]!.url, { runningRequests: 2 }],
        [workers[1]!.url, { runningRequests: 3 }],
      ]),
    );

    // The first select takes the counts now as the baseline: A reads 2, B reads 3.
    expect(policy.select(workers)).toBe(workers[0]);
    for (const lease of held) lease.release();

    // A's two finished: 0 against B's 3.
    expect(route(policy, workers, 3)).toEqual([3, 0]);
  });

  it('counts a request against its report even when it was the only available worker', async () => {
    const { registry, workers } = await buildFleet([ready, ready]);
    const policy = createPolicy('power_of_two', { seed: 3, clock: () => 0 });
    policy.updateLoads(
      new Map<string, LoadReport>([
        [workers[0]!.url, { runningRequests: 0 }],
        [workers[1]!.url, { runningRequests: 2 }],
      ]),
    );
    await registry.transitionStatus(workers[1]!.id, 'not_ready');
    expect(route(policy, workers, 5)).toEqual([5, 0]);

    await registry.transitionStatus(workers[1]!.id, 'ready');

    expect(route(policy, workers, 3)).toEqual([0, 3]); // 2 + 0 … 2 + 2 beat 0 + 5
  });

  it('never mixes reports and leases: with one report missing it compares in-flight counts', async () => {
    const { workers } = await buildFleet([withLoad(0), withLoad(9)]);
    const policy = createPolicy('power_of_two', { seed: 3, clock: () => 0 });
    policy.updateLoads(new Map([[workers[1]!.url, { runningRequests: 0, waitingRequests: 0 }]]));

    expect(policy.select(workers)).toBe(workers[0]);
  });

  it('does not compare KV-cache usage: reports without request counts leave in-flight counts in charge', async () => {
    const { workers } = await buildFleet([withLoad(0), withLoad(9)]);
    const policy = createPolicy('power_of_two', { seed: 3, clock: () => 0 });
    policy.updateLoads(
      new Map([
        [workers[0]!.url, { tokenUsage: 0.9 }],
        [workers[1]!.url, { tokenUsage: 0.1 }],
      ]),
    );

    expect(policy.select(workers)).toBe(workers[0]);
  });

  it('ignores a report older than staleAfterMs', async () => {
    const { workers } = await buildFleet([withLoad(0), withLoad(9)]);
    let now = 0;
    const policy = createPolicy('power_of_two', { seed: 3, clock: () => now, staleAfterMs: 1000 });
    policy.updateLoads(
      new Map([
        [workers[0]!.url, { runningRequests: 9 }],
        [workers[1]!.url, { runningRequests: 1 }],
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
      [workers[0]!.url, { runningRequests: 9 }],
      [workers[1]!.url, { runningRequests: 1 }],
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
          [workers[0]!.url, { runningRequests: Number.NaN, waitingRequests: -3 }],
          [workers[1]!.url, { runningRequests: -1, waitingRequests: Number.POSITIVE_INFINITY }],
          ['http://unknown:1', { runningRequests: 5 }],
        ]) as never,
      ),
    ).not.toThrow();
    expect(() => policy.updateLoads({} as never)).not.toThrow();

    expect(policy.select(workers)).toBe(workers[0]); // no valid count: leases decide
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
