/**
 * `select` cost of `adapterAware(cache_aware)` against plain `cache_aware` on LoRA adapter
 * requests, at 16 and 256 workers, and the ratio of the two.
 *
 * Why: the wrapper runs on every adapter request before the policy it wraps; it must add little
 * (target: ≤ 1.3× `cache_aware`'s select) — the narrowed lists are kept per (adapter, candidate
 * list), so in steady state a call costs a map lookup, a least-load read of the preferred tier
 * and one of all candidates.
 *
 * Setup: a registry of ready workers serving model `m` with 0–7 leases each; candidates are
 * `registry.getByModel('m')`. 64 adapters, each resident on 2 workers by their load reports
 * (`adapters.resident`, 8 slots); requests cycle through 4,096 prebuilt ones, each naming an
 * adapter (Zipf-like: adapter `k` about 1 / (k + 1) of the time) and carrying one of 1,024
 * distinct 256-token prompts.
 */
import {
  adapterAware,
  createPolicy,
  type LoadReport,
  type Policy,
  type SelectRequest,
  WorkerRegistry,
} from '../src/index.js';
import { seededRandom, selectRunner, workerUrls } from './fixtures.js';
import { emit, fmt, timeOps } from './harness.js';

const SIZES = (process.env.SIZES ?? '16,256').split(',').map(Number);
const ADAPTERS = 64;
const REQUESTS = 4_096;

function requests(): SelectRequest[] {
  const random = seededRandom(5);
  const weights = Array.from({ length: ADAPTERS }, (_, k) => 1 / (k + 1));
  const total = weights.reduce((a, b) => a + b, 0);
  const pick = (): number => {
    let u = random() * total;
    for (let k = 0; k < ADAPTERS; k++) if ((u -= weights[k]!) < 0) return k;
    return ADAPTERS - 1;
  };
  const prefixes = Array.from({ length: 1_024 }, (_, p) =>
    Uint32Array.from({ length: 256 }, (_, i) => (p * 7_919 + i * 104_729) % 128_000),
  );
  return Array.from({ length: REQUESTS }, () => ({
    model: `lora-${pick()}`,
    tokens: prefixes[Math.floor(random() * prefixes.length)]!,
  }));
}

async function fleet(size: number): Promise<WorkerRegistry> {
  const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
  const random = seededRandom(size);
  for (const url of workerUrls(size)) {
    const worker = await registry.register({ url, models: ['m'] });
    for (let l = Math.floor(random() * 8); l > 0; l--) worker.acquire();
  }
  return registry;
}

/** Each adapter resident on 2 workers (adapter `a` on workers `2a` and `2a + 1`, mod size). */
function reports(registry: WorkerRegistry): Map<string, LoadReport> {
  const workers = registry.getAll();
  const resident = workers.map(() => [] as string[]);
  for (let a = 0; a < ADAPTERS; a++) {
    resident[(2 * a) % workers.length]!.push(`lora-${a}`);
    resident[(2 * a + 1) % workers.length]!.push(`lora-${a}`);
  }
  const out = new Map<string, LoadReport>();
  workers.forEach((worker, i) => {
    out.set(worker.url, {
      runningRequests: 4,
      adapters: { running: [], waiting: [], resident: resident[i]!, maxAdapters: 8 },
    });
  });
  return out;
}

const reqs = requests();
const rows: string[][] = [];
for (const size of SIZES) {
  const registry = await fleet(size);
  const ns: number[] = [];
  for (const wrap of [false, true]) {
    const inner = createPolicy('cache_aware', { seed: 1 });
    const policy: Policy = wrap ? adapterAware(inner) : inner;
    policy.updateLoads?.(reports(registry));
    ns.push(timeOps(selectRunner(policy, registry, reqs)).nsPerOp);
    policy.close?.();
  }
  rows.push([String(size), fmt(ns[0]!), fmt(ns[1]!), `${fmt(ns[1]! / ns[0]!, 2)}×`]);
  registry.close();
}

emit({
  name: 'adapter-select',
  tables: [
    {
      title: 'Adapter requests: select ns/op (median), candidates = registry.getByModel(m)',
      columns: ['workers', 'cache_aware', 'adapterAware(cache_aware)', 'ratio'],
      rows,
    },
  ],
  notes: [
    'The wrapped policy sees the narrowed list (the workers holding the adapter), so its own work can shrink: the ratio is the whole select, wrapper and inner policy.',
  ],
});
