/**
 * Scanning a worker list: ns per worker and heap bytes per worker when a caller walks the array
 * that `getByModel('m')` returns (2,048 workers), reading `worker.load` as a least-load policy
 * would. Compared: `for…of` and an indexed loop over the registry's array, and the same two
 * loops over a plain (unfrozen) copy of it.
 *
 * Why: the registry hands out cached frozen arrays and every O(n) policy walks them once per
 * request; this shows what that walk costs on this Node version. Each case is its own function
 * literal, so no JIT feedback is shared between them.
 */
import { type Worker, WorkerRegistry } from '../src/index.js';
import { workerUrls } from './fixtures.js';
import { collectGarbage, consume, emit, fmt, type OpsRunner, timeOps } from './harness.js';

const WORKERS = 2_048;
const SCANS_FOR_HEAP = 200;

function heapBytesPerElement(run: OpsRunner): number {
  consume(run(SCANS_FOR_HEAP));
  collectGarbage();
  const before = process.memoryUsage().heapUsed;
  consume(run(SCANS_FOR_HEAP));
  const delta = process.memoryUsage().heapUsed - before;
  return delta < 0 ? Number.NaN : delta / SCANS_FOR_HEAP / WORKERS;
}

async function main(): Promise<void> {
  const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
  for (const url of workerUrls(WORKERS)) await registry.register({ url, models: ['m'] });
  const frozen = registry.getByModel('m');
  const copy: Worker[] = [...frozen];

  const cases: [string, OpsRunner][] = [
    [
      "for…of over getByModel('m')",
      (scans) => {
        let sum = 0;
        for (let s = 0; s < scans; s++) for (const w of frozen) sum += w.load;
        return sum;
      },
    ],
    [
      "indexed loop over getByModel('m')",
      (scans) => {
        let sum = 0;
        for (let s = 0; s < scans; s++)
          for (let i = 0; i < frozen.length; i++) sum += frozen[i]!.load;
        return sum;
      },
    ],
    [
      'for…of over an unfrozen copy',
      (scans) => {
        let sum = 0;
        for (let s = 0; s < scans; s++) for (const w of copy) sum += w.load;
        return sum;
      },
    ],
    [
      'indexed loop over an unfrozen copy',
      (scans) => {
        let sum = 0;
        for (let s = 0; s < scans; s++) for (let i = 0; i < copy.length; i++) sum += copy[i]!.load;
        return sum;
      },
    ],
  ];

  const rows = cases.map(([name, run]) => {
    const timing = timeOps(run, { sampleMs: 40 });
    const bytes = heapBytesPerElement(run);
    return [name, fmt(timing.nsPerOp / 1_000, 1), fmt(timing.nsPerOp / WORKERS, 2), fmt(bytes, 2)];
  });
  emit({
    name: 'registry-scan',
    tables: [
      {
        title: `Scan of ${WORKERS.toLocaleString('en-US')} workers reading worker.load`,
        columns: ['loop', 'µs/scan (median)', 'ns/worker', 'heap bytes/worker'],
        rows,
      },
    ],
    notes: [
      `Object.isFrozen(getByModel('m')) = ${Object.isFrozen(frozen)}.`,
      'heap bytes/worker: heapUsed growth over 200 scans after a GC (n/a when a GC ran meanwhile).',
    ],
  });
}

await main();
