/**
 * Values in the namespace that no router wrote, on a real `redis-server`: a client with access to
 * the namespace writes loads, heartbeats, sessions and prefix holders outside what a router
 * could have written. Each is ignored and counted (`stats().<part>.ignored`); the routers keep
 * sharing what the others wrote, and allocate nothing in proportion to a number they read.
 */
import type { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { createPolicy, type Policy } from '../../src/index.js';
import type { ManualPolicy } from '../../src/policies/manual.js';
import { manualSnapshotOf } from '../../src/policies/manual.js';
import {
  adminClient,
  countByUrl,
  expectedLoads,
  loadsOf,
  noRedis,
  type Replica,
  redisServer,
  replica,
  routedTo,
  syncAll,
  Teardown,
  take,
  tokens,
  workerUrl,
} from './redis-replicas.js';

const NS = '{fleetroute}:';

/** The server's clock (ms): what the store dates heartbeats and prefix records with. */
async function serverNow(admin: Redis): Promise<number> {
  const [seconds, micros] = await admin.time();
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}

/** A router nobody runs: its counts (`fields`) and a heartbeat dated `at`. */
async function fakeRouter(
  admin: Redis,
  id: string,
  at: number,
  fields: Record<string, string>,
): Promise<void> {
  await admin.hset(`${NS}load:${id}`, { '~epoch': `${id}#1`, ...fields });
  await admin.zadd(`${NS}routers`, at, id);
}

/** Every key of the namespace matching `pattern` (after the prefix). */
async function keysOf(admin: Redis, pattern: string): Promise<string[]> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await admin.scan(cursor, 'MATCH', `${NS}${pattern}`, 'COUNT', 500);
    cursor = next;
    keys.push(...batch);
  } while (cursor !== '0');
  return keys;
}

