/**
 * A started `Router` over `n` ready workers (`http://w0:8000` … serving model `m`) with no
 * health checks or load polling, round-robin routing and jitter fixed at its midpoint: the
 * setting of the tests that drive `execute` by hand.
 */
import { Router, type RouterOptions, WorkerRegistry } from '../../src/index.js';

const transport = { probe: async () => true };

export async function routerFleet(
  n: number,
  options: Partial<Omit<RouterOptions, 'registry' | 'transport'>> = {},
) {
  const registry = await WorkerRegistry.create({ defaultStatus: 'ready', clock: () => Date.now() });
  for (let i = 0; i < n; i++) await registry.register({ url: `http://w${i}:8000`, models: ['m'] });
  const router = new Router({
    registry,
    transport,
    health: false,
    loadPolling: false,
    policy: 'round_robin',
    random: () => 0.5,
    ...options,
  });
  router.start();
  return { registry, router, workers: registry.getByModel('m') };
}
