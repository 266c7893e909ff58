/**
 * Shared state through faults of a real `redis-server`: a crash and a restart on the same port
 * (empty), a stall (SIGSTOP) and its end, a server that requires a password, and a client set up
 * for TLS against a plain server. Routing never waits on the store nor fails because of it; the
 * `sharedState` observation says when a part degraded and when it recovered.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createPolicy } from '../../src/index.js';
import {
  countByUrl,
  expectedLoads,
  lastOf,
  loadsOf,
  noRedis,
  observed,
  type Replica,
  redisServer,
  replica,
  routedTo,
  sleep,
  syncAll,
  Teardown,
  take,
  tokens,
  until,
} from './redis-replicas.js';

const ok = async () => ({ status: 200 });

/** Syncs `r` until its loads part has degraded (bounded). */
function degrades(r: Replica): Promise<boolean> {
  return until(async () => {
    await r.shared.sync();
    return r.shared.stats().loads.state === 'degraded';
  });
}

/** Routing on local state: `select` leases a worker and `execute` answers. */
async function expectRoutes(r: Replica): Promise<void> {
  const lease = r.router.select({ model: 'm' });
  expect(lease).toBeDefined();
  lease?.release();
  await expect(r.router.execute({ model: 'm' }, ok)).resolves.toEqual({ status: 200 });
}

