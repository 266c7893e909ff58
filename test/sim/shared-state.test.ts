/**
 * Routers sharing state in the simulator: with `sharedState`, K routers win back what K
 * independent routers lose (cache_aware's prefix placements, manual's sessions), in memory and
 * on a real redis-server alike; without it nothing changes.
 */
import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SharedState } from '../../src/shared/shared-state.js';
import { comparePolicies } from '../../src/sim/compare.js';
import { SimRouters } from '../../src/sim/sim-routers.js';
import { simulate } from '../../src/sim/simulation.js';
import { resolveSimulationOptions } from '../../src/sim/simulation-options.js';
import { generatedSharedPrefix, multiTurnChat } from '../../src/sim/workloads/index.js';
import { freePort, hasRedisServer, type RedisServer, startRedis } from '../support/redis-server.js';

const workload = generatedSharedPrefix({ groups: 16, promptsPerGroup: 12, seed: 3 });

describe('simulate with sharedState', () => {
  it('4 routers sharing state in memory keep cache_aware within 3 points of one router; alone they lose more', async () => {
    const base = {
      workload,
      policy: 'cache_aware' as const,
      arrivals: { kind: 'poisson' as const, ratePerSecond: 40 },
    };
    const one = await simulate(base);
    const four = await simulate({ ...base, routers: 4 });
    const shared = await simulate({ ...base, routers: 4, sharedState: 'memory' });
    expect(four.hitRate).toBeLessThan(one.hitRate - 0.03);
    expect(shared.hitRate).toBeGreaterThan(one.hitRate - 0.03);
    expect(shared.hitRate).toBeGreaterThan(four.hitRate);
  });

  it('manual sessions keep their worker across 4 routers', async () => {
    const chat = multiTurnChat({ users: 24, rounds: 4, seed: 5 });
    const base = {
      workload: chat,
      policy: 'manual' as const,
      arrivals: { kind: 'poisson' as const, ratePerSecond: 10 },
    };
    const one = await simulate(base);
    const four = await simulate({ ...base, routers: 4 });
    const shared = await simulate({ ...base, routers: 4, sharedState: 'memory' });
    expect(four.hitRate).toBeLessThan(one.hitRate - 0.05);
    expect(shared.hitRate).toBeCloseTo(one.hitRate, 2);
  });

  it('builds one SharedState per router over one store, and none for the oracle', async () => {
    const o = resolveSimulationOptions({
      workload,
      policy: 'cache_aware',
      routers: 3,
      sharedState: 'memory',
    });
    const routers = new SimRouters();
    try {
      await routers.open(o, ['http://w0:8000', 'http://w1:8000'], () => 0);
      expect(routers.shared).toHaveLength(3);
      expect(routers.shared.every((s) => s instanceof SharedState)).toBe(true);
      expect(new Set(routers.shared.map((s) => s.store)).size).toBe(1);
      expect(new Set(routers.shared.map((s) => s.routerId)).size).toBe(3);
    } finally {
      await routers.close();
    }
    const oracle = new SimRouters();
    try {
      await oracle.open(
        o,
        ['http://w0:8000'],
        () => 0,
        () => ({ name: 'random', select: () => undefined }) as never,
      );
      expect(oracle.shared).toHaveLength(0);
    } finally {
      await oracle.close();
    }
  });

  it('rejects a sharedState that is neither memory nor a Redis URL, and a bad refresh', () => {
    for (const sharedState of ['disk', 'http://x', '', 42, 'redis://']) {
      expect(() =>
        resolveSimulationOptions({ workload, policy: 'cache_aware', sharedState } as never),
      ).toThrow(/sharedState must be 'memory' or a redis:\/\/ URL/);
    }
    expect(() =>
      resolveSimulationOptions({ workload, policy: 'cache_aware', sharedRefreshMs: 0 }),
    ).toThrow(/sharedRefreshMs/);
  });

  it('simulate against a Redis nobody answers on rejects with TRANSPORT_FAILED', async () => {
    const port = await freePort();
    const run = simulate({
      workload,
      policy: 'cache_aware',
      routers: 2,
      sharedState: `redis://127.0.0.1:${port}`,
    });
    await expect(run).rejects.toMatchObject({
      code: 'TRANSPORT_FAILED',
      message: expect.stringMatching(/^shared state: no Redis answered at redis:\/\/127\.0\.0\.1:/),
    });
  });

  it('comparePolicies adds a +shared row beside the K-router row, and every policy at 1 router', async () => {
    const result = await comparePolicies({
      workload,
      policies: ['cache_aware', 'least_load'],
      routers: 2,
      sharedState: 'memory',
      threads: 1,
      oracle: false,
    });
    expect(result.runs.map((r) => r.policy)).toEqual([
      'cache_aware (1 router)',
      'cache_aware',
      'cache_aware+shared',
      'least_load (1 router)',
      'least_load',
      'least_load+shared',
    ]);
  });
});

describe.skipIf(!hasRedisServer() && process.env.CI !== 'true')(
  'simulate against a real redis-server',
  () => {
    let server: RedisServer;
    beforeAll(async () => {
      server = await startRedis();
    });
    afterAll(async () => {
      await server?.stop();
    });

    it('routes exactly as the in-memory store does, and leaves no key behind', async () => {
      const base = {
        workload,
        policy: 'cache_aware' as const,
        routers: 4,
        arrivals: { kind: 'poisson' as const, ratePerSecond: 40 },
      };
      const memory = await simulate({ ...base, sharedState: 'memory' });
      const redis = await simulate({ ...base, sharedState: server.url });
      expect(redis.hitRate).toBe(memory.hitRate);
      expect(redis.load.perWorker).toEqual(memory.load.perWorker);
      const keys = spawnSync('redis-cli', ['-p', String(server.port), 'DBSIZE'], {
        encoding: 'utf8',
      });
      expect(keys.stdout.trim()).toBe('0');
    });
  },
);
