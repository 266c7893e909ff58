/**
 * Several routers on one registry. Breakers belong to the workers, so the routers share them:
 * every router sees every breaker change, a swap of breaker settings keeps every router
 * observing, and two open routers asking for different breaker settings is an error.
 */
import { describe, expect, it } from 'vitest';
import {
  type CircuitChangedEvent,
  Router,
  type Transport,
  WorkerRegistry,
} from '../../src/index.js';

const transport: Transport = { probe: async () => true };

async function registryOf(n: number, options: object = {}) {
  const registry = await WorkerRegistry.create({ defaultStatus: 'ready', ...options });
  for (let i = 0; i < n; i++) await registry.register({ url: `http://w${i}:1`, models: ['m'] });
  return registry;
}

function routerOn(registry: WorkerRegistry, options: object = {}) {
  const router = new Router({ registry, transport, health: false, loadPolling: false, ...options });
  const changes: string[] = [];
  router.on('circuitChanged', (e: CircuitChangedEvent) => {
    changes.push(`${e.url}:${e.from}>${e.to}`);
  });
  router.start();
  return { router, changes };
}

/** Fails `worker`'s requests until its breaker opens (failureThreshold consecutive failures). */
function trip(registry: WorkerRegistry, url: string, times: number): void {
  const worker = registry.getByUrl(url)!;
  for (let i = 0; i < times; i++) worker.acquire().release({ ok: false, status: 503 });
}

describe('two routers on one registry', () => {
  it('both emit circuitChanged for the same breaker transition, whichever router was built first', async () => {
    const registry = await registryOf(2);
    const a = routerOn(registry, { circuitBreaker: { failureThreshold: 2 } });
    const b = routerOn(registry);

    trip(registry, 'http://w0:1', 2);

    expect(a.changes).toEqual(['http://w0:1:closed>open']);
    expect(b.changes).toEqual(['http://w0:1:closed>open']);
    await a.router.close();
    await b.router.close();
  });

  it('a second router with the same breaker settings is fine and swaps nothing', async () => {
    const registry = await registryOf(1);
    const before = registry.getAll()[0]!.circuitBreaker;
    const a = routerOn(registry, { circuitBreaker: { failureThreshold: 2 } });
    const swapped = registry.getAll()[0]!.circuitBreaker;
    const b = routerOn(registry, { circuitBreaker: { failureThreshold: 2 } });

    expect(swapped).not.toBe(before); // the first router changed the defaults
    expect(registry.getAll()[0]!.circuitBreaker).toBe(swapped); // the second changed nothing
    await a.router.close();
    await b.router.close();
  });

  it('a second open router asking for different breaker settings fails with INVALID_ARGUMENT, changing nothing', async () => {
    const registry = await registryOf(1);
    const a = routerOn(registry, { circuitBreaker: { failureThreshold: 2 } });
    const breaker = registry.getAll()[0]!.circuitBreaker;

    expect(
      () => new Router({ registry, transport, circuitBreaker: { failureThreshold: 9 } }),
    ).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(registry.getAll()[0]!.circuitBreaker).toBe(breaker);
    expect(breaker.config.failureThreshold).toBe(2);

    // Once the first router is closed, the settings are free to change.
    await a.router.close();
    const c = routerOn(registry, { circuitBreaker: { failureThreshold: 9 } });
    expect(registry.getAll()[0]!.circuitBreaker.config.failureThreshold).toBe(9);
    await c.router.close();
  });

  it('the conflict check compares with the registry’s current defaults, also after setCircuitBreakerDefaults', async () => {
    const registry = await registryOf(1);
    const a = routerOn(registry, { circuitBreaker: { failureThreshold: 7 } });
    registry.setCircuitBreakerDefaults({ failureThreshold: 9 });

    // Asking for what the registry holds now is no conflict…
    const b = routerOn(registry, { circuitBreaker: { failureThreshold: 9 } });
    expect(registry.getAll()[0]!.circuitBreaker.config.failureThreshold).toBe(9);
    // …and asking for the first router's settings, which the registry no longer holds, is one.
    expect(
      () => new Router({ registry, transport, circuitBreaker: { failureThreshold: 7 } }),
    ).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(registry.getAll()[0]!.circuitBreaker.config.failureThreshold).toBe(9);
    await a.router.close();
    await b.router.close();
  });

  it('new breaker settings from the registry keep every router observing; an open breaker swapped reports open → closed', async () => {
    const registry = await registryOf(2, { circuitBreaker: { failureThreshold: 1 } });
    const a = routerOn(registry);
    const b = routerOn(registry);
    trip(registry, 'http://w0:1', 1);

    registry.setCircuitBreakerDefaults({ failureThreshold: 3 });
    trip(registry, 'http://w1:1', 3);

    const expected = [
      'http://w0:1:closed>open',
      'http://w0:1:open>closed', // the swap: a new, closed breaker
      'http://w1:1:closed>open',
    ];
    expect(a.changes).toEqual(expected);
    expect(b.changes).toEqual(expected);
    await a.router.close();
    await b.router.close();
  });

  it('a replace that changes a worker’s breaker keeps both routers observing it', async () => {
    const registry = await registryOf(1);
    const a = routerOn(registry);
    const b = routerOn(registry);
    const worker = registry.getAll()[0]!;

    await registry.replace(worker.id, {
      url: worker.url,
      models: ['m'],
      circuitBreaker: { failureThreshold: 1 },
    });
    trip(registry, worker.url, 1);

    expect(a.changes).toEqual(['http://w0:1:closed>open']);
    expect(b.changes).toEqual(['http://w0:1:closed>open']);
    await a.router.close();
    await b.router.close();
  });

  it('a circuitChanged listener that throws breaks neither the lease nor the other router', async () => {
    const registry = await registryOf(1, { circuitBreaker: { failureThreshold: 1 } });
    const a = routerOn(registry);
    const b = routerOn(registry);
    a.router.on('circuitChanged', () => {
      throw new Error('listener bug');
    });

    expect(() => trip(registry, 'http://w0:1', 1)).not.toThrow();

    expect(registry.getAll()[0]!.circuitBreaker.state).toBe('open');
    expect(a.changes).toEqual(['http://w0:1:closed>open']); // added before the throwing one
    expect(b.changes).toEqual(['http://w0:1:closed>open']);
    await a.router.close();
    await b.router.close();
  });

  it('a closed router stops observing; the other keeps going', async () => {
    const registry = await registryOf(1, { circuitBreaker: { failureThreshold: 1 } });
    const a = routerOn(registry);
    const b = routerOn(registry);
    await a.router.close();

    trip(registry, 'http://w0:1', 1);

    expect(a.changes).toEqual([]);
    expect(b.changes).toEqual(['http://w0:1:closed>open']);
    await b.router.close();
  });
});