describe.skipIf(noRedis)('shared state through redis-server faults', () => {
  const t = new Teardown();
  afterEach(() => t.run());

  it('routes through a crash of redis-server, and rewrites its counts in full on the restarted one', async () => {
    const first = await redisServer(t);
    const a = await replica(t, first.url);
    const b = await replica(t, first.url);
    const totals = countByUrl([...take(a, 6), ...take(b, 3)]);
    await syncAll([a, b]);
    await syncAll([a, b]);
    expect(loadsOf(b)).toEqual(expectedLoads(b, totals));
    const before = { a: a.shared.stats().loads.rebuilds, b: b.shared.stats().loads.rebuilds };

    first.signal('SIGKILL');
    await first.stop();

    await expectRoutes(a);
    expect(await degrades(a)).toBe(true);
    expect(lastOf(a, 'loads')).toMatchObject({ part: 'loads', state: 'degraded' });
    expect(lastOf(a, 'loads')?.reason).toEqual(expect.any(String));
    expect(a.warnings).toContain('FLEETROUTE_SHARED_STATE_DEGRADED');
    await expectRoutes(a);

    // Same port, nothing stored: every router's counts are gone.
    await redisServer(t, { port: first.port });
    const recovered = await until(async () => {
      await a.shared.sync();
      return lastOf(a, 'loads')?.state === 'ok';
    }, 15_000);
    expect(recovered).toBe(true);
    // `b` did not sync while the server was down: its first sync on the new server is refused
    // (its counts are not there), its second rewrites them, and `a` reads them on its next.
    expect(await until(() => b.store.status === 'ready', 15_000)).toBe(true);
    await syncAll([a, b]);
    await syncAll([a, b]);
    await syncAll([a, b]);

    expect(a.shared.stats().loads.rebuilds).toBeGreaterThan(before.a);
    expect(b.shared.stats().loads.rebuilds).toBeGreaterThan(before.b);
    expect(observed(b, 'loads', 'degraded')).toBe(false);
    expect(loadsOf(a)).toEqual(expectedLoads(a, totals));
    expect(loadsOf(b)).toEqual(expectedLoads(b, totals));
    expect(a.shared.stats().loads).toMatchObject({ state: 'ok', routers: 1 });
  });

  it('completes requests through a 5 s stall of redis-server, degrades on timeouts, and recovers after it', async () => {
    const server = await redisServer(t);
    // Default timer and deadlines: a sync every 100 ms (timing out after 1 s), lookups waited
    // at most 5 ms (sessions) and 2 ms (prefix index).
    const a = await replica(t, server.url, {
      models: ['m', 'c'],
      policy: createPolicy('manual', { seed: 7 }),
      policies: { c: 'cache_aware' },
      shared: { loads: {}, sessions: {}, prefixIndex: {} },
    });
    let n = 0;
    const request = () => {
      n++;
      return n % 2 === 0
        ? { model: 'm', routingKey: `user-${n}` }
        : { model: 'c', tokens: [...tokens(1, 512), ...tokens(n, 64)] };
    };
    await routedTo(a, request());
    await routedTo(a, request());

    server.signal('SIGSTOP');
    const stalled = Date.now();
    // What each call made during the stall came to: a worker's URL, or the error it threw.
    const outcomes: (string | Error | undefined)[] = [];
    // 5 s at least, and longer only if the loads part has not degraded yet (bounded).
    while (
      Date.now() - stalled < 5000 ||
      (a.shared.stats().loads.state === 'ok' && Date.now() - stalled < 20_000)
    ) {
      const i = outcomes.push(undefined) - 1;
      routedTo(a, request()).then(
        (url) => (outcomes[i] = url),
        (error: Error) => (outcomes[i] = error),
      );
      await sleep(50);
    }
    // Every call made during the stall completes while the server is still stopped.
    const completed = await until(() => outcomes.every((o) => o !== undefined));
    const during = a.shared.stats();
    server.signal('SIGCONT');

    expect(completed).toBe(true);
    for (const outcome of outcomes)
      expect(outcome).toEqual(expect.stringMatching(/^http:\/\/w\d:8000$/));
    expect(observed(a, 'loads', 'degraded')).toBe(true);
    expect(a.events.find((e) => e.part === 'loads')).toMatchObject({
      state: 'degraded',
      reason: 'timeout',
    });
    expect(during.loads.timeouts).toBeGreaterThanOrEqual(3);
    expect(during.sessions.timeouts).toBeGreaterThan(0);
    expect(during.prefixIndex.timeouts).toBeGreaterThan(0);
    expect(during.sessions.state).toBe('degraded');
    expect(during.prefixIndex.state).toBe('degraded');

    const recovered = await until(async () => {
      await routedTo(a, request());
      await routedTo(a, request());
      const s = a.shared.stats();
      return s.loads.state === 'ok' && s.sessions.state === 'ok' && s.prefixIndex.state === 'ok';
    }, 30_000);
    expect(recovered).toBe(true);
    for (const part of ['loads', 'sessions', 'prefixIndex'] as const)
      expect(lastOf(a, part)).toEqual({ type: 'sharedState', part, state: 'ok' });
  });

  it('degrades loads on the first sync stalled past loads.timeoutMs, and recovers after the stall', async () => {
    const server = await redisServer(t);
    const a = await replica(t, server.url, { shared: { loads: { refreshMs: 0, timeoutMs: 200 } } });
    await a.shared.sync();
    expect(a.shared.stats().loads.state).toBe('ok');

    server.signal('SIGSTOP');
    await a.shared.sync();
    const during = a.shared.stats().loads;
    server.signal('SIGCONT');

    expect(during).toMatchObject({ state: 'degraded', timeouts: 1 });
    expect(a.events).toEqual([
      { type: 'sharedState', part: 'loads', state: 'degraded', reason: 'timeout' },
    ]);
    expect(a.warnings).toEqual(['FLEETROUTE_SHARED_STATE_DEGRADED']);
    const recovered = await until(async () => {
      await a.shared.sync();
      return a.shared.stats().loads.state === 'ok';
    });
    expect(recovered).toBe(true);
  });

  it('shares loads only with routers that give the password, and routes without it', async () => {
    const password = 'correct horse staple';
    const server = await redisServer(t, { password });
    const bare = `redis://127.0.0.1:${server.port}`;
    const stranger = await replica(t, bare, { store: { connectTimeoutMs: 1000 } });
    const byUrl = await replica(t, server.url);
    const byOption = await replica(t, bare, { store: { redis: { password } } });
    const own = countByUrl(take(stranger, 2));
    const totals = countByUrl([...take(byUrl, 3), ...take(byOption, 5)]);

    expect(stranger.store.status).not.toBe('ready');
    expect(await degrades(stranger)).toBe(true);
    await syncAll([byUrl, byOption]);
    await syncAll([byUrl, byOption]);

    await expectRoutes(stranger);
    expect(loadsOf(stranger)).toEqual(expectedLoads(stranger, own));
    for (const r of [byUrl, byOption]) {
      expect(loadsOf(r)).toEqual(expectedLoads(r, totals));
      expect(r.shared.stats().loads).toMatchObject({ state: 'ok', routers: 1 });
      expect(observed(r, 'loads', 'degraded')).toBe(false);
    }
  });

  it('passes ioredis options through: a TLS client against a plain server never connects, and routing goes on', async () => {
    const server = await redisServer(t);
    const plain = await replica(t, server.url);
    const tls = await replica(t, server.url, {
      store: { redis: { tls: { rejectUnauthorized: false } }, connectTimeoutMs: 1000 },
    });

    expect(plain.store.status).toBe('ready');
    expect(tls.store.status).not.toBe('ready');
    expect(await degrades(tls)).toBe(true);
    await expectRoutes(tls);
    await plain.shared.sync();
    expect(plain.shared.stats().loads.state).toBe('ok');
  });
});
