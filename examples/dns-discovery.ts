/**
 * A registry kept in step with a DNS name by `fleetroute/dns`: the service scales up, scales
 * down (a worker with a request in flight drains first), then the DNS server fails and the last
 * good answer is kept.
 *
 * The DNS server is a stand-in started here on a loopback port — it answers A records for one
 * name from a list the example changes, NODATA for AAAA, and SERVFAIL when told to — so the
 * example runs anywhere. Against a real fleet, leave `servers` out (the system's resolver) and
 * name your headless Service: `{ name: 'vllm.llm.svc.cluster.local', port: 8000 }`.
 *
 * Run: npx tsx examples/dns-discovery.ts
 */
import { createSocket } from 'node:dgram';
import { once } from 'node:events';
import { WorkerRegistry } from 'fleetroute';
import { DnsDiscovery } from 'fleetroute/dns';

const NAME = 'vllm.llm.svc.cluster.local';

/** The stand-in DNS server's state: the addresses of NAME, or a failure. */
const zone = { addresses: ['127.0.0.1'], servfail: false };

/** An answer to one query (RFC 1035 wire format): A records of NAME, else no records. */
function answer(query: Buffer): Buffer | undefined {
  if (query.length < 17) return undefined;
  let at = 12;
  const labels: string[] = [];
  while (at < query.length && query[at]! > 0 && labels.length < 128) {
    labels.push(query.toString('latin1', at + 1, at + 1 + query[at]!));
    at += query[at]! + 1;
  }
  const question = query.subarray(12, at + 5);
  const type = query.readUInt16BE(at + 1);
  const known = labels.join('.').toLowerCase() === NAME;
  const records = zone.servfail || !known || type !== 1 ? [] : zone.addresses;
  const header = Buffer.alloc(12);
  header.writeUInt16BE(query.readUInt16BE(0), 0); // the query's id
  header.writeUInt16BE(0x8180 | (zone.servfail ? 2 : known ? 0 : 3), 2); // SERVFAIL, NXDOMAIN
  header.writeUInt16BE(1, 4);
  header.writeUInt16BE(records.length, 6);
  const rrs = records.map((ip) => {
    const rr = Buffer.alloc(16);
    rr.writeUInt16BE(0xc00c, 0); // the name, pointing at the question's
    rr.writeUInt16BE(1, 2); // A
    rr.writeUInt16BE(1, 4); // IN
    rr.writeUInt32BE(5, 6); // TTL 5 s
    rr.writeUInt16BE(4, 10);
    Buffer.from(ip.split('.').map(Number)).copy(rr, 12);
    return rr;
  });
  return Buffer.concat([header, question, ...rrs]);
}

const dnsServer = createSocket('udp4');
dnsServer.on('message', (query, peer) => {
  const reply = answer(query);
  if (reply !== undefined) dnsServer.send(reply, peer.port, peer.address);
});
dnsServer.bind(0, '127.0.0.1');
await once(dnsServer, 'listening');

const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
const discovery = new DnsDiscovery(registry, {
  name: NAME,
  port: 8000,
  runtime: 'vllm',
  models: ['llama-3-8b'],
  servers: [`127.0.0.1:${dnsServer.address().port}`],
  drainMs: 60_000,
});
discovery.on('updated', (e) => {
  for (const url of e.added) console.log(`registered ${url}`);
  for (const url of e.draining) console.log(`draining ${url} (a request still in flight)`);
  for (const url of e.removed) console.log(`removed ${url}`);
});
discovery.on('lookup_failed', (e) =>
  console.log(`lookup failed (${e.code}): keeping ${e.keeping} workers`),
);

const workers = () =>
  registry
    .getAll()
    .map((w) => `${w.url} ${w.status}`)
    .join(', ');

await discovery.start(); // the first lookup, applied; then one per TTL (5 s here) until closed
zone.addresses = ['127.0.0.1', '127.0.0.2', '127.0.0.3'];
await discovery.refresh(); // look again now rather than wait for the TTL
console.log(`scaled up: ${workers()}`);

const lease = registry.getByUrl('http://127.0.0.3:8000')!.acquire(); // a request in flight
zone.addresses = ['127.0.0.1', '127.0.0.2'];
await discovery.refresh();
console.log(`scaled down: ${workers()}`);
const removed = new Promise((resolve) => discovery.on('updated', resolve));
lease.release({ ok: true, status: 200 }); // its last request ends: removed without waiting drainMs
await removed;

zone.servfail = true;
await discovery.refresh();
console.log(`after the failure: ${workers()}`);

await discovery.close();
registry.close();
dnsServer.close();
