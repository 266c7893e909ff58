/**
 * Ring lookup cost: median ns per `find(key)` at 16, 256 and 2,048 workers for fleetroute's
 * `HashRing` and for the npm packages `hashring` and `consistent-hash`, plus our failover walk
 * (`find(key, accept)` with an `accept` that rejects the first owner).
 *
 * Why: the ring lookup runs once per routed request under consistent-hash and cache-aware
 * policies, so it sits on the hot path; the targets are ≤ 250 ns at 2,048 workers and ≥ 8×
 * faster than `hashring`.
 *
 * Keys are 65,536 prebuilt `session-<n>` strings, read in a continuous cycle, so `hashring`'s
 * 5,000-entry LRU cache never hits; a separate "hot keys" pair at 2,048 workers cycles over
 * 1,024 keys, where every `hashring` lookup is a cache hit.
 */
import { HashRing, type RingAccept } from '../src/index.js';
import { sessionKeys, workerUrls } from './fixtures.js';
import { emit, fmt, type OpsRunner, type Timing, timeOps } from './harness.js';
import { RING_VARIANTS, type RingVariant } from './ring-variants.js';

const WORKER_COUNTS = [16, 256, 2_048];
const KEYS = sessionKeys(65_536, 1);
const HOT_KEYS = sessionKeys(1_024, 2);
const COLUMNS = ['ring', 'points/worker', 'ns/op (median)', 'min–max ns', '× fleetroute'];
const buildFailures: string[] = [];

interface Measured {
  readonly label: string;
  readonly points: string;
  readonly timing: Timing | string;
}

/** Our failover walk: the accept function rejects the first worker offered for each key. */
async function failoverRunner(
  urls: readonly string[],
  keys: readonly string[],
): Promise<OpsRunner> {
  const ring = await HashRing.create(urls);
  let fresh = true;
  const rejectFirst: RingAccept = () => {
    if (fresh) {
      fresh = false;
      return false;
    }
    return true;
  };
  let cursor = 0;
  const mask = keys.length - 1;
  return (ops) => {
    let sum = 0;
    for (let i = 0; i < ops; i++) {
      fresh = true;
      sum += ring.find(keys[cursor++ & mask]!, rejectFirst)!.length;
    }
    return sum;
  };
}

async function measureVariant(
  variant: RingVariant,
  urls: readonly string[],
  keys: readonly string[],
  label = variant.name,
): Promise<Measured> {
  try {
    const ring = await variant.build(urls);
    return {
      label,
      points: variant.pointsPerWorker,
      timing: timeOps((ops) => ring.lookups(keys, ops)),
    };
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    buildFailures.push(
      `${label} with ${urls.length.toLocaleString('en-US')} workers: build throws "${reason}".`,
    );
    return { label, points: variant.pointsPerWorker, timing: 'build throws' };
  }
}

function row(m: Measured, oursNs: number): string[] {
  if (typeof m.timing === 'string') return [m.label, m.points, 'n/a', m.timing, 'n/a'];
  const { nsPerOp, samplesNs } = m.timing;
  const spread = `${fmt(Math.min(...samplesNs))}–${fmt(Math.max(...samplesNs))}`;
  return [m.label, m.points, fmt(nsPerOp), spread, `${fmt(nsPerOp / oursNs, 2)}×`];
}

async function measureSize(workers: number): Promise<string[][]> {
  const urls = workerUrls(workers);
  const measured: Measured[] = [];
  for (const variant of RING_VARIANTS) measured.push(await measureVariant(variant, urls, KEYS));
  const failover = timeOps(await failoverRunner(urls, KEYS));
  measured.splice(1, 0, {
    label: 'fleetroute find(key, accept) failover',
    points: '150',
    timing: failover,
  });
  const ours = measured[0]!.timing as Timing;
  const rows = measured.map((m) => row(m, ours.nsPerOp));
  if (workers === 2_048) {
    const hot = (v: RingVariant) => measureVariant(v, urls, HOT_KEYS, `${v.name}, 1,024 hot keys`);
    const oursHot = await hot(RING_VARIANTS[0]!);
    const hashringHot = await hot(RING_VARIANTS[1]!);
    const oursHotNs = (oursHot.timing as Timing).nsPerOp;
    rows.push(row(oursHot, oursHotNs), row(hashringHot, oursHotNs));
  }
  return rows;
}

async function main(): Promise<void> {
  const tables = [];
  for (const workers of WORKER_COUNTS) {
    tables.push({
      title: `Ring lookup, ${workers.toLocaleString('en-US')} workers`,
      columns: COLUMNS,
      rows: await measureSize(workers),
    });
  }
  emit({
    name: 'ring-lookup',
    tables,
    notes: [
      '× fleetroute = that ring’s ns/op ÷ fleetroute HashRing.find ns/op at the same size (> 1 means slower than ours).',
      'hashring (150 pts) = { "vnode count": 150, replicas: 1 }; consistent-hash (150 pts) = { weight: 150, range: 2,000,003 }.',
      'Failover: find(key, accept) where accept rejects the first worker offered, so the walk continues to the next distinct worker.',
      'Hot keys: 1,024 distinct keys, all inside hashring’s 5,000-entry LRU cache; its ratio there is against fleetroute on the same keys.',
      ...buildFailures,
    ],
  });
}

await main();
