/**
 * Admission in Prometheus: every outcome counted once with its reason, the waits of queued
 * requests, and the queue's depth at scrape — on a real prom-client registry.
 */
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { createPrometheusMetrics } from '../../src/prometheus/index.js';
import { routerFleet } from '../support/router-fleet.js';

const open: { close(): unknown }[] = [];
afterEach(async () => {
  for (const o of open.splice(0).reverse()) await o.close();
});

const line = async (registry: Registry, prefix: string): Promise<string | undefined> =>
  (await registry.metrics()).split('\n').find((l) => l.startsWith(prefix));

describe('admission metrics', () => {
  it('counts admitted, shed, aborted and queued requests, and shows the queue depth', async () => {
    const { router, registry: workers } = await routerFleet(1, { admission: { maxInFlight: 1 } });
    const registry = new Registry();
    const metrics = await createPrometheusMetrics({ router, workers, registry });
    open.push(router, metrics);
    const lease = router.select({ model: 'm' })!;
    await expect(
      router.execute({ model: 'm', priority: -1 }, async () => ({})),
    ).rejects.toMatchObject({
      code: 'SATURATED',
    });
    const controller = new AbortController();
    const aborted = router
      .execute({ model: 'm' }, async () => ({}), { signal: controller.signal })
      .catch(() => 'aborted');
    const waiting = router.execute({ model: 'm' }, async () => ({ status: 200 }));
    await new Promise((r) => setImmediate(r));
    expect(await line(registry, 'fleetroute_admission_queued_requests')).toBe(
      'fleetroute_admission_queued_requests 2',
    );
    controller.abort();
    expect(await aborted).toBe('aborted');
    lease.release();
    await waiting;
    const text = await registry.metrics();
    expect(text).toContain(
      'fleetroute_admissions_total{model="m",outcome="admitted",reason="none"} 1',
    );
    expect(text).toContain(
      'fleetroute_admissions_total{model="m",outcome="rejected",reason="shed"} 1',
    );
    expect(text).toContain(
      'fleetroute_admissions_total{model="m",outcome="aborted",reason="none"} 1',
    );
    expect(text).toContain('fleetroute_admission_wait_seconds_count{outcome="admitted"} 1');
    expect(text).toContain('fleetroute_admission_wait_seconds_count{outcome="aborted"} 1');
    expect(text).toContain('fleetroute_admission_queued_requests 0');
  });
});
