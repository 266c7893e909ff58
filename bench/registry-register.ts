/**
 * Registration cost: registering 2,048 workers for one model on a fresh
 * `WorkerRegistry.create({ defaultStatus: 'ready' })`, then one `getHashRing('m').find('k')`
 * (the ring is built lazily on that first lookup), against 128 × the same with 16 workers.
 *
 * Why: both sides register 2,048 workers and hash 2,048 × 150 ring points in total, so if
 * registration and ring building are O(N) the two totals match (ratio near 1); O(N²) work per
 * registry (say, a ring rebuilt on every `register`) would make the 2,048-worker side about
 * 128 × slower. The target is ≤ 150 ms for the 2,048 workers. Each side runs once untimed
 * (warm-up), then `RUNS` timed times; medians are reported.
 */
import { WorkerRegistry } from '../src/index.js';
import { workerUrls } from './fixtures.js';
import { collectGarbage, elapsedMs, emit, fmt, median, nowNs } from './harness.js';

const RUNS = 11;
const BIG = 2_048;
const SMALL = 16;
const SMALL_REPEATS = BIG / SMALL;
const URLS = workerUrls(BIG);

interface Phases {
  /** create + every `register`. */
  readonly registerMs: number;
  /** The first `getHashRing('m').find('k')`, which builds the ring. */
  readonly firstLookupMs: number;
}

/** Fresh registry, `count` sequential registrations, one lookup. */
async function registerThenLookup(count: number): Promise<Phases> {
  const start = nowNs();
  const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
  for (let i = 0; i < count; i++) await registry.register({ url: URLS[i]!, models: ['m'] });
  const registerMs = elapsedMs(start);
  const lookupStart = nowNs();
  if (registry.getHashRing('m').find('k') === undefined) throw new Error('empty ring');
  return { registerMs, firstLookupMs: elapsedMs(lookupStart) };
}

async function bigSide(): Promise<Phases> {
  return registerThenLookup(BIG);
}

async function smallSide(): Promise<Phases> {
  let registerMs = 0;
  let firstLookupMs = 0;
  for (let r = 0; r < SMALL_REPEATS; r++) {
    const phases = await registerThenLookup(SMALL);
    registerMs += phases.registerMs;
    firstLookupMs += phases.firstLookupMs;
  }
  return { registerMs, firstLookupMs };
}

async function runs(side: () => Promise<Phases>): Promise<Phases[]> {
  await side();
  const results: Phases[] = [];
  for (let r = 0; r < RUNS; r++) {
    collectGarbage();
    results.push(await side());
  }
  return results;
}

function summarise(label: string, results: readonly Phases[]): { row: string[]; totalMs: number } {
  const totals = results.map((p) => p.registerMs + p.firstLookupMs);
  const totalMs = median(totals);
  const row = [
    label,
    fmt(median(results.map((p) => p.registerMs))),
    fmt(median(results.map((p) => p.firstLookupMs))),
    fmt(totalMs),
    `${fmt(Math.min(...totals))}–${fmt(Math.max(...totals))}`,
  ];
  return { row, totalMs };
}

async function main(): Promise<void> {
  const big = summarise(`1 × ${BIG.toLocaleString('en-US')} workers`, await runs(bigSide));
  const small = summarise(`${SMALL_REPEATS} × ${SMALL} workers`, await runs(smallSide));
  emit({
    name: 'registry-register',
    tables: [
      {
        title: `Register 2,048 workers for one model, then one lookup (median of ${RUNS} runs)`,
        columns: ['scenario', 'register ms', 'first lookup ms', 'total ms', 'min–max total ms'],
        rows: [big.row, small.row],
      },
      {
        title: 'Scaling',
        columns: ['ratio', 'value'],
        rows: [['total(1 × 2,048) ÷ total(128 × 16)', `${fmt(big.totalMs / small.totalMs, 2)}×`]],
      },
    ],
    notes: [
      'register ms: WorkerRegistry.create plus sequential `await registry.register({ url, models: ["m"] })` calls.',
      'first lookup ms: getHashRing("m").find("k"), which builds the ring (150 xxh64 points per worker) on first use.',
    ],
  });
}

await main();
