/**
 * What admission control costs a call while the fleet has room: `router.execute` over 64 and
 * 2,048 workers (`round_robin`, a `send` that answers at once and marks its first token), with
 * admission off and on (the defaults: nobody waits, every call enters and is granted at once),
 * in alternating batches so both see the same machine load; and `router.select` the same way.
 * Admission on reads each candidate's room once to admit and once to leave full workers out of
 * the pick, so its cost grows with the model's workers; off, it is one `undefined` check.
 */
import { Router, WorkerRegistry } from '../src/index.js';
import { workerUrls } from './fixtures.js';
import { emit, fmt, median } from './harness.js';

const request = { model: 'm' };
const answer = { status: 200 };
const send = async (_worker: unknown, context: { firstToken(): void }) => {
  context.firstToken();
  return answer;
};

/** CPU ns per call of `call`, run `batch` times. */
async function cpuPerCall(batch: number, call: () => unknown): Promise<number> {
  const start = process.cpuUsage();
  for (let i = 0; i < batch; i++) await call();
  const { user, system } = process.cpuUsage(start);
  return ((user + system) * 1000) / batch;
}

const rows: string[][] = [];
for (const size of [64, 2_048]) {
  const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
  for (const url of workerUrls(size)) await registry.register({ url, models: ['m'] });
  const router = (admission: boolean) => {
    const r = new Router({
      registry,
      transport: { probe: async () => true },
      policy: 'round_robin',
      health: false,
      loadPolling: false,
      reportLeakedLeases: false,
      admission,
    });
    r.start();
    return r;
  };
  const off = router(false);
  const on = router(true);
  const batch = size === 64 ? 20_000 : 2_000;
  for (const [what, call] of [
    ['execute', (r: Router) => () => r.execute(request, send)],
    ['select', (r: Router) => () => r.select(request)?.release()],
  ] as const) {
    const offs: number[] = [];
    const ons: number[] = [];
    for (let p = -1; p < 5; p++) {
      const a = await cpuPerCall(batch, call(off));
      const b = await cpuPerCall(batch, call(on));
      if (p < 0) continue; // warm-up
      offs.push(a);
      ons.push(b);
    }
    const q = median(offs);
    const o = median(ons);
    rows.push([what, fmt(size, 0), fmt(q, 0), fmt(o, 0), fmt(o - q, 0)]);
  }
  await off.close();
  await on.close();
  registry.close();
}

emit({
  name: 'admission',
  tables: [
    {
      title: 'admission off and on, the fleet with room (round_robin): CPU ns per call',
      columns: ['call', 'workers', 'admission off', 'admission on', 'ns added'],
      rows,
    },
  ],
  notes: [
    'Alternating batches (20,000 calls at 64 workers, 2,000 at 2,048), five pairs after a warm-up; medians; CPU time of the process.',
  ],
});
