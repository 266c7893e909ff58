/**
 * Deterministic inputs shared by the benchmarks: worker URLs and session keys from a seeded PRNG,
 * so every run (and every ring implementation) sees exactly the same data.
 */
import { type Policy, type SelectRequest, WorkerRegistry } from '../src/index.js';
import type { OpsRunner } from './harness.js';

/** mulberry32: a small, fast, seeded 32-bit PRNG returning floats in [0, 1). */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** `count` distinct worker URLs shaped like a real fleet: `http://10.0.<hi>.<lo>:8000`. */
export function workerUrls(count: number): string[] {
  const urls: string[] = [];
  for (let i = 0; i < count; i++) urls.push(`http://10.0.${i >> 8}.${i & 255}:8000`);
  return urls;
}

/**
 * A registry of `size` ready workers serving `m`, each holding 0–7 leases drawn from a PRNG seeded
 * with `size`: the same loaded fleet in every select benchmark.
 */
export async function loadedFleet(size: number): Promise<WorkerRegistry> {
  const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
  const random = seededRandom(size);
  for (const url of workerUrls(size)) {
    const worker = await registry.register({ url, models: ['m'] });
    for (let l = Math.floor(random() * 8); l > 0; l--) worker.acquire();
  }
  return registry;
}

/** `count` keys `session-<n>` with random `n` below 10^9 (duplicates are possible but rare). */
export function sessionKeys(count: number, seed: number): string[] {
  const random = seededRandom(seed);
  const keys: string[] = [];
  for (let i = 0; i < count; i++) keys.push(`session-${Math.floor(random() * 1e9)}`);
  return keys;
}

/**
 * Selects of `policy` over the registry's `m` workers, cycling through `reqs` (a power of two
 * long): a runner for `timeOps` that returns a value the work depends on.
 */
export function selectRunner(
  policy: Policy,
  registry: WorkerRegistry,
  reqs: readonly SelectRequest[],
): OpsRunner {
  const workers = registry.getByModel('m');
  const mask = reqs.length - 1;
  let cursor = 0;
  return (ops) => {
    let check = 0;
    for (let i = 0; i < ops; i++) {
      const worker = policy.select(workers, reqs[cursor++ & mask]);
      if (worker !== undefined) check += worker.load;
    }
    return check;
  };
}
