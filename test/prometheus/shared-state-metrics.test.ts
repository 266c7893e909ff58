/**
 * Shared state in Prometheus: a store that fails degrades the loads part, which shows as
 * `fleetroute_shared_state_degraded{part="loads"} 1` and one transition; once the store answers
 * again the gauge goes back to 0 with a second transition. Other routers' leases count in
 * `fleetroute_worker_in_flight_requests`.
 */
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { MemorySharedStore, Router, SharedState, WorkerRegistry } from '../../src/index.js';
import { createPrometheusMetrics } from '../../src/prometheus/index.js';
import type { LoadSync, LoadSyncReply, SharedStore } from '../../src/shared/shared-store.js';

const open: { close(): unknown }[] = [];
afterEach(async () => {
  for (const o of open.splice(0).reverse()) await o.close();
});

/** A memory store whose load syncs fail while `down`. */
class FlakyStore extends MemorySharedStore implements SharedStore {
  down = false;
  override async syncLoads(sync: LoadSync): Promise<LoadSyncReply> {
    if (this.down) throw new Error('connection lost');
    return super.syncLoads(sync);
  }
}

async function replica(store: SharedStore) {
  const workers = await WorkerRegistry.create({ defaultStatus: 'ready' });
  await workers.register({ url: 'http://w0:8000' });
  const shared = new SharedState({
    store,
    loads: { refreshMs: 0 },
    sessions: false,
    prefixIndex: false,
  });
  const router = new Router({
    registry: workers,
    transport: { probe: async () => true },
    health: false,
    loadPolling: false,
    policy: 'least_load',
    shared,
    logger: { warn: () => {} },
  });
  router.start();
  const registry = new Registry();
  const metrics = await createPrometheusMetrics({ router, workers, registry });
  open.push(workers, router, metrics);
  return { router, shared, registry };
}

const value = async (registry: Registry, line: string): Promise<string | undefined> =>
  (await registry.metrics()).split('\n').find((l) => l.startsWith(line));

describe('shared state metrics', () => {
  it('shows a degraded part and its recovery, and counts other routers in flight', async () => {
    const store = new FlakyStore();
    const a = await replica(store);
    const b = await replica(store);
    const lease = b.router.select({})!;
    await b.shared.sync();
    await a.shared.sync();
    expect(
      await value(a.registry, 'fleetroute_worker_in_flight_requests{worker="http://w0:8000"}'),
    ).toMatch(/ 1$/);
    expect(await value(a.registry, 'fleetroute_shared_state_degraded')).toBeUndefined();
    store.down = true;
    await a.shared.sync();
    expect(await value(a.registry, 'fleetroute_shared_state_degraded{part="loads"}')).toMatch(
      / 1$/,
    );
    expect(
      await value(
        a.registry,
        'fleetroute_shared_state_transitions_total{part="loads",state="degraded"}',
      ),
    ).toMatch(/ 1$/);
    store.down = false;
    await a.shared.sync();
    expect(await value(a.registry, 'fleetroute_shared_state_degraded{part="loads"}')).toMatch(
      / 0$/,
    );
    expect(
      await value(a.registry, 'fleetroute_shared_state_transitions_total{part="loads",state="ok"}'),
    ).toMatch(/ 1$/);
    lease.release();
  });
});
