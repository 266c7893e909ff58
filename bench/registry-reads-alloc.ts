/**
 * Hot-path reads: ns/op and heap bytes allocated per call of `getByModel('m')`,
 * `getHashRing('m')` and `getHashRing('m').find(key)` on a registry of 2,048 ready workers.
 *
 * Why: the spec requires these reads to be synchronous and allocation-free (cached frozen arrays
 * and rings), because every routed request makes them; the target for `getByModel` is ≤ 30 ns.
 *
 * Method (needs `--expose-gc`; `bench/run.ts` passes it): 1,000,000 calls in chunks of 10,000;
 * `process.memoryUsage().heapUsed` is read before and after each chunk. A chunk during which a
 * garbage collection ran (the heap shrank) is discarded, so the sum of the remaining deltas is
 * the bytes allocated. An empty loop gives the floor of the method (the chunk bookkeeping), and
 * `stats()`, documented to build an object per call, shows that allocation is detected.
 */
import { WorkerRegistry } from '../src/index.js';
import { sessionKeys, workerUrls } from './fixtures.js';
import { consume, emit, fmt, type OpsRunner, timeOps } from './harness.js';

const WORKERS = 2_048;
const CALLS = 1_000_000;
const CHUNK = 10_000;
const KEYS = sessionKeys(65_536, 5);

interface Read {
  readonly name: string;
  readonly calls: number;
  /** Calls per chunk. @defaultValue CHUNK */
  readonly chunk?: number;
  readonly run: OpsRunner;
}

interface Allocation {
  readonly bytesPerCall: number;
  readonly cleanChunks: number;
  readonly chunks: number;
}

function heapUsed(): number {
  return process.memoryUsage().heapUsed;
}

function measureAllocation(run: OpsRunner, calls: number, chunk: number): Allocation {
  const gc = globalThis.gc;
  if (gc === undefined) {
    throw new Error(
      'run with --expose-gc: node --expose-gc --import tsx bench/registry-reads-alloc.ts',
    );
  }
  const chunkCalls = Math.min(chunk, calls);
  const chunks = Math.ceil(calls / chunkCalls);
  consume(run(chunkCalls)); // make sure everything lazy (caches, rings) already exists
  gc();
  gc();
  let bytes = 0;
  let cleanCalls = 0;
  let cleanChunks = 0;
  for (let c = 0; c < chunks; c++) {
    const before = heapUsed();
    consume(run(chunkCalls));
    const delta = heapUsed() - before;
    if (delta < 0) continue; // a GC ran inside the chunk: its delta is meaningless
    bytes += delta;
    cleanCalls += chunkCalls;
    cleanChunks++;
  }
  return { bytesPerCall: bytes / cleanCalls, cleanChunks, chunks };
}

async function readyRegistry(): Promise<WorkerRegistry> {
  const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
  for (const url of workerUrls(WORKERS)) await registry.register({ url, models: ['m'] });
  return registry;
}

function reads(registry: WorkerRegistry): Read[] {
  let cursor = 0;
  const mask = KEYS.length - 1;
  return [
    {
      name: 'empty loop (method floor)',
      calls: CALLS,
      run(ops) {
        let sum = 0;
        for (let i = 0; i < ops; i++) sum += KEYS[cursor++ & mask]!.length;
        return sum;
      },
    },
    {
      name: "getByModel('m')",
      calls: CALLS,
      run(ops) {
        let sum = 0;
        for (let i = 0; i < ops; i++) sum += registry.getByModel('m').length;
        return sum;
      },
    },
    {
      name: "getHashRing('m')",
      calls: CALLS,
      run(ops) {
        let sum = 0;
        for (let i = 0; i < ops; i++) sum += registry.getHashRing('m').workerCount;
        return sum;
      },
    },
    {
      name: "getHashRing('m').find(key)",
      calls: CALLS,
      run(ops) {
        let sum = 0;
        for (let i = 0; i < ops; i++) {
          sum += registry.getHashRing('m').find(KEYS[cursor++ & mask]!)!.length;
        }
        return sum;
      },
    },
    {
      name: 'stats() (allocates by design)',
      calls: 2_000,
      chunk: 10,
      run(ops) {
        let sum = 0;
        for (let i = 0; i < ops; i++) sum += registry.stats().workers;
        return sum;
      },
    },
  ];
}

async function main(): Promise<void> {
  const registry = await readyRegistry();
  const rows: string[][] = [];
  for (const read of reads(registry)) {
    const alloc = measureAllocation(read.run, read.calls, read.chunk ?? CHUNK);
    const timing = timeOps(read.run);
    rows.push([
      read.name,
      fmt(timing.nsPerOp),
      read.calls.toLocaleString('en-US'),
      fmt(alloc.bytesPerCall, 2),
      `${alloc.cleanChunks}/${alloc.chunks}`,
    ]);
  }
  emit({
    name: 'registry-reads-alloc',
    tables: [
      {
        title: `Registry reads, ${WORKERS.toLocaleString('en-US')} workers serving one model`,
        columns: ['read', 'ns/op (median)', 'calls', 'heap bytes/call', 'clean chunks'],
        rows,
      },
    ],
    notes: [
      'heap bytes/call: heapUsed growth over chunks of 10,000 calls (10 for stats()) with no GC inside, ÷ calls in those chunks.',
      'clean chunks: chunks kept / chunks run (a chunk in which a GC ran is dropped).',
      'The find(key) row includes one xxh64 of a session key per call.',
    ],
  });
}

await main();
