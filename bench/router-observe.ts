/**
 * What observation costs `router.select`: with nobody listening, against the same pick and lease
 * done by hand (`policy.select` + `acquire` + `release`, the reference, in the same run); and
 * the time a `decision` listener adds. 2,048 ready workers, `round_robin` (the cheapest pick, so
 * the overhead shows most) and `cache_aware` (4 KB prompts sharing 75 % prefixes).
 *
 * Then `router.execute` over 64 workers with a `send` that answers at once and reports its first
 * token and its usage, as a streaming proxy does: with nobody listening, and with a `firstToken`
 * and a `usage` listener.
 *
 * Targets: ≤ 1.05× the reference with no listener; ≤ 300 ns added by one listener.
 */
import { createPolicy, type Policy, Router, WorkerRegistry } from '../src/index.js';
import { seededRandom, workerUrls } from './fixtures.js';
import { emit, fmt, median, timeOps } from './harness.js';

const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
for (const url of workerUrls(2_048)) await registry.register({ url, models: ['m'] });
const workers = registry.getByModel('m');

const random = seededRandom(7);
const word = () => Math.floor(random() * 1e9).toString(36);
const heads = Array.from({ length: 64 }, () =>
  Array.from({ length: 400 }, word).join(' ').slice(0, 3_072),
);
const prompts = Array.from({ length: 1_024 }, (_, i) =>
  `${heads[i % 64]} ${Array.from({ length: 140 }, word).join(' ')}`.slice(0, 4_096),
);

const rows: string[][] = [];
for (const name of ['round_robin', 'cache_aware'] as const) {
  const requests = prompts.map((text) => ({ model: 'm', text }));
  const time = (run: (i: number) => void): number => {
    let i = 0;
    return timeOps(
      (ops) => {
        for (let k = 0; k < ops; k++) run(i++ & 1_023);
        return ops;
      },
      { samples: 9, sampleMs: 80 },
    ).nsPerOp;
  };
  const direct: Policy = createPolicy(name);
  const reference = time((i) => {
    const w = direct.select(workers, requests[i]);
    w?.acquire().release();
  });
  const policy: Policy = createPolicy(name);
  const router = new Router({
    registry,
    transport: { probe: async () => true },
    policy,
    health: false,
    loadPolling: false,
    reportLeakedLeases: false,
  });
  router.start();
  const quiet = time((i) => router.select(requests[i])?.release());
  let seen = 0;
  router.on('decision', () => {
    seen++;
  });
  const observed = time((i) => router.select(requests[i])?.release());
  if (seen === 0) throw new Error('no decision observed');
  await router.close();
  direct.close?.();
  policy.close?.();
  rows.push([
    name,
    fmt(reference, 0),
    fmt(quiet, 0),
    `${fmt(quiet / reference, 3)}×`,
    fmt(observed, 0),
    fmt(observed - quiet, 0),
  ]);
}
registry.close();

/**
 * `execute` with nobody listening and with a `firstToken` and a `usage` listener, in alternating
 * batches (so both see the same machine load): the process's CPU time per call (user + system,
 * which a busy machine skews less than wall time), the median of each, and the median of the
 * paired differences.
 */
async function timeExecute(
  router: Router,
  batch: number,
  pairs: number,
): Promise<{ quiet: number; observed: number; added: number; seen: number }> {
  const request = { model: 'm' };
  const usage = { promptTokens: 812, completionTokens: 64, cachedTokens: 512 };
  const answer = { status: 200 };
  const send = async (
    _worker: unknown,
    context: { firstToken(): void; usage?: (u: typeof usage) => void },
  ) => {
    context.firstToken();
    context.usage?.(usage);
    return answer;
  };
  const run = async (): Promise<number> => {
    const start = process.cpuUsage();
    for (let i = 0; i < batch; i++) await router.execute(request, send);
    const { user, system } = process.cpuUsage(start);
    return ((user + system) * 1000) / batch;
  };
  let seen = 0;
  const count = (): void => {
    seen++;
  };
  // Typed loosely so the same bench runs against a router without these events.
  const on = router.on.bind(router) as (type: string, listener: () => void) => void;
  const off = router.off.bind(router) as (type: string, listener: () => void) => void;
  const quiet: number[] = [];
  const observed: number[] = [];
  const added: number[] = [];
  for (let p = -1; p < pairs; p++) {
    const q = await run();
    on('firstToken', count);
    on('usage', count);
    const o = await run();
    off('firstToken', count);
    off('usage', count);
    if (p < 0) continue; // warm-up
    quiet.push(q);
    observed.push(o);
    added.push(o - q);
  }
  return { quiet: median(quiet), observed: median(observed), added: median(added), seen };
}

const fleet = await WorkerRegistry.create({ defaultStatus: 'ready' });
for (const url of workerUrls(64)) await fleet.register({ url, models: ['m'] });
const executeRows: string[][] = [];
for (let run = 1; run <= 3; run++) {
  const router = new Router({
    registry: fleet,
    transport: { probe: async () => true },
    policy: 'round_robin',
    health: false,
    loadPolling: false,
    reportLeakedLeases: false,
  });
  router.start();
  const t = await timeExecute(router, 20_000, 5);
  await router.close();
  executeRows.push([
    String(run),
    fmt(t.quiet, 0),
    fmt(t.observed, 0),
    fmt(t.added, 0),
    t.seen > 0 ? 'yes' : 'no',
  ]);
}
fleet.close();

emit({
  name: 'router-observe',
  tables: [
    {
      title: 'router.select at 2,048 workers: ns per call, with and without a decision listener',
      columns: [
        'policy',
        'by hand (reference)',
        'router, no listener',
        'of reference',
        'router, 1 listener',
        'ns added',
      ],
      rows,
    },
    {
      title:
        'router.execute at 64 workers (round_robin), send reports firstToken and usage: CPU ns per call',
      columns: [
        'run',
        'no listener',
        'firstToken + usage listeners',
        'ns added (paired median)',
        'events seen',
      ],
      rows: executeRows,
    },
  ],
  notes: [
    '"By hand" is policy.select + acquire + release without a Router, in the same run.',
    'execute: batches of 20,000 calls, quiet and observed alternating, five pairs per run; CPU time of the process.',
  ],
});
