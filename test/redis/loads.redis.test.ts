/**
 * Shared in-flight loads on a real `redis-server`: every router's view of a worker is the sum
 * of all routers' leases on it, a router that stops syncing drops out after `liveMs`, and the
 * store's traffic follows the sync rate, not the request rate.
 */
import type { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import type { WorkerLease } from '../../src/index.js';
import {
  adminClient,
  countByUrl,
  expectedLoads,
  loadsOf,
  localLoad,
  noRedis,
  type Replica,
  redisServer,
  replica,
  syncAll,
  Teardown,
  take,
  totalLoad,
  until,
} from './redis-replicas.js';

/**
 * Calls per command since the last `CONFIG RESETSTAT` (commands run inside scripts included),
 * without the admin client's own.
 */
async function commandCalls(admin: Redis): Promise<Map<string, number>> {
  const info = await admin.info('commandstats');
  const calls = new Map<string, number>();
  for (const match of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
    const command = match[1]!;
    if (command === 'info' || command.startsWith('config')) continue;
    calls.set(command, Number(match[2]));
  }
  return calls;
}

const sum = (counts: ReadonlyMap<string, number>): number =>
  [...counts.values()].reduce((a, b) => a + b, 0);

describe.skipIf(noRedis)('shared loads on redis-server', () => {
  const t = new Teardown();
  afterEach(() => t.run());

  it.each([2, 3])(
    'every one of %i routers sees the sum of all leases on each worker, and zero once released',
    async (n) => {
      const server = await redisServer(t);
      const replicas: Replica[] = [];
      for (let r = 0; r < n; r++) replicas.push(await replica(t, server.url));
      // Uneven on purpose: 5, 8, 11 leases round-robin over 4 workers; every other one past its
      // first token, so prefilling differs from load.
      const leases = replicas.map((r, i) => take(r, 5 + 3 * i));
      const prefilling: WorkerLease[] = [];
      for (const [i, lease] of leases.flat().entries())
        if (i % 2 === 0) lease.firstToken();
        else prefilling.push(lease);
      const totals = countByUrl(leases.flat());
      const prefillTotals = countByUrl(prefilling);

      await syncAll(replicas);
      await syncAll(replicas);

      for (const [i, r] of replicas.entries()) {
        expect(loadsOf(r)).toEqual(expectedLoads(r, totals));
        const own = countByUrl(leases[i]!);
        for (const worker of r.registry.getAll()) {
          expect(localLoad(worker)).toBe(own.get(worker.url) ?? 0);
          expect(worker.prefilling).toBe(prefillTotals.get(worker.url) ?? 0);
        }
        expect(r.shared.stats().loads).toMatchObject({ state: 'ok', routers: n - 1 });
      }

      for (const lease of leases.flat()) lease.release();
      await syncAll(replicas);
      await syncAll(replicas);
      for (const r of replicas) {
        expect(totalLoad(r)).toBe(0);
        for (const worker of r.registry.getAll()) expect(worker.prefilling).toBe(0);
      }
    },
  );

  it('drops the counts of a router that stopped syncing once its heartbeat is older than liveMs', async () => {
    const server = await redisServer(t);
    const admin = await adminClient(t, server.url);
    const loads = { refreshMs: 0, liveMs: 1000 };
    const survivor = await replica(t, server.url, { shared: { loads } });
    // Never synced again after its first lease count, and never closed until teardown: what a
    // killed process leaves behind.
    const killed = await replica(t, server.url, { shared: { loads } });
    const held = take(killed, 6);
    await killed.shared.sync();
    await survivor.shared.sync();
    expect(loadsOf(survivor)).toEqual(expectedLoads(survivor, countByUrl(held)));
    expect(survivor.shared.stats().loads.routers).toBe(1);

    const dropped = await until(async () => {
      await survivor.shared.sync();
      return totalLoad(survivor) === 0;
    });

    expect(dropped).toBe(true);
    expect(survivor.shared.stats().loads.routers).toBe(0);
    // Nothing cleaned up after it: its counts are still stored, only no longer summed.
    expect(await admin.exists(`{fleetroute}:load:${killed.shared.routerId}`)).toBe(1);
    expect(totalLoad(killed)).toBe(6);
  });

  it('sends the same number of commands per sync at 10 and at 1,000 requests between syncs', async () => {
    const server = await redisServer(t);
    const admin = await adminClient(t, server.url);
    const options = {
      policy: 'least_load' as const,
      shared: { loads: { refreshMs: 0 }, sessions: false as const, prefixIndex: false as const },
    };
    const replicas = [await replica(t, server.url, options), await replica(t, server.url, options)];
    const send = async () => ({ status: 200 });
    const phase = async (requestsPerSync: number): Promise<Map<string, number>> => {
      await admin.config('RESETSTAT');
      for (let round = 0; round < 10; round++) {
        for (const r of replicas) {
          for (let i = 0; i < requestsPerSync; i++) await r.router.execute({ model: 'm' }, send);
          // A few requests still in flight at each sync, so every sync carries changes.
          const held = take(r, 1 + (round % 3));
          await r.shared.sync();
          for (const lease of held) lease.release();
        }
      }
      return commandCalls(admin);
    };

    const slow = await phase(10);
    const fast = await phase(1000);

    // One script call (one round trip) per sync: 2 routers × 10 syncs, whatever the traffic.
    const trips = (calls: ReadonlyMap<string, number>) =>
      (calls.get('evalsha') ?? 0) + (calls.get('eval') ?? 0);
    expect(trips(slow)).toBe(20);
    expect(trips(fast)).toBe(20);
    // The commands those scripts run (counted too) depend on which counts changed, not on how
    // many requests came between two syncs.
    expect(Math.abs(sum(fast) - sum(slow))).toBeLessThanOrEqual(sum(slow) / 10);
  });
});
