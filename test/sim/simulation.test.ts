/**
 * `simulate`: determinism, arrival processes, dependencies between requests, option checks,
 * and what it reports.
 */
import { describe, expect, it } from 'vitest';
import { FleetRouteError } from '../../src/index.js';
import {
  formatComparison,
  generatedSharedPrefix,
  multiTurnChat,
  type PolicyRun,
  parseMooncakeTrace,
  type SimRequest,
  simulate,
  type Workload,
} from '../../src/sim/index.js';
import { comparison } from './report/comparison-fixture.js';

const small = generatedSharedPrefix({ groups: 8, promptsPerGroup: 8 });

function workload(requests: Omit<SimRequest, 'id'>[]): Workload {
  return {
    name: 't',
    description: 't',
    parameters: {},
    requests: requests.map((r, id) => ({ ...r, id })),
  };
}

function unique(n: number, salt: number): Uint32Array {
  return Uint32Array.from({ length: n }, (_, i) => salt * 100_000 + i);
}

/** Everything but the wall-clock routing time. */
const simulated = ({ routingMicrosPerRequest: _, ...rest }: PolicyRun) => rest;

describe('simulate', () => {
  it('is deterministic for a seed, and a different seed changes the random choices', async () => {
    const options = {
      workload: small,
      policy: 'random',
      arrivals: { kind: 'poisson', ratePerSecond: 20 },
    } as const;
    const a = await simulate(options);
    const b = await simulate(options);
    expect(simulated(a)).toEqual(simulated(b));
    const c = await simulate({ ...options, seed: 2 });
    expect(c.load.perWorker).not.toEqual(a.load.perWorker);
  });

  it('counts every decision by the branch the policy took, as a router reports it', async () => {
    const aware = await simulate({ workload: small, policy: 'cache_aware' });
    const total = Object.values(aware.decisions).reduce((a, b) => a + b, 0);
    expect(total).toBe(aware.requests);
    // 8 groups: each group's first prompt misses, most later ones hit.
    expect(aware.decisions.cache_miss).toBeGreaterThanOrEqual(8);
    expect(aware.decisions.cache_hit).toBeGreaterThan(aware.decisions.cache_miss!);
    const rr = await simulate({ workload: small, policy: 'round_robin' });
    expect(rr.decisions).toEqual({});
  });

  it('reports every request, tokens-weighted hits, a timeline and routing time', async () => {
    const run = await simulate({ workload: small, policy: 'cache_aware' });
    expect(run).toMatchObject({ policy: 'cache_aware', requests: 64, completed: 64 });
    expect(run.load.perWorker.reduce((a, b) => a + b, 0)).toBe(64);
    expect(run.hitRate).toBeGreaterThan(0);
    expect(run.hitRate).toBeLessThan(1);
    expect(run.ttftMs.p50).toBeLessThanOrEqual(run.ttftMs.p99);
    expect(run.timeline.inFlight).toHaveLength(8);
    expect(run.timeline.inFlight[0]!.length).toBeGreaterThan(0);
    expect(run.routingMicrosPerRequest).toBeGreaterThan(0);
    expect(run.throughput.requestsPerSecond).toBeCloseTo(64 / (run.makespanMs / 1000), 6);
  });

  it('weighs balance by work too: prompt tokens per worker, when request counts are even', async () => {
    // Long and short prompts alternate, so round robin over two workers gives one of them every
    // long prompt: two requests each way, 2 × 1,600 tokens against 2 × 200.
    const w = workload(
      Array.from({ length: 4 }, (_, i) => {
        const length = i % 2 === 0 ? 1_600 : 200;
        return { promptLength: length, tokens: () => unique(length, i + 1), outputLength: 10 };
      }),
    );
    const run = await simulate({ workload: w, policy: 'round_robin', fleet: { workers: 2 } });

    expect(run.load.perWorker).toEqual([2, 2]);
    expect(run.load.maxOverMean).toBe(1);
    expect([...run.work.perWorker].sort((a, b) => a - b)).toEqual([400, 3_200]);
    expect(run.work.maxOverMean).toBeCloseTo(3_200 / 1_800, 12);
    expect(run.work.cv).toBeCloseTo(1_400 / 1_800, 12);
    const text = formatComparison(comparison([run]));
    expect(text).toMatch(/load max\/mean +tokens max\/mean/);
    expect(text).toMatch(/\nround_robin .* 1\.00 +1\.78 /);
  });

  it('all at once: every request is in flight at the first sample', async () => {
    const run = await simulate({ workload: small, policy: 'round_robin' });
    const first = run.timeline.inFlight.reduce((sum, series) => sum + series[0]!, 0);
    expect(first).toBe(64);
  });

  it('closed loop: never more than `concurrency` requests in flight', async () => {
    const run = await simulate({
      workload: small,
      policy: 'round_robin',
      arrivals: { kind: 'closed_loop', concurrency: 3 },
      sampleIntervalMs: 100, // few enough samples that none are merged
    });
    const samples = run.timeline.inFlight[0]!.length;
    for (let s = 0; s < samples; s++) {
      const total = run.timeline.inFlight.reduce((sum, series) => sum + series[s]!, 0);
      expect(total).toBeLessThanOrEqual(3);
    }
  });

  it('a request with `after` waits for that request to complete', async () => {
    const w = workload([
      { promptLength: 800, tokens: () => unique(800, 1), outputLength: 100 },
      { promptLength: 800, tokens: () => unique(800, 2), outputLength: 100, after: 0 },
    ]);
    const alone = await simulate({ workload: workload([w.requests[0]!]), policy: 'round_robin' });
    const chained = await simulate({ workload: w, policy: 'round_robin' });
    expect(chained.makespanMs).toBeCloseTo(2 * alone.makespanMs, 6);
    // Both TTFTs are a lone prefill: the second request is sent only when the first is done.
    expect(chained.ttftMs.p99).toBeCloseTo(alone.ttftMs.p50, 6);
  });

  it('multi-turn chat: each turn reuses the conversation so far (answers are cached too)', async () => {
    const run = await simulate({
      workload: multiTurnChat({ users: 4, rounds: 4 }),
      policy: 'consistent_hashing',
      fleet: { workers: 4 },
    });
    expect(run.completed).toBe(16);
    expect(run.hitRate).toBeGreaterThan(0.6);
  });

  it('trace arrivals follow the timestamps, scaled by speedup', async () => {
    const trace = parseMooncakeTrace(
      [
        '{"timestamp": 0, "input_length": 600, "output_length": 5, "hash_ids": [1, 2]}',
        '{"timestamp": 10000, "input_length": 600, "output_length": 5, "hash_ids": [1, 3]}',
      ].join('\n'),
    );
    const real = await simulate({
      workload: trace,
      policy: 'round_robin',
      arrivals: { kind: 'trace' },
    });
    expect(real.makespanMs).toBeGreaterThan(10_000);
    const fast = await simulate({
      workload: trace,
      policy: 'round_robin',
      arrivals: { kind: 'trace', speedup: 10 },
    });
    expect(fast.makespanMs).toBeGreaterThan(1_000);
    expect(fast.makespanMs).toBeLessThan(2_000);
  });

  it('calls onProgress from 0 to the total', async () => {
    const seen: number[] = [];
    await simulate({
      workload: small,
      policy: 'random',
      onProgress: (done, total) => {
        expect(total).toBe(64);
        seen.push(done);
      },
    });
    expect(seen[0]).toBe(0);
    expect(seen.at(-1)).toBe(64);
  });

  it.each([
    ['an unknown policy', { policy: 'nope' }, /policy/],
    ['a fleet of 0 workers', { fleet: { workers: 0 } }, /fleet\.workers/],
    ['an unknown fleet field', { fleet: { gpus: 2 } }, /fleet\.gpus/],
    ['a negative cache', { fleet: { cacheTokens: -1 } }, /fleet\.cacheTokens/],
    ['an unknown arrival kind', { arrivals: { kind: 'burst' } }, /arrivals\.kind/],
    [
      'a Poisson process without a rate',
      { arrivals: { kind: 'poisson' } },
      /arrivals\.ratePerSecond/,
    ],
    ['0 routers', { routers: 0 }, /routers/],
    ['a bad workload', { workload: { requests: 3 } }, /workload/],
    [
      'a bad policy option',
      { policy: 'cache_aware', policyConfig: { cacheThreshold: 2 } },
      /cacheThreshold/,
    ],
  ])('rejects %s with INVALID_ARGUMENT', async (_label, patch, message) => {
    const error = await simulate({
      workload: small,
      policy: 'random',
      ...(patch as object),
    } as never).catch((e: unknown) => e);
    expect(FleetRouteError.is(error, 'INVALID_ARGUMENT')).toBe(true);
    expect((error as Error).message).toMatch(message);
  });
});
