/**
 * `DnsDiscovery` against a real DNS server: dnsmasq on a loopback port, its records changed
 * during each test (the hosts file rewritten and reloaded, or the server restarted on the same
 * port with other settings). Lookups are driven by `refresh()`, and drain deadlines by the
 * `clock` option, so nothing waits on a timer's length.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { DnsDiscovery, type DnsDiscoveryOptions, type DnsRefresh } from '../../src/dns/index.js';
import { type WorkerLease, WorkerRegistry } from '../../src/index.js';
import { type Dnsmasq, type DnsmasqOptions, noDnsmasq, startDnsmasq } from '../support/dnsmasq.js';

const A1 = 'http://10.0.0.1:8000';
const A2 = 'http://10.0.0.2:8000';
const A3 = 'http://10.0.0.3:8000';

interface Setup {
  readonly dns: Dnsmasq;
  readonly registry: WorkerRegistry;
  readonly discovery: DnsDiscovery;
  /** The discovery's clock: tests move it forward. */
  readonly time: { now: number };
}

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (let step = cleanups.pop(); step !== undefined; step = cleanups.pop()) await step();
});

async function setup(
  dnsOptions: DnsmasqOptions,
  options: { [K in keyof DnsDiscoveryOptions]?: DnsDiscoveryOptions[K] | undefined } = {},
): Promise<Setup> {
  const dns = await startDnsmasq({ local: ['svc.test'], ...dnsOptions });
  cleanups.push(() => dns.stop());
  const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
  cleanups.push(() => registry.close());
  const time = { now: 0 };
  const discovery = new DnsDiscovery(registry, {
    name: 'w.svc.test',
    port: 8000,
    servers: [dns.server],
    timeoutMs: 1_000,
    drainMs: 60_000,
    clock: () => time.now,
    ...options,
  } as DnsDiscoveryOptions);
  cleanups.push(() => discovery.close());
  return { dns, registry, discovery, time };
}

const urls = (registry: WorkerRegistry): string[] =>
  registry
    .getAll()
    .map((w) => w.url)
    .sort();
const hosts = (name: string, ...ips: string[]): string[] => ips.map((ip) => `${ip} ${name}`);

function expectUpdated(
  result: DnsRefresh,
): asserts result is Extract<DnsRefresh, { type: 'updated' }> {
  expect(result.type).toBe('updated');
}

