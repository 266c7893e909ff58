/**
 * What observation costs `router.select`: with nobody listening, against the same pick and lease
 * done by hand (`policy.select` + `acquire` + `release`, the reference, in the same run); and
 * the time a `decision` listener adds. 2,048 ready workers, `round_robin` (the cheapest pick, so
 * the overhead shows most) and `cache_aware` (4 KB prompts sharing 75 % prefixes).
 *
 * Targets: ≤ 1.05× the reference with no listener; ≤ 300 ns added by one listener.
 */
import { createPolicy, type Policy, Router, WorkerRegistry } from '../src/index.js';
import { seededRandom, workerUrls } from './fixtures.js';
import { emit, fmt, timeOps } from './harness.js';

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
  ],
  notes: ['"By hand" is policy.select + acquire + release without a Router, in the same run.'],
});
