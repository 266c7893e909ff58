/**
 * Ring build cost: `HashRing.create(urls)` at 16, 256 and 2,048 workers (150 points each), in
 * total ms and µs per point, next to the cost of the point sort alone (`radixSort64` on the same
 * number of random points).
 *
 * Why: the registry rebuilds a model's ring on the first lookup after any membership change, so
 * build cost is paid on every scale-up, scale-down and health flap; a per-point cost that grows
 * for small rings shows a fixed overhead worth knowing about (many models with few workers each).
 */
import { HashRing } from '../src/index.js';
import { radixSort64 } from '../src/ring/radix-sort.js';
import { seededRandom, workerUrls } from './fixtures.js';
import { collectGarbage, elapsedMs, emit, fmt, median, nowNs } from './harness.js';

const WORKER_COUNTS = [16, 256, 2_048];
const POINTS_PER_WORKER = 150;

/**
 * Median of the ms that `measure` reports, over enough runs to fill about `budgetMs` (5 to 200
 * runs), after one untimed run.
 */
async function medianMs(
  measure: () => Promise<number> | number,
  budgetMs: number,
): Promise<number> {
  const once = Math.max(0.01, await measure());
  const runs = Math.max(5, Math.min(200, Math.floor(budgetMs / once)));
  const times: number[] = [];
  collectGarbage();
  for (let r = 0; r < runs; r++) times.push(await measure());
  return median(times);
}

async function buildMs(urls: readonly string[]): Promise<number> {
  return medianMs(async () => {
    const start = nowNs();
    await HashRing.create(urls);
    return elapsedMs(start);
  }, 600);
}

/** Median ms of sorting `n` random 64-bit points with their slots (the same data each run). */
async function sortMs(n: number): Promise<number> {
  const random = seededRandom(7);
  const sourceHi = Uint32Array.from({ length: n }, () => random() * 2 ** 32);
  const sourceLo = Uint32Array.from({ length: n }, () => random() * 2 ** 32);
  const hi = new Uint32Array(n);
  const lo = new Uint32Array(n);
  const slot = new Uint16Array(n);
  return medianMs(() => {
    hi.set(sourceHi);
    lo.set(sourceLo);
    const start = nowNs();
    radixSort64(hi, lo, slot);
    return elapsedMs(start);
  }, 300);
}

async function main(): Promise<void> {
  const rows: string[][] = [];
  for (const workers of WORKER_COUNTS) {
    const urls = workerUrls(workers);
    const points = workers * POINTS_PER_WORKER;
    const build = await buildMs(urls);
    const sort = await sortMs(points);
    rows.push([
      workers.toLocaleString('en-US'),
      points.toLocaleString('en-US'),
      fmt(build, 2),
      fmt((build * 1_000) / points, 3),
      fmt(sort, 3),
      `${fmt((100 * sort) / build, 0)}%`,
    ]);
  }
  emit({
    name: 'ring-build',
    tables: [
      {
        title: 'HashRing.create build time (median)',
        columns: ['workers', 'points', 'build ms', 'µs/point', 'of which sort ms', 'sort share'],
        rows,
      },
    ],
    notes: [
      'of which sort ms: radixSort64 alone on the same number of random points (4 passes of 16-bit digits).',
    ],
  });
}

await main();
