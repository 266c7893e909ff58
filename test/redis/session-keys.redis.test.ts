/**
 * Session keys on a real `redis-server` are keyed hashes: a dump of the server cannot confirm a
 * guessed routing key (an e-mail address) by hashing it. The secret is the namespace's — given
 * to every router (`sessionSecret`), or generated once by the first router that needs it and
 * kept in Redis — and a rotation keeps the sessions written under the previous one readable.
 */
import type { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { loadedHasher } from '../../src/core/hash.js';
import { createPolicy } from '../../src/index.js';
import { RedisSharedStore } from '../../src/redis/index.js';
import { rejectsCode } from '../support/fixtures.js';
import {
  adminClient,
  noRedis,
  type Replica,
  type ReplicaOptions,
  redisServer,
  replica,
  routedTo,
  Teardown,
} from './redis-replicas.js';

const EMAIL = 'alice@example.com';
const SECRET_KEY = '{fleetroute}:session-secret';

/** What a session key was stored under before keyed hashes: a plain hash of the routing key. */
function plainSessionKey(key: string): string {
  const hex = loadedHasher()!.h64(`fleetroute:session:${key}`).toString(16).padStart(16, '0');
  return `{fleetroute}:s:${hex}`;
}

async function sessionKeys(admin: Redis): Promise<string[]> {
  return (await admin.keys('{fleetroute}:s:*')).sort();
}

/** A replica routing model `m` with `manual` (its own seed: alone, replicas place keys apart). */
function sticky(seed: number, options: ReplicaOptions = {}): ReplicaOptions {
  return { policy: createPolicy('manual', { seed }), ...options };
}

/** Routes `key` through `a`, writes it, and routes it through each of `others`. */
async function placeThenFollow(key: string, a: Replica, ...others: Replica[]): Promise<string[]> {
  const placed = await routedTo(a, { model: 'm', routingKey: key });
  await a.shared.flush();
  const urls = [placed];
  for (const r of others) urls.push(await routedTo(r, { model: 'm', routingKey: key }));
  return urls;
}

describe.skipIf(noRedis)('session keys in Redis', () => {
  const t = new Teardown();
  afterEach(() => t.run());

  it('are keyed hashes: the plain hash of a routing key confirms nothing from a dump', async () => {
    const server = await redisServer(t);
    const admin = await adminClient(t, server.url);
    const a = await replica(t, server.url, sticky(1));
    await routedTo(a, { model: 'm', routingKey: EMAIL });
    await a.shared.flush();

    const stored = await sessionKeys(admin);
    expect(stored).toHaveLength(1);
    expect(stored).not.toContain(plainSessionKey(EMAIL));
    expect(stored[0]).toMatch(/^\{fleetroute\}:s:[0-9a-f]{32}$/);
    for (const key of await admin.keys('*')) expect(key).not.toContain(EMAIL);
  });

  it('use one generated secret per namespace, made once by whichever router asks first', async () => {
    const server = await redisServer(t);
    const admin = await adminClient(t, server.url);
    const replicas = await Promise.all(
      [1, 2, 3, 4].map((seed) => replica(t, server.url, sticky(seed))),
    );
    // Every router at once: each places its own key, then finds every other router's.
    const placed = await Promise.all(
      replicas.map((r, i) => routedTo(r, { model: 'm', routingKey: `user-${i}` })),
    );
    await Promise.all(replicas.map((r) => r.shared.flush()));
    for (const r of replicas)
      for (let i = 0; i < replicas.length; i++)
        expect(await routedTo(r, { model: 'm', routingKey: `user-${i}` })).toBe(placed[i]);

    const secret = await admin.hgetall(SECRET_KEY);
    expect(secret.id).toMatch(/^[0-9a-f]+$/);
    expect(secret.key).toMatch(/^[0-9a-f]{64}$/);
    expect(secret.previous).toBeUndefined();
    expect(await sessionKeys(admin)).toHaveLength(4);
  });

  it('use a secret given to the store, kept out of Redis; routers given another share nothing', async () => {
    const server = await redisServer(t);
    const admin = await adminClient(t, server.url);
    const secret = 'a long secret of the prod fleet';
    const a = await replica(t, server.url, sticky(1, { store: { sessionSecret: secret } }));
    const b = await replica(t, server.url, sticky(2, { store: { sessionSecret: secret } }));
    const other = await replica(
      t,
      server.url,
      sticky(2, { store: { sessionSecret: 'another secret of 30 chars' } }),
    );

    const [placed, throughB] = await placeThenFollow('user-1', a, b);
    await routedTo(other, { model: 'm', routingKey: 'user-1' });

    expect(throughB).toBe(placed);
    expect(b.shared.stats().sessions.hits).toBe(1);
    expect(other.shared.stats().sessions.hits).toBe(0);
    expect(await admin.exists(SECRET_KEY)).toBe(0);
    for (const key of await admin.keys('*'))
      expect((await admin.dumpBuffer(key)).toString('latin1')).not.toContain(secret);
  });

  it('keep the sessions of the previous secret readable through a rotation, given or generated', async () => {
    const server = await redisServer(t);
    // Given: the new secret first, the old one after it.
    const old = 'the secret used until today';
    const renewed = 'the secret used from today on';
    const a = await replica(t, server.url, sticky(1, { store: { sessionSecret: old } }));
    const b = await replica(t, server.url, sticky(2, { store: { sessionSecret: [renewed, old] } }));
    const [placed, throughB] = await placeThenFollow('user-1', a, b);
    expect(throughB).toBe(placed);

    // Generated: one router rotates, the others notice on their next session call.
    const c = await replica(t, server.url, sticky(3, { store: { namespace: 'gen' } }));
    const d = await replica(t, server.url, sticky(4, { store: { namespace: 'gen' } }));
    const [before] = await placeThenFollow('user-2', c, d);
    await d.store.rotateSessionSecret();
    expect(await routedTo(c, { model: 'm', routingKey: 'user-2' })).toBe(before);
    const fresh = createPolicy('manual', { seed: 5 });
    const e = await replica(t, server.url, { policy: fresh, store: { namespace: 'gen' } });
    expect(await routedTo(e, { model: 'm', routingKey: 'user-2' })).toBe(before);
    expect(e.shared.stats().sessions.hits).toBe(1);
    const [after, followed] = await placeThenFollow('user-3', c, d);
    expect(followed).toBe(after);
  });

  it('make a new secret after the namespace was cleared, and the routers follow it', async () => {
    const server = await redisServer(t);
    const admin = await adminClient(t, server.url);
    const a = await replica(t, server.url, sticky(1));
    const b = await replica(t, server.url, sticky(2));
    await placeThenFollow('user-1', a, b);
    const first = await admin.hget(SECRET_KEY, 'id');
    await a.store.clear();

    const [placed, throughB] = await placeThenFollow('user-2', a, b);
    expect(throughB).toBe(placed);
    expect(await admin.hget(SECRET_KEY, 'id')).not.toBe(first);
    expect(a.shared.stats().sessions.failures + b.shared.stats().sessions.failures).toBe(0);
  });

  it('refuses a short secret, and a rotation of a given one', async () => {
    const server = await redisServer(t);
    await rejectsCode(
      RedisSharedStore.create({ url: server.url, sessionSecret: 'short' }),
      'INVALID_ARGUMENT',
    );
    await rejectsCode(
      RedisSharedStore.create({ url: server.url, sessionSecret: [] }),
      'INVALID_ARGUMENT',
    );
    const store = await RedisSharedStore.create({
      url: server.url,
      sessionSecret: 'long enough to be a secret',
    });
    t.add(() => store.close());
    await rejectsCode(store.rotateSessionSecret(), 'INVALID_ARGUMENT');
  });
});
