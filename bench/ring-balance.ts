/**
 * Ring balance: how evenly 100,000 random `session-<n>` keys spread over 16, 256 and 2,048
 * workers for each ring compared in ring-lookup.ts, as max/mean keys per worker and the
 * coefficient of variation (population standard deviation ÷ mean). Also reports each ring's
 * build time, and a 1,000,000-key table at 2,048 workers.
 *
 * Why: a ring that routes more sessions to some workers overloads them while others idle; the
 * target is better balance (lower max/mean) than `consistent-hash`. Two things blur that
 * comparison, so the benchmark shows them:
 * - sampling noise: with about 49 keys per worker (100,000 keys, 2,048 workers) even a perfect
 *   ring has max/mean well above 1. The "ideal" row sends each key to a uniformly random worker,
 *   which is that floor; the 1,000,000-key table shrinks the noise so the rings themselves show.
 * - `consistent-hash` places its points with `Math.random()`, so each build differs: its rows are
 *   the median of several builds, with the range of max/mean across builds.
 */
import { seededRandom, sessionKeys, workerUrls } from './fixtures.js';
import { elapsedMs, emit, fmt, median, nowNs, type Table } from './harness.js';
import { RING_VARIANTS, type RingVariant } from './ring-variants.js';

const WORKER_COUNTS = [16, 256, 2_048];
const KEYS = sessionKeys(100_000, 3);
const MANY_KEYS = sessionKeys(1_000_000, 6);
const RANDOM_BUILDS = 5;
const COLUMNS = [
  'ring',
  'points/worker',
  'builds',
  'max/mean',
  'max/mean range',
  'CV',
  'min keys',
  'max keys',
  'build ms',
];

interface Balance {
  readonly maxOverMean: number;
  readonly cv: number;
  readonly min: number;
  readonly max: number;
}

function balanceOf(counts: readonly number[]): Balance {
  const mean = counts.reduce((a, b) => a + b, 0) / counts.length;
  const variance = counts.reduce((a, c) => a + (c - mean) ** 2, 0) / counts.length;
  const max = Math.max(...counts);
  return { maxOverMean: max / mean, cv: Math.sqrt(variance) / mean, min: Math.min(...counts), max };
}

/** Keys per worker when each key goes to a uniformly random worker (seeded). */
function idealCounts(workers: number, keys: number): number[] {
  const random = seededRandom(4);
  const counts = new Array<number>(workers).fill(0);
  for (let k = 0; k < keys; k++) counts[Math.floor(random() * workers)]!++;
  return counts;
}

/** One build of `variant` and the balance of `keys` over it. */
async function buildAndCount(
  variant: RingVariant,
  urls: readonly string[],
  keys: readonly string[],
): Promise<{ balance: Balance; buildMs: number }> {
  const start = nowNs();
  const ring = await variant.build(urls);
  const buildMs = elapsedMs(start);
  const counts = new Map<string, number>(urls.map((u) => [u, 0]));
  for (const key of keys) {
    const owner = ring.owner(key);
    if (owner !== undefined) counts.set(owner, (counts.get(owner) ?? 0) + 1);
  }
  return { balance: balanceOf([...counts.values()]), buildMs };
}

async function variantRow(
  variant: RingVariant,
  urls: readonly string[],
  keys: readonly string[],
  failures: string[],
): Promise<string[]> {
  const builds = variant.randomPlacement ? RANDOM_BUILDS : 1;
  const results = [];
  try {
    for (let b = 0; b < builds; b++) results.push(await buildAndCount(variant, urls, keys));
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    const workers = urls.length.toLocaleString('en-US');
    failures.push(`${variant.name} with ${workers} workers: build throws "${reason}".`);
    return [variant.name, variant.pointsPerWorker, '–', 'n/a', '–', 'n/a', 'n/a', 'n/a', 'throws'];
  }
  // The median build by max/mean stands for the variant; the range shows the spread.
  const ratios = results.map((r) => r.balance.maxOverMean);
  const mid = results.find((r) => r.balance.maxOverMean === median(ratios)) ?? results[0]!;
  const range = builds > 1 ? `${fmt(Math.min(...ratios), 3)}–${fmt(Math.max(...ratios), 3)}` : '–';
  const b = mid.balance;
  return [
    variant.name,
    variant.pointsPerWorker,
    String(builds),
    fmt(b.maxOverMean, 3),
    range,
    fmt(b.cv, 3),
    String(b.min),
    String(b.max),
    fmt(median(results.map((r) => r.buildMs))),
  ];
}

function idealRow(workers: number, keys: number): string[] {
  const b = balanceOf(idealCounts(workers, keys));
  const cells = [fmt(b.maxOverMean, 3), '–', fmt(b.cv, 3), String(b.min), String(b.max), '–'];
  return ['ideal (uniform random)', '–', '–', ...cells];
}

async function balanceTable(
  workers: number,
  keys: readonly string[],
  variants: readonly RingVariant[],
  failures: string[],
): Promise<Table> {
  const urls = workerUrls(workers);
  const rows: string[][] = [];
  for (const variant of variants) rows.push(await variantRow(variant, urls, keys, failures));
  rows.push(idealRow(workers, keys.length));
  const title = `Ring balance, ${keys.length.toLocaleString('en-US')} keys over ${workers.toLocaleString('en-US')} workers`;
  return { title, columns: COLUMNS, rows };
}

async function main(): Promise<void> {
  const failures: string[] = [];
  const tables: Table[] = [];
  for (const workers of WORKER_COUNTS) {
    tables.push(await balanceTable(workers, KEYS, RING_VARIANTS, failures));
  }
  const sharp = RING_VARIANTS.filter((v) => v.pointsPerWorker === '150');
  tables.push(await balanceTable(2_048, MANY_KEYS, sharp, failures));
  emit({
    name: 'ring-balance',
    tables,
    notes: [
      'max/mean: keys on the busiest worker ÷ mean keys per worker (1.000 is perfect). CV: standard deviation ÷ mean.',
      `builds: consistent-hash places points with Math.random(), so it is built ${RANDOM_BUILDS} times and the median build (by max/mean) is shown; max/mean range spans all builds.`,
      'build ms: one build (median of the builds for consistent-hash), including the first lookup for rings that sort lazily (consistent-hash). The first fleetroute build in the process also loads the WASM hasher; bench/ring-build.ts has clean build times.',
      'ideal (uniform random): each key sent to a uniformly random worker — the sampling-noise floor for that many keys.',
      ...failures,
    ],
  });
}

await main();
