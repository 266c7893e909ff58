/**
 * What the Redis store keeps, and for whom, on a real `redis-server`: namespaces that never see
 * each other, nothing left behind by a clean close (no connection, no keys), and neither routing
 * keys nor prompt text among the stored keys and values.
 */
import type { Redis } from 'ioredis';
import { Redis as IoRedis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { createPolicy } from '../../src/index.js';
import { RedisSharedStore } from '../../src/redis/index.js';
import { essay, rejectsCode } from '../support/fixtures.js';
import {
  adminClient,
  countByUrl,
  expectedLoads,
  loadsOf,
  noRedis,
  type ReplicaOptions,
  redisServer,
  replica,
  routedTo,
  syncAll,
  Teardown,
  take,
  tokens,
  until,
} from './redis-replicas.js';

/**
 * Model `m` round-robin, `s` sticky by routing key, `c` by prompt prefix, in `namespace`; fresh
 * policy instances for each replica (a policy belongs to one router).
 */
function mixed(namespace: string, seed: number): ReplicaOptions {
  return {
    models: ['m', 's', 'c'],
    policies: { s: createPolicy('manual', { seed }), c: 'cache_aware' },
    store: { namespace },
  };
}

async function connectedClients(admin: Redis): Promise<number> {
  const info = await admin.info('clients');
  return Number(/connected_clients:(\d+)/.exec(info)?.[1]);
}

/** Every key with its value, whatever its type, as text. */
async function dump(admin: Redis): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const key of await admin.keys('*')) {
    const type = await admin.type(key);
    const value =
      type === 'string'
        ? await admin.get(key)
        : type === 'hash'
          ? await admin.hgetall(key)
          : type === 'zset'
            ? await admin.zrange(key, '0', '-1', 'WITHSCORES')
            : type;
    out.set(key, JSON.stringify(value));
  }
  return out;
}

