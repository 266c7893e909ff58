/**
 * `DnsDiscovery` over a stand-in resolver: its options (unknown keys and bad values refused),
 * what of an answer it keeps (bounded counts, checked addresses and ports, stable truncation),
 * how a lookup is classed, and its listeners. The real-DNS behaviour is in
 * `dns-discovery.dnsmasq.test.ts`.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { DnsResolverLike, SrvRecord, TtlAddress } from '../../src/dns/dns-answer.js';
import { isDnsName, lookupWorkers } from '../../src/dns/dns-answer.js';
import { createDnsDiscoveryWithResolver } from '../../src/dns/dns-discovery.js';
import { DnsDiscovery, type DnsDiscoveryOptions } from '../../src/dns/index.js';
import { FleetRouteError, WorkerRegistry } from '../../src/index.js';

type Reply<T> = T[] | string;

/** A resolver that answers from a table; a string answer is the error code thrown. */
class TableResolver implements DnsResolverLike {
  a = new Map<string, Reply<TtlAddress>>();
  aaaa = new Map<string, Reply<TtlAddress>>();
  srv = new Map<string, Reply<SrvRecord>>();
  cancelled = 0;

  #answer<T>(table: Map<string, Reply<T>>, name: string): Promise<T[]> {
    const reply = table.get(name) ?? 'ENOTFOUND';
    if (typeof reply === 'string')
      return Promise.reject(Object.assign(new Error(`${reply} ${name}`), { code: reply }));
    return Promise.resolve(reply);
  }
  resolve4(name: string): Promise<TtlAddress[]> {
    return this.#answer(this.a, name);
  }
  resolve6(name: string): Promise<TtlAddress[]> {
    return this.#answer(this.aaaa, name);
  }
  resolveSrv(name: string): Promise<SrvRecord[]> {
    return this.#answer(this.srv, name);
  }
  cancel(): void {
    this.cancelled++;
  }
}

const v4 = (...addresses: string[]): TtlAddress[] =>
  addresses.map((address) => ({ address, ttl: 30 }));
const plan = {
  name: 'w.test',
  record: 'a+aaaa',
  port: 8000,
  scheme: 'http',
  maxWorkers: 1024,
} as const;

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (let step = cleanups.pop(); step !== undefined; step = cleanups.pop()) await step();
});

async function discoveryOver(
  resolver: DnsResolverLike,
  options: { [K in keyof DnsDiscoveryOptions]?: DnsDiscoveryOptions[K] | undefined } = {},
) {
  const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
  const discovery = createDnsDiscoveryWithResolver(
    registry,
    { name: 'w.test', port: 8000, ...options } as DnsDiscoveryOptions,
    resolver,
  );
  cleanups.push(
    () => registry.close(),
    () => discovery.close(),
  );
  return { registry, discovery };
}

