/**
 * The shared-state tests' `redis-server`: it starts on a free loopback port, answers a real
 * `ioredis` client, requires its password when given one, models a crash (SIGKILL) and a stall
 * (SIGSTOP), and stops leaving no process behind. In CI (`CI=true`) a missing server fails here
 * rather than skipping, as `.ci/run` installs it.
 */
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { hasRedisServer, type RedisServer, startRedis } from './redis-server.js';

const available = hasRedisServer();
const started: RedisServer[] = [];
const clients: Redis[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) c.disconnect();
  for (const s of started.splice(0)) await s.stop();
});

function client(url: string, commandTimeout = 5_000): Redis {
  const c = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1, commandTimeout });
  c.on('error', () => {}); // each test asserts on what its commands answer
  clients.push(c);
  return c;
}

describe.skipIf(!available && process.env.CI !== 'true')('redis-server for tests', () => {
  it('is installed in CI', () => {
    expect(available).toBe(true);
  });

  it('starts on a free port, answers ioredis, and stops leaving no process', async () => {
    const server = await startRedis();
    started.push(server);
    const c = client(server.url);
    await c.connect();
    await c.set('fleetroute:test', 'ok');
    expect(await c.get('fleetroute:test')).toBe('ok');
    c.disconnect();
    await server.stop();
    expect(server.process.exitCode !== null || server.process.signalCode !== null).toBe(true);
    await server.stop(); // idempotent
  });

  it('requires its password when given one', async () => {
    const server = await startRedis({ password: 'correct horse staple' });
    started.push(server);
    const bare = client(server.url.replace(/\/\/[^@]*@/, '//'));
    await expect(bare.connect().then(() => bare.get('k'))).rejects.toThrow();
    const authed = client(server.url);
    await authed.connect();
    expect(await authed.ping()).toBe('PONG');
  });

  it('models a stall (SIGSTOP) and a crash (SIGKILL)', async () => {
    const server = await startRedis();
    started.push(server);
    const c = client(server.url, 200);
    await c.connect();
    server.signal('SIGSTOP');
    await expect(c.ping()).rejects.toThrow(/timed out/i);
    server.signal('SIGCONT');
    expect(await c.ping()).toBe('PONG');
    server.signal('SIGKILL');
    await new Promise((r) => server.process.once('exit', r));
    expect(server.process.signalCode).toBe('SIGKILL');
  });
});