describe.skipIf(noDnsmasq)('DnsDiscovery against dnsmasq', () => {
  it('registers the addresses of the answer, and a new address when the service scales up', async () => {
    const { dns, registry, discovery } = await setup({ hosts: hosts('w.svc.test', '10.0.0.1') });
    const first = await discovery.refresh();
    expectUpdated(first);
    expect(first.added).toEqual([A1]);
    expect(urls(registry)).toEqual([A1]);

    await dns.setHosts(hosts('w.svc.test', '10.0.0.1', '10.0.0.2', 'fd00::7'));
    const second = await discovery.refresh();
    expectUpdated(second);
    expect([...second.added].sort()).toEqual([A2, 'http://[fd00::7]:8000'].sort());
    expect(urls(registry)).toEqual([A1, A2, 'http://[fd00::7]:8000'].sort());
    expect(discovery.ownedUrls()).toEqual(urls(registry));
  });

  it('drains a vanished worker with requests in flight, then removes it after drainMs', async () => {
    const { dns, registry, discovery, time } = await setup({
      hosts: hosts('w.svc.test', '10.0.0.1', '10.0.0.2', '10.0.0.3'),
    });
    await discovery.refresh();
    const busy = registry.getByUrl(A2)!;
    const lease: WorkerLease = busy.acquire();

    await dns.setHosts(hosts('w.svc.test', '10.0.0.1'));
    const shrunk = await discovery.refresh();
    expectUpdated(shrunk);
    // A3 had nothing in flight: removed at once. A2 drains: no new requests, its own go on.
    expect(shrunk.removed).toEqual([A3]);
    expect(shrunk.draining).toEqual([A2]);
    expect(registry.getByUrl(A2)?.status).toBe('draining');
    expect(urls(registry)).toEqual([A1, A2]);

    time.now += 59_999;
    expectUpdated(await discovery.refresh());
    expect(urls(registry)).toEqual([A1, A2]);
    time.now += 1;
    const drained = await discovery.refresh();
    expectUpdated(drained);
    expect(drained.removed).toEqual([A2]);
    expect(urls(registry)).toEqual([A1]);
    lease.release({ ok: true, status: 200 });
  });

  it('removes a draining worker once its last request has ended, before drainMs', async () => {
    const { dns, registry, discovery } = await setup(
      { hosts: hosts('w.svc.test', '10.0.0.1', '10.0.0.2') },
      { minIntervalMs: 20 },
    );
    await discovery.refresh();
    const lease = registry.getByUrl(A2)!.acquire();
    await dns.setHosts(hosts('w.svc.test', '10.0.0.1'));
    await discovery.refresh();
    expect(registry.getByUrl(A2)?.status).toBe('draining');
    const removed = new Promise<readonly string[]>((resolve) =>
      discovery.on('updated', (event) => resolve(event.removed)),
    );
    lease.release({ ok: true, status: 200 });
    // No lookup: the drain watch sees the worker idle and removes it.
    const result = await removed;
    expect(result).toEqual([A2]);
    expect(urls(registry)).toEqual([A1]);
  });

  it('brings back a draining worker whose address returns: same id, its status restored', async () => {
    const { dns, registry, discovery } = await setup({
      hosts: hosts('w.svc.test', '10.0.0.1', '10.0.0.2'),
    });
    await discovery.refresh();
    const before = registry.getByUrl(A2)!;
    const lease = before.acquire();
    await dns.setHosts(hosts('w.svc.test', '10.0.0.1'));
    await discovery.refresh();
    expect(registry.getByUrl(A2)?.status).toBe('draining');

    await dns.setHosts(hosts('w.svc.test', '10.0.0.1', '10.0.0.2'));
    const back = await discovery.refresh();
    expectUpdated(back);
    expect(back.revived).toEqual([A2]);
    const after = registry.getByUrl(A2)!;
    expect(after.id).toBe(before.id);
    expect(after.status).toBe('ready');
    // A new revision: a router's health loop, stopped at `draining`, probes it again.
    expect(after.revision).toBe(before.revision + 1);
    expect(after.load).toBe(1);
    lease.release({ ok: true, status: 200 });
  });

  it('keeps the last good answer when the server is gone (lookup_failed)', async () => {
    const { dns, registry, discovery } = await setup({
      hosts: hosts('w.svc.test', '10.0.0.1', '10.0.0.2'),
    });
    await discovery.refresh();
    const events: string[] = [];
    discovery.on('event', (event) => events.push(event.type));
    await dns.crash();
    const failed = await discovery.refresh();
    expect(failed).toMatchObject({ type: 'lookup_failed', keeping: 2 });
    expect(events).toEqual(['lookup_failed']);
    expect(urls(registry)).toEqual([A1, A2]);
    expect(registry.getAll().every((w) => w.status === 'ready')).toBe(true);
    expect(discovery.stats()).toMatchObject({ failures: 1, workers: 2, draining: 0 });
  });

  it('keeps the last good answer while the server stops answering, and follows it again after', async () => {
    const { dns, registry, discovery } = await setup(
      { hosts: hosts('w.svc.test', '10.0.0.1', '10.0.0.2') },
      { timeoutMs: 300 },
    );
    await discovery.refresh();
    dns.signal('SIGSTOP');
    const failed = await discovery.refresh();
    expect(failed).toMatchObject({ type: 'lookup_failed', code: 'ETIMEOUT', keeping: 2 });
    expect(urls(registry)).toEqual([A1, A2]);
    dns.signal('SIGCONT');
    await dns.setHosts(hosts('w.svc.test', '10.0.0.1'));
    const after = await discovery.refresh();
    expectUpdated(after);
    expect(after.removed).toEqual([A2]);
  });

  it('keeps the last good answer on SERVFAIL', async () => {
    const first = await setup({ hosts: hosts('w.svc.test', '10.0.0.1', '10.0.0.2') });
    await first.discovery.refresh();
    expect(urls(first.registry)).toEqual([A1, A2]);
    // The same port, now forwarding svc.test to an upstream that fails every query.
    await first.dns.stop();
    const failing = await startDnsmasq({ port: first.dns.port, servfail: ['svc.test'] });
    cleanups.push(() => failing.stop());
    const result = await first.discovery.refresh();
    expect(result).toMatchObject({ type: 'lookup_failed', code: 'ESERVFAIL', keeping: 2 });
    expect(urls(first.registry)).toEqual([A1, A2]);
  });

  it('keeps the last good answer on an empty answer (NXDOMAIN, NODATA)', async () => {
    const { dns, registry, discovery } = await setup({
      hosts: hosts('w.svc.test', '10.0.0.1', '10.0.0.2'),
    });
    await discovery.refresh();
    const empties: string[] = [];
    discovery.on('empty', (event) => empties.push(event.code));

    await dns.setHosts(hosts('other.svc.test', '10.0.0.9'));
    expect(await discovery.refresh()).toMatchObject({
      type: 'empty',
      code: 'ENOTFOUND',
      keeping: 2,
    });
    await dns.setHosts(hosts('w.svc.test', 'fd00::1'));
    const noV4 = new DnsDiscovery(registry, {
      name: 'w.svc.test',
      record: 'a',
      port: 8000,
      servers: [dns.server],
    });
    cleanups.push(() => noV4.close());
    expect(await noV4.refresh()).toMatchObject({ type: 'empty', code: 'ENODATA', keeping: 0 });
    expect(empties).toEqual(['ENOTFOUND']);
    expect(urls(registry)).toEqual([A1, A2]);
    expect(registry.getAll().every((w) => w.status === 'ready')).toBe(true);
  });

  it('reads SRV records with their ports, each target resolved (IPv6 in brackets)', async () => {
    const { dns, registry, discovery } = await setup(
      {
        hosts: [...hosts('a.svc.test', '10.0.1.1'), ...hosts('b.svc.test', 'fd00::2', '10.0.1.2')],
        srv: ['_http._tcp.s.svc.test,a.svc.test,8001', '_http._tcp.s.svc.test,b.svc.test,8002'],
      },
      { name: '_http._tcp.s.svc.test', port: undefined },
    );
    const first = await discovery.refresh();
    expectUpdated(first);
    const expected = ['http://10.0.1.1:8001', 'http://10.0.1.2:8002', 'http://[fd00::2]:8002'];
    expect(urls(registry)).toEqual(expected.sort());

    await dns.setHosts([...hosts('a.svc.test', '10.0.1.1'), ...hosts('b.svc.test', '10.0.1.3')]);
    const moved = await discovery.refresh();
    expectUpdated(moved);
    expect(moved.added).toEqual(['http://10.0.1.3:8002']);
    expect([...moved.removed].sort()).toEqual(['http://10.0.1.2:8002', 'http://[fd00::2]:8002']);
    expect(urls(registry)).toEqual(['http://10.0.1.1:8001', 'http://10.0.1.3:8002']);
  });

  it('never touches a worker registered by hand with the same URL', async () => {
    const { dns, registry, discovery } = await setup({
      hosts: hosts('w.svc.test', '10.0.0.1', '10.0.0.2'),
    });
    const mine = await registry.register({ url: A1, models: ['by-hand'], status: 'not_ready' });
    const first = await discovery.refresh();
    expectUpdated(first);
    expect(first.added).toEqual([A2]);
    expect(first.foreign).toEqual([A1]);
    expect(discovery.ownedUrls()).toEqual([A2]);

    await dns.setHosts(hosts('w.svc.test', '10.0.0.2'));
    const second = await discovery.refresh();
    expectUpdated(second);
    expect(second.draining).toEqual([]);
    expect(second.removed).toEqual([]);
    const still = registry.getByUrl(A1)!;
    expect(still.id).toBe(mine.id);
    expect(still.revision).toBe(mine.revision);
    expect(still.status).toBe('not_ready');
    expect(still.models).toEqual(['by-hand']);
  });

  it('follows the name on its own once started, and stops when closed', async () => {
    const { dns, registry, discovery } = await setup(
      { hosts: hosts('w.svc.test', '10.0.0.1'), ttl: 0 },
      { intervalMs: 60_000, minIntervalMs: 20 },
    );
    await discovery.start();
    expect(urls(registry)).toEqual([A1]);
    const grew = new Promise<readonly string[]>((resolve) =>
      discovery.on('updated', (event) => resolve(event.added)),
    );
    // TTL 0: the next lookup comes after minIntervalMs, not intervalMs.
    await dns.setHosts(hosts('w.svc.test', '10.0.0.1', '10.0.0.2'));
    expect(await grew).toEqual([A2]);
    await discovery.close();
    await dns.setHosts(hosts('w.svc.test', '10.0.0.1', '10.0.0.2', '10.0.0.3'));
    expect(await discovery.refresh()).toEqual({ type: 'closed' });
    expect(urls(registry)).toEqual([A1, A2]);
  });

  it('ignores a lookup still in flight when closed', async () => {
    const { dns, registry, discovery } = await setup(
      { hosts: hosts('w.svc.test', '10.0.0.1') },
      { timeoutMs: 30_000 },
    );
    dns.signal('SIGSTOP');
    const pending = discovery.refresh();
    await new Promise((r) => setTimeout(r, 50));
    await discovery.close();
    expect(await pending).toEqual({ type: 'closed' });
    expect(registry.size).toBe(0);
  });
});