describe('DnsDiscovery options', () => {
  const registry = {} as WorkerRegistry;
  it.each([
    [{ name: 'w.test', port: 8000, nope: 1 }, /nope is not an option of dnsDiscovery/],
    [{ port: 8000 }, /dnsDiscovery.name must be/],
    [
      { name: 'w.test' },
      /dnsDiscovery.port must be an integer between 1 and 65535 for a\+aaaa records/,
    ],
    [{ name: 'w.test', record: 'a' }, /dnsDiscovery.port/],
    [{ name: 'bad name!', port: 1 }, /dnsDiscovery.name must be a DNS name/],
    [{ name: 'a..b', port: 1 }, /dnsDiscovery.name/],
    [{ name: 'w.test', port: 0 }, /dnsDiscovery.port/],
    [{ name: 'w.test', port: 8000, record: 'mx' }, /dnsDiscovery.record must be one of/],
    [{ name: 'w.test', port: 8000, servers: [] }, /dnsDiscovery.servers/],
    [{ name: 'w.test', port: 8000, servers: ['not a server'] }, /dnsDiscovery.servers/],
    [{ name: 'w.test', port: 8000, models: ['*'] }, /dnsDiscovery.models/],
    [{ name: 'w.test', port: 8000, status: 'up' }, /dnsDiscovery.status/],
    [{ name: 'w.test', port: 8000, maxWorkers: 0 }, /dnsDiscovery.maxWorkers/],
    [{ name: 'w.test', port: 8000, intervalMs: 100, minIntervalMs: 200 }, /minIntervalMs/],
  ])('refuses %j', (options, message) => {
    const make = () => new DnsDiscovery(registry, options as unknown as DnsDiscoveryOptions);
    expect(make).toThrow(FleetRouteError);
    expect(make).toThrow(message);
  });

  it('refuses what is not a registry', () => {
    expect(() => new DnsDiscovery(registry, { name: 'w.test', port: 8000 })).toThrow(
      /dnsDiscovery registry must be a WorkerRegistry/,
    );
  });

  it('reads a name starting with _ as SRV, which needs no port', async () => {
    const resolver = new TableResolver();
    resolver.srv.set('_http._tcp.w.test', [
      { name: '10.0.0.1', port: 9000, priority: 0, weight: 0 },
    ]);
    const { registry, discovery } = await discoveryOver(resolver, {
      name: '_http._tcp.w.test.',
      port: undefined,
    });
    await discovery.refresh();
    expect(registry.getAll().map((w) => w.url)).toEqual(['http://10.0.0.1:9000']);
  });

  it('registers each worker with the spec options', async () => {
    const resolver = new TableResolver();
    resolver.a.set('w.test', v4('10.0.0.1'));
    const { registry, discovery } = await discoveryOver(resolver, {
      scheme: 'https',
      runtime: 'vllm',
      models: ['m'],
      type: 'prefill',
      labels: { zone: 'a' },
      status: 'pending',
    });
    await discovery.refresh();
    const [worker] = registry.getAll();
    expect(worker).toMatchObject({
      url: 'https://10.0.0.1:8000',
      runtime: 'vllm',
      models: ['m'],
      type: 'prefill',
      labels: { zone: 'a' },
      status: 'pending',
    });
  });
});

describe('a lookup', () => {
  it('keeps at most maxWorkers addresses, the same ones whatever the order, and counts the rest', async () => {
    const resolver = new TableResolver();
    resolver.a.set('w.test', v4('10.0.0.3', '10.0.0.1', '10.0.0.2'));
    const first = await lookupWorkers(resolver, { ...plan, maxWorkers: 2 }, 1_000);
    resolver.a.set('w.test', v4('10.0.0.2', '10.0.0.3', '10.0.0.1'));
    const again = await lookupWorkers(resolver, { ...plan, maxWorkers: 2 }, 1_000);
    expect(first).toEqual({
      kind: 'found',
      urls: ['http://10.0.0.1:8000', 'http://10.0.0.2:8000'],
      ignored: 1,
      ttlMs: 30_000,
    });
    expect(again).toEqual(first);
  });

  it('drops what is not an address of the family asked, and takes the smallest TTL', async () => {
    const resolver = new TableResolver();
    resolver.a.set('w.test', [
      { address: '10.0.0.1', ttl: 7 },
      { address: 'fd00::1', ttl: 1 },
      { address: 'evil.example', ttl: 1 },
    ]);
    resolver.aaaa.set('w.test', [{ address: 'fd00::1', ttl: 3 }]);
    expect(await lookupWorkers(resolver, plan, 1_000)).toEqual({
      kind: 'found',
      urls: ['http://10.0.0.1:8000', 'http://[fd00::1]:8000'],
      ignored: 0,
      ttlMs: 3_000,
    });
  });

  it('fails when either of A and AAAA fails, even if the other answered', async () => {
    const resolver = new TableResolver();
    resolver.a.set('w.test', v4('10.0.0.1'));
    resolver.aaaa.set('w.test', 'ESERVFAIL');
    expect(await lookupWorkers(resolver, plan, 1_000)).toMatchObject({
      kind: 'failed',
      code: 'ESERVFAIL',
    });
  });

  it('is empty when no SRV record is usable: bad ports, bad targets, the "." target', async () => {
    const resolver = new TableResolver();
    resolver.srv.set('_x._tcp.w.test', [
      { name: 'a.w.test', port: 0, priority: 0, weight: 0 },
      { name: '.', port: 80, priority: 0, weight: 0 },
      { name: 'bad name', port: 80, priority: 0, weight: 0 },
      { name: 'x'.repeat(300), port: 80, priority: 0, weight: 0 },
    ]);
    const srvPlan = { ...plan, name: '_x._tcp.w.test', record: 'srv' } as const;
    expect(await lookupWorkers(resolver, srvPlan, 1_000)).toMatchObject({ kind: 'empty' });
  });

  it('looks up at most maxWorkers SRV targets, lowest priority first', async () => {
    const resolver = new TableResolver();
    resolver.srv.set(
      '_x._tcp.w.test',
      Array.from({ length: 50 }, (_, i) => ({
        name: `t${i}.w.test`,
        port: 8000 + i,
        priority: 50 - i,
        weight: 0,
      })),
    );
    for (let i = 0; i < 50; i++) resolver.a.set(`t${i}.w.test`, v4(`10.0.1.${i}`));
    const srvPlan = { ...plan, name: '_x._tcp.w.test', record: 'srv', maxWorkers: 3 } as const;
    const answer = await lookupWorkers(resolver, srvPlan, 1_000);
    expect(answer).toMatchObject({
      kind: 'found',
      urls: ['http://10.0.1.47:8047', 'http://10.0.1.48:8048', 'http://10.0.1.49:8049'],
      ignored: 47,
    });
  });

  it('times out, cancelling the queries', async () => {
    const resolver = new TableResolver();
    resolver.resolve4 = () => new Promise(() => {});
    const answer = await lookupWorkers(resolver, { ...plan, record: 'a' }, 20);
    expect(answer).toMatchObject({ kind: 'failed', code: 'ETIMEOUT' });
    expect(resolver.cancelled).toBe(1);
  });

  it('checks DNS names without a regex: lengths and characters', () => {
    expect(isDnsName('a.b-c.d_e')).toBe(true);
    expect(isDnsName(`${'a'.repeat(63)}.b`)).toBe(true);
    expect(isDnsName(`${'a'.repeat(64)}.b`)).toBe(false);
    expect(isDnsName('a'.repeat(254))).toBe(false);
    for (const bad of ['', '.', 'a.', '.a', 'a..b', 'a b', 'a/b', 'é.test'])
      expect(isDnsName(bad)).toBe(false);
  });
});