describe.skipIf(noRedis)('what the Redis store keeps, and for whom', () => {
  const t = new Teardown();
  afterEach(() => t.run());

  it('keeps two namespaces on one server apart: loads, sessions and prefixes', async () => {
    const server = await redisServer(t);
    const admin = await adminClient(t, server.url);
    const [a1, a2, b1, b2] = [
      await replica(t, server.url, mixed('a', 1)),
      await replica(t, server.url, mixed('a', 2)),
      await replica(t, server.url, mixed('b', 3)),
      await replica(t, server.url, mixed('b', 4)),
    ];
    const inA = countByUrl(take(a1, 2));
    const inB = countByUrl(take(b1, 7));
    await syncAll([a1, a2, b1, b2]);
    await syncAll([a1, a2, b1, b2]);

    expect(loadsOf(a2)).toEqual(expectedLoads(a2, inA));
    expect(loadsOf(b2)).toEqual(expectedLoads(b2, inB));
    expect(a2.shared.stats().loads.routers).toBe(1);
    expect(b2.shared.stats().loads.routers).toBe(1);

    const session = { model: 's', routingKey: 'user-1' };
    const prompt = { model: 'c', tokens: tokens(5, 512) };
    await routedTo(a1, session);
    await routedTo(a1, prompt);
    await a1.shared.flush();
    for (const r of [a2, b2]) {
      await routedTo(r, session);
      await routedTo(r, prompt);
    }

    expect(a2.shared.stats().sessions).toMatchObject({ lookups: 1, hits: 1 });
    expect(a2.shared.stats().prefixIndex).toMatchObject({ lookups: 1, hits: 1 });
    expect(b2.shared.stats().sessions).toMatchObject({ lookups: 1, hits: 0, failures: 0 });
    expect(b2.shared.stats().prefixIndex).toMatchObject({ lookups: 1, hits: 0, failures: 0 });
    const keys = await admin.keys('*');
    expect(keys.length).toBeGreaterThan(0);
    for (const key of keys) expect(key).toMatch(/^\{[ab]\}:/);
  });

  it.each(['a{b', 'a}b', 'two words', 'tab\there', 'new\nline'])(
    'rejects the namespace %j with INVALID_ARGUMENT',
    async (namespace) => {
      await rejectsCode(RedisSharedStore.create({ namespace }), 'INVALID_ARGUMENT');
    },
  );

  it('leaves no connection and no keys of a router after its close', async () => {
    const server = await redisServer(t);
    const admin = await adminClient(t, server.url);
    const baseline = await connectedClients(admin);
    const leaving = await replica(t, server.url, { store: { namespace: 'ns' } });
    const staying = await replica(t, server.url, { store: { namespace: 'ns' } });
    take(leaving, 3);
    take(staying, 2);
    await syncAll([leaving, staying]);
    const id = leaving.shared.routerId;
    expect(await connectedClients(admin)).toBe(baseline + 2);
    expect(await admin.exists(`{ns}:load:${id}`)).toBe(1);
    expect(await admin.zscore('{ns}:routers', id)).not.toBeNull();

    await leaving.router.close();
    await leaving.store.close();

    expect(await until(async () => (await connectedClients(admin)) === baseline + 1)).toBe(true);
    expect(await admin.exists(`{ns}:load:${id}`)).toBe(0);
    expect(await admin.zscore('{ns}:routers', id)).toBeNull();
    // The other router's share is untouched.
    expect(await admin.exists(`{ns}:load:${staying.shared.routerId}`)).toBe(1);
    expect(await admin.zscore('{ns}:routers', staying.shared.routerId)).not.toBeNull();

    await staying.router.close();
    await staying.store.close();
    expect(await until(async () => (await connectedClients(admin)) === baseline)).toBe(true);
    expect(await admin.keys('{ns}:*')).toEqual([]);
  });

  it('leaves a client it was given open', async () => {
    const server = await redisServer(t);
    const admin = await adminClient(t, server.url);
    const baseline = await connectedClients(admin);
    const client = new IoRedis(server.url, { lazyConnect: true, enableOfflineQueue: false });
    client.on('error', () => {}); // the store's calls report their own failures
    t.add(() => client.disconnect());
    await client.connect();
    const r = await replica(t, server.url, { store: { client } });
    take(r, 2);
    await r.shared.sync();
    expect(r.shared.stats().loads).toMatchObject({ state: 'ok', syncs: 2 });

    await r.router.close();
    await r.store.close();

    expect(client.status).toBe('ready');
    expect(await client.ping()).toBe('PONG');
    expect(await connectedClients(admin)).toBe(baseline + 1);
    expect(await admin.exists(`{fleetroute}:load:${r.shared.routerId}`)).toBe(0);
  });

  it('stores neither routing keys nor prompt text', async () => {
    const server = await redisServer(t);
    const admin = await adminClient(t, server.url);
    const a = await replica(t, server.url, mixed('fleet', 1));
    const b = await replica(t, server.url, mixed('fleet', 2));
    const secretText = `my secret prompt ${essay(9, 2000)}`;
    await routedTo(a, { model: 's', routingKey: 'secret-user-key' });
    await routedTo(a, {
      model: 's',
      headers: { 'x-fleetroute-routing-key': 'secret-user-key-in-header' },
    });
    await routedTo(a, { model: 'c', text: secretText });
    take(a, 2);
    await a.shared.flush();
    await syncAll([a, b]);
    // Shared for real: `b` finds both.
    await routedTo(b, { model: 's', routingKey: 'secret-user-key' });
    await routedTo(b, { model: 'c', text: secretText });
    expect(b.shared.stats().sessions.hits).toBe(1);
    expect(b.shared.stats().prefixIndex.hits).toBe(1);

    const stored = await dump(admin);
    const keys = [...stored.keys()];
    expect(keys.some((k) => k.startsWith('{fleet}:s:'))).toBe(true);
    expect(keys.some((k) => k.startsWith('{fleet}:p:'))).toBe(true);
    for (const [key, value] of stored) {
      for (const secret of ['secret-user-key', 'my secret prompt', secretText.slice(100, 140)]) {
        expect(key).not.toContain(secret);
        expect(value).not.toContain(secret);
      }
    }
  });
});