describe.skipIf(noRedis)('values in the namespace that no router wrote', () => {
  const t = new Teardown();
  afterEach(() => t.run());

  /** Two replicas, `a` holding leases, both synced twice: `b` reads `a`'s counts. */
  async function twoReplicas(): Promise<{
    readonly admin: Redis;
    readonly a: Replica;
    readonly b: Replica;
    readonly totals: Map<string, number>;
  }> {
    const server = await redisServer(t);
    const admin = await adminClient(t, server.url);
    const a = await replica(t, server.url);
    const b = await replica(t, server.url);
    const totals = countByUrl(take(a, 6));
    await syncAll([a, b]);
    await syncAll([a, b]);
    expect(loadsOf(b)).toEqual(expectedLoads(b, totals));
    return { admin, a, b, totals };
  }

  it.each([
    ['ten million', '10000000'],
    ['10^12', '1000000000000'],
    ['negative', '-5'],
    ['fractional', '1.5'],
    ['not a number', 'many'],
    ['a 100 KB number', '9'.repeat(100_000)],
  ])('ignores a load of %s, counted, and allocates nothing for it', async (_, value) => {
    const { admin, a, b, totals } = await twoReplicas();
    await fakeRouter(admin, 'intruder', await serverNow(admin), {
      [`l:${workerUrl(0)}`]: value,
      [`p:${workerUrl(0)}`]: '1',
    });
    const buffers = process.memoryUsage().arrayBuffers;
    await syncAll([a, b]);
    const grown = process.memoryUsage().arrayBuffers - buffers;

    expect(loadsOf(b)).toEqual(expectedLoads(b, totals));
    expect(b.shared.stats().loads).toMatchObject({ state: 'ok', failures: 0, routers: 2 });
    expect(b.shared.stats().loads.ignored).toBeGreaterThanOrEqual(1);
    expect(grown).toBeLessThan(16 * 1024 * 1024);
    // The worker is still tracked: a lease taken now counts, and so does its release.
    const lease = b.registry.getByUrl(workerUrl(0))!.acquire();
    expect(b.registry.getByUrl(workerUrl(0))!.load).toBe((totals.get(workerUrl(0)) ?? 0) + 1);
    lease.release();
    expect(loadsOf(b)).toEqual(expectedLoads(b, totals));
  });

  it('ignores a router whose heartbeat is dated ahead of the server, counted', async () => {
    const { admin, a, b, totals } = await twoReplicas();
    const day = 86_400_000;
    await fakeRouter(admin, 'from-the-future', (await serverNow(admin)) + day, {
      [`l:${workerUrl(1)}`]: '5',
    });
    await syncAll([a, b]);

    expect(loadsOf(b)).toEqual(expectedLoads(b, totals));
    expect(b.shared.stats().loads).toMatchObject({ state: 'ok', routers: 1 });
    expect(b.shared.stats().loads.ignored).toBeGreaterThanOrEqual(1);
  });

  it('reads at most 1,024 other routers, the most recently synced, and counts the rest', async () => {
    const { admin, a, b, totals } = await twoReplicas();
    // 1,100 routers nobody runs, synced a moment before the real ones, with a count each.
    const at = (await serverNow(admin)) - 50;
    const batch = admin.pipeline();
    for (let i = 0; i < 1100; i++) {
      batch.hset(`${NS}load:ghost-${i}`, { '~epoch': `ghost-${i}#1`, [`l:${workerUrl(3)}`]: '1' });
      batch.zadd(`${NS}routers`, at, `ghost-${i}`);
    }
    await batch.exec();
    await syncAll([a, b]);

    const loads = b.shared.stats().loads;
    expect(loads).toMatchObject({ state: 'ok', routers: 1024 });
    expect(loads.ignored).toBeGreaterThanOrEqual(1100 - 1023);
    // `a` (synced last) is read: its counts are all there, and 1,023 ghosts' on w3.
    const expected = expectedLoads(b, totals);
    expected.set(workerUrl(3), (expected.get(workerUrl(3)) ?? 0) + 1023);
    expect(loadsOf(b)).toEqual(expected);
  });

  it('does not read a load hash of more fields than a router writes, counted', async () => {
    const { admin, a, b, totals } = await twoReplicas();
    for (let from = 0; from < 140_000; from += 10_000) {
      const fields: Record<string, string> = {};
      for (let i = from; i < from + 10_000; i++) fields[`x:${i}`] = '1';
      await admin.hset(`${NS}load:wide`, fields);
    }
    await fakeRouter(admin, 'wide', await serverNow(admin), { [`l:${workerUrl(0)}`]: '5' });
    await syncAll([a, b]);

    expect(loadsOf(b)).toEqual(expectedLoads(b, totals));
    expect(b.shared.stats().loads).toMatchObject({ state: 'ok', routers: 2, ignored: 1 });
  });

  it('ignores counts under fields a router never writes, and prefilling above the load, counted', async () => {
    const { admin, a, b, totals } = await twoReplicas();
    await fakeRouter(admin, 'odd', await serverNow(admin), {
      [`l:${workerUrl(2)}`]: '2',
      [`p:${workerUrl(2)}`]: '9',
      [`l:http://${'x'.repeat(40_000)}:8000`]: '1',
      [`q:${workerUrl(3)}`]: '4',
    });
    await syncAll([a, b]);

    const w2 = b.registry.getByUrl(workerUrl(2))!;
    expect(w2.load).toBe((totals.get(workerUrl(2)) ?? 0) + 2);
    // `a`'s leases are all awaiting a first token: the intruder's 9 is not among them.
    expect(w2.prefilling).toBe(totals.get(workerUrl(2)) ?? 0);
    expect(b.shared.stats().loads.ignored).toBeGreaterThanOrEqual(3);
    expect(b.shared.stats().loads.state).toBe('ok');
  });

  it.each([
    ['a 1 MB value', () => 'x'.repeat(1 << 20), true],
    ['three workers', () => `${workerUrl(0)}\n${workerUrl(1)}\n${workerUrl(2)}`, true],
    ['an empty value', () => '', true],
    ['no expiry', () => workerUrl(3), false],
  ])('ignores a session holding %s, counted, and places the key itself', async (_, value, px) => {
    const server = await redisServer(t);
    const admin = await adminClient(t, server.url);
    const a = await replica(t, server.url, { policy: createPolicy('manual', { seed: 1 }) });
    await routedTo(a, { model: 'm', routingKey: 'user-1' });
    await a.shared.flush();
    const sessions = await keysOf(admin, 's:*');
    expect(sessions).toHaveLength(1);
    if (px) await admin.set(sessions[0]!, value(), 'PX', 600_000);
    else await admin.set(sessions[0]!, value());

    const policy: Policy = createPolicy('manual', { seed: 2 });
    const b = await replica(t, server.url, { policy });
    const url = await routedTo(b, { model: 'm', routingKey: 'user-1' });

    expect(url).toMatch(/^http:\/\/w\d:8000$/);
    expect(b.shared.stats().sessions).toMatchObject({ state: 'ok', hits: 0, ignored: 1 });
    const entry = manualSnapshotOf(policy as ManualPolicy).entries.find((e) => e.key === 'user-1');
    expect(entry).toMatchObject({ primary: url });
    expect(entry?.secondary).toBeUndefined();
  });

  it('ignores keys of the wrong type (a load, a session), counted, and repairs the session secret', async () => {
    const server = await redisServer(t);
    const admin = await adminClient(t, server.url);
    const a = await replica(t, server.url, { policy: createPolicy('manual', { seed: 1 }) });
    const b = await replica(t, server.url, { policy: createPolicy('manual', { seed: 2 }) });
    const totals = countByUrl(take(a, 3));
    await admin.set(`${NS}load:poison`, 'not a hash');
    await admin.zadd(`${NS}routers`, await serverNow(admin), 'poison');
    await syncAll([a, b]);
    await syncAll([a, b]);
    expect(loadsOf(b)).toEqual(expectedLoads(b, totals));
    expect(b.shared.stats().loads).toMatchObject({ state: 'ok', failures: 0 });
    expect(b.shared.stats().loads.ignored).toBeGreaterThanOrEqual(1);

    await routedTo(a, { model: 'm', routingKey: 'user-1' });
    await a.shared.flush();
    const [session] = await keysOf(admin, 's:*');
    await admin.del(session!);
    await admin.hset(session!, { primary: workerUrl(0) });
    await routedTo(b, { model: 'm', routingKey: 'user-1' });
    expect(b.shared.stats().sessions).toMatchObject({ state: 'ok', hits: 0, ignored: 1 });
    await b.shared.flush();

    await admin.del(`${NS}session-secret`);
    await admin.set(`${NS}session-secret`, 'not a hash');
    const placed = await routedTo(a, { model: 'm', routingKey: 'user-2' });
    await a.shared.flush();
    expect(await routedTo(b, { model: 'm', routingKey: 'user-2' })).toBe(placed);
    expect(await admin.type(`${NS}session-secret`)).toBe('hash');
    expect(a.shared.stats().sessions.failures + b.shared.stats().sessions.failures).toBe(0);
  });

  it('ignores prefix holders dated ahead of the server or with oversized names, counted, and follows the real one', async () => {
    const server = await redisServer(t);
    const admin = await adminClient(t, server.url);
    const options = {
      models: ['c'],
      policy: createPolicy('cache_aware', { missPlacement: 'least_load' }),
      shared: { loads: false as const, prefixIndex: { maxHolders: 4 } },
    };
    const a = await replica(t, server.url, options);
    const b = await replica(t, server.url, {
      ...options,
      policy: createPolicy('cache_aware', { missPlacement: 'least_load' }),
    });
    const request = { model: 'c', tokens: tokens(7, 1024) };
    // `a`'s least loaded worker is w3: it holds leases on the others.
    for (let i = 0; i < 3; i++) a.held.push(a.registry.getByUrl(workerUrl(i))!.acquire());
    expect(await routedTo(a, request)).toBe(workerUrl(3));
    await a.shared.flush();

    const now = await serverNow(admin);
    const blocks = await keysOf(admin, 'p:*');
    expect(blocks.length).toBeGreaterThan(0);
    for (const block of blocks) {
      await admin.zadd(block, now + 86_400_000, 'http://ahead-1:8000');
      await admin.zadd(block, now + 86_400_000, 'http://ahead-2:8000');
      await admin.zadd(block, now + 1, `http://${'y'.repeat(40_000)}:8000`);
    }

    // Alone, `b` would send the request to w0 (all idle, the first wins).
    expect(await routedTo(b, request)).toBe(workerUrl(3));
    expect(b.shared.stats().prefixIndex).toMatchObject({ state: 'ok', hits: 1 });
    expect(b.shared.stats().prefixIndex.ignored).toBeGreaterThanOrEqual(3);
  });
});