describe('DnsDiscovery events', () => {
  it('goes on when a listener throws, and tells the other listeners', async () => {
    const resolver = new TableResolver();
    resolver.a.set('w.test', v4('10.0.0.1'));
    const { discovery } = await discoveryOver(resolver);
    const seen: string[] = [];
    discovery.on('updated', () => {
      throw new Error('listener bug');
    });
    discovery.on('event', (event) => seen.push(event.type));
    const warned = new Promise((resolve) => process.once('warning', resolve));
    expect((await discovery.refresh()).type).toBe('updated');
    expect(seen).toEqual(['updated']);
    expect(await warned).toMatchObject({ code: 'FLEETROUTE_LISTENER_THREW' });
  });

  it('emits updated only when something changed, and refresh returns it either way', async () => {
    const resolver = new TableResolver();
    resolver.a.set('w.test', v4('10.0.0.1'));
    const { discovery } = await discoveryOver(resolver);
    let updates = 0;
    discovery.on('updated', () => updates++);
    await discovery.refresh();
    const same = await discovery.refresh();
    expect(same).toMatchObject({ type: 'updated', added: [], removed: [], workers: 1 });
    expect(updates).toBe(1);
  });

  it('stops changing the registry once the registry is closed', async () => {
    const resolver = new TableResolver();
    resolver.a.set('w.test', v4('10.0.0.1'));
    const { registry, discovery } = await discoveryOver(resolver);
    registry.close();
    expect(await discovery.refresh()).toEqual({ type: 'closed' });
    expect(await discovery.refresh()).toEqual({ type: 'closed' });
  });

  it('re-registers an owned worker removed by hand while DNS still names it', async () => {
    const resolver = new TableResolver();
    resolver.a.set('w.test', v4('10.0.0.1'));
    const { registry, discovery } = await discoveryOver(resolver);
    await discovery.refresh();
    await registry.removeByUrl('http://10.0.0.1:8000');
    expect(await discovery.refresh()).toMatchObject({ added: ['http://10.0.0.1:8000'] });
  });
});
