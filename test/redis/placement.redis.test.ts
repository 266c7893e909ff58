/**
 * Placements shared between replicas on a real `redis-server`: `manual`'s sticky sessions (a key
 * placed by one router goes to the same worker through another, through failover and back) and
 * `cache_aware`'s prefix index (a prefix one router sent somewhere is followed by another).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createPolicy } from '../../src/index.js';
import { routerFleet } from '../support/router-fleet.js';
import {
  noRedis,
  redisServer,
  replica,
  routedTo,
  setStatus,
  Teardown,
  tokens,
  workerUrl,
} from './redis-replicas.js';

const KEYS = Array.from({ length: 20 }, (_, i) => `user-${i}`);

describe.skipIf(noRedis)('placements shared through redis-server', () => {
  const t = new Teardown();
  afterEach(() => t.run());

  it('sends a routing key placed by one router to the same worker through another', async () => {
    const server = await redisServer(t);
    const a = await replica(t, server.url, { policy: createPolicy('manual', { seed: 1 }) });
    const b = await replica(t, server.url, { policy: createPolicy('manual', { seed: 2 }) });
    // Where `b` would place the keys on its own: the same seed, no shared state.
    const alone = await routerFleet(4, { policy: createPolicy('manual', { seed: 2 }) });
    t.add(() => alone.router.close());

    const placed = new Map<string, string>();
    for (const key of KEYS) placed.set(key, await routedTo(a, { model: 'm', routingKey: key }));
    await a.shared.flush();
    const throughB = new Map<string, string>();
    for (const key of KEYS) throughB.set(key, await routedTo(b, { model: 'm', routingKey: key }));
    const own = new Map<string, string>();
    for (const key of KEYS) own.set(key, await routedTo(alone, { model: 'm', routingKey: key }));

    expect(throughB).toEqual(placed);
    expect(own).not.toEqual(placed);
    expect(b.shared.stats().sessions).toMatchObject({ state: 'ok', lookups: 20, hits: 20 });
  });

  it('agrees on the failover worker across routers, and gives a recovered primary its keys back', async () => {
    const server = await redisServer(t);
    const a = await replica(t, server.url, { policy: createPolicy('manual', { seed: 1 }) });
    const b = await replica(t, server.url, { policy: createPolicy('manual', { seed: 2 }) });
    const placed = new Map<string, string>();
    for (const key of KEYS) placed.set(key, await routedTo(a, { model: 'm', routingKey: key }));
    await a.shared.flush();
    for (const key of KEYS) await routedTo(b, { model: 'm', routingKey: key });
    // The worker holding the most keys goes down.
    const perWorker = new Map<string, string[]>();
    for (const [key, url] of placed) perWorker.set(url, [...(perWorker.get(url) ?? []), key]);
    const [primary, keys] = [...perWorker].sort((x, y) => y[1].length - x[1].length)[0]!;
    expect(keys.length).toBeGreaterThan(1);

    await setStatus(b, primary, 'not_ready');
    const failover = new Map<string, string>();
    for (const key of keys) failover.set(key, await routedTo(b, { model: 'm', routingKey: key }));
    await b.shared.flush();
    await setStatus(a, primary, 'not_ready');
    const failoverThroughA = new Map<string, string>();
    for (const key of keys)
      failoverThroughA.set(key, await routedTo(a, { model: 'm', routingKey: key }));

    expect([...failover.values()]).not.toContain(primary);
    expect(failoverThroughA).toEqual(failover);

    await setStatus(b, primary, 'ready');
    await setStatus(a, primary, 'ready');
    for (const key of keys)
      expect(await routedTo(b, { model: 'm', routingKey: key })).toBe(primary);
    await b.shared.flush();
    for (const key of keys)
      expect(await routedTo(a, { model: 'm', routingKey: key })).toBe(primary);
    expect(a.shared.stats().sessions.failures + b.shared.stats().sessions.failures).toBe(0);
  });

  it('sends a request sharing a prefix another router placed to the worker that holds it', async () => {
    const server = await redisServer(t);
    const prefix = tokens(1, 1024);
    const first = { model: 'm', tokens: [...prefix, ...tokens(2, 256)] };
    const second = { model: 'm', tokens: [...prefix, ...tokens(3, 256)] };
    // Where `cache_aware` sends `second` knowing nothing of `first`: its ring owner.
    const alone = await routerFleet(4, { policy: 'cache_aware' });
    t.add(() => alone.router.close());
    const owner = await routedTo(alone, second);
    // `a` can only send `first` to another worker than that owner.
    const holder = [0, 1, 2, 3].map(workerUrl).find((url) => url !== owner)!;
    const a = await replica(t, server.url, { policy: 'cache_aware' });
    for (const worker of a.registry.getAll())
      if (worker.url !== holder) await setStatus(a, worker.url, 'not_ready');
    const policy = createPolicy('cache_aware');
    const b = await replica(t, server.url, { policy });

    expect(await routedTo(a, first)).toBe(holder);
    await a.shared.flush();
    const to = await routedTo(b, second);

    expect(to).toBe(holder);
    expect(b.shared.stats().prefixIndex).toMatchObject({ state: 'ok', lookups: 1, hits: 1 });
    expect(policy.stats().reasons.cache_hit).toBe(1);
  });
});
