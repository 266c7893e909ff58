/**
 * The consistent-hash rings compared by the ring benchmarks, each behind the same small
 * interface. Every variant has its own lookup loop, so each library's `get`/`find` call site
 * stays monomorphic and no adapter call sits inside the timed loop.
 *
 * Configurations (all as documented by each package):
 * - fleetroute `HashRing.create(urls)`: 150 virtual nodes per worker (the default), xxh64.
 * - hashring@3.2.0 with `{ 'vnode count': 150, replicas: 1 }`: 150 md5 points per worker, the
 *   closest match to ours. Its defaults (40 vnodes × 4 ketama replicas = 160 points) are a
 *   second row. Its LRU key cache (5,000 keys) stays on, as by default.
 * - consistent-hash@1.2.2 with `{ weight: 150, range: 2_000_003 }`: 150 random control points
 *   per worker. Its README says a ring holds about `range / weight` nodes, and with the default
 *   range (100,003) 150 points × 2,048 workers cannot fit; 2,000,003 is a prime that leaves the
 *   random placement room (1,000,003 still failed about one build in ten at 2,048 workers). Its
 *   defaults (40 points, range 100,003) are a second row.
 */
import ConsistentHash from 'consistent-hash';
import LegacyHashRing from 'hashring';
import { HashRing } from '../src/index.js';

export interface BuiltRing {
  /** The worker that owns `key` (used for balance counts, not timed). */
  owner(key: string): string | undefined;
  /**
   * Looks up `ops` keys, continuing through `keys` (length a power of two) from where the last
   * call stopped, and returns a checksum.
   */
  lookups(keys: readonly string[], ops: number): number;
}

export interface RingVariant {
  readonly name: string;
  readonly pointsPerWorker: string;
  /** Placement uses `Math.random()`: every build is a different ring. */
  readonly randomPlacement: boolean;
  build(urls: readonly string[]): Promise<BuiltRing>;
}

function fleetroute(): RingVariant {
  return {
    name: 'fleetroute HashRing',
    pointsPerWorker: '150',
    randomPlacement: false,
    async build(urls) {
      const ring = await HashRing.create(urls);
      let cursor = 0;
      return {
        owner: (key) => ring.find(key),
        lookups(keys, ops) {
          const mask = keys.length - 1;
          let sum = 0;
          for (let i = 0; i < ops; i++) sum += ring.find(keys[cursor++ & mask]!)!.length;
          return sum;
        },
      };
    },
  };
}

function hashring(
  name: string,
  points: string,
  options?: LegacyHashRing.HashRingOptions,
): RingVariant {
  return {
    name,
    pointsPerWorker: points,
    randomPlacement: false,
    async build(urls) {
      const ring = new LegacyHashRing(urls, 'md5', options);
      let cursor = 0;
      return {
        owner: (key) => ring.get(key),
        lookups(keys, ops) {
          const mask = keys.length - 1;
          let sum = 0;
          for (let i = 0; i < ops; i++) sum += ring.get(keys[cursor++ & mask]!)!.length;
          return sum;
        },
      };
    },
  };
}

function consistentHash(
  name: string,
  points: string,
  options?: ConsistentHash.ConsistentHashOptions,
): RingVariant {
  return {
    name,
    pointsPerWorker: points,
    randomPlacement: true,
    async build(urls) {
      const ring = new ConsistentHash(options);
      for (const url of urls) ring.add(url);
      ring.get('warm-up'); // sorts the control points (done lazily on the first lookup)
      let cursor = 0;
      return {
        owner: (key) => ring.get(key) ?? undefined,
        lookups(keys, ops) {
          const mask = keys.length - 1;
          let sum = 0;
          for (let i = 0; i < ops; i++) sum += ring.get(keys[cursor++ & mask]!)!.length;
          return sum;
        },
      };
    },
  };
}

export const FLEETROUTE = fleetroute();

/** The rings compared, ours first; rows for library defaults follow the 150-point rows. */
export const RING_VARIANTS: readonly RingVariant[] = [
  FLEETROUTE,
  hashring('hashring (150 pts)', '150', { 'vnode count': 150, replicas: 1 }),
  hashring('hashring (defaults)', '160 (40×4)'),
  consistentHash('consistent-hash (150 pts)', '150', { weight: 150, range: 2_000_003 }),
  consistentHash('consistent-hash (defaults)', '40'),
];
