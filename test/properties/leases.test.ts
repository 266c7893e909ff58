/**
 * Property test of leases (docs/resilience.md, "Leases"): for any interleaving of `select`,
 * `selectPair`, `release` (once or twice, with any outcome) and registry mutations (register,
 * replace with other models, status changes, removal), every worker's `load` equals its number of
 * unreleased leases and is never negative, and the in-flight totals the registry keeps per model
 * group never go negative and return to 0 once every lease is released.
 *
 * Registry mutations take their URL's lock and so suspend; `fc.scheduler()` decides when each
 * queued operation runs, so selects and releases land between the steps of a mutation.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Router, type Transport, type Worker, WorkerRegistry } from '../../src/index.js';
import { viewOf } from '../../src/workers/candidate-view.js';
import type { WorkerLease } from '../../src/workers/worker.js';
import type { WorkerStatus } from '../../src/workers/worker-spec.js';
import { runs } from '../helpers/fc-settings.js';

const URLS: readonly string[] = [
  'http://w0:8000',
  'http://w1:8000',
  'http://w2:8000',
  'http://w3:8000',
];
const urlAt = (i: number): string => URLS[i] ?? 'http://w0:8000';
const MODELS = ['a', 'b'] as const;
const STATUSES: readonly WorkerStatus[] = ['ready', 'not_ready', 'draining'];
const transport: Transport = { probe: async () => true };

type Op =
  | { kind: 'select'; model: 'a' | 'b' | undefined }
  | { kind: 'selectPair' }
  | { kind: 'release'; lease: number; outcome: 'none' | 'ok' | 'fail' }
  | { kind: 'register'; url: number; models: string[] }
  | { kind: 'replace'; url: number; models: string[] }
  | { kind: 'status'; url: number; status: WorkerStatus }
  | { kind: 'remove'; url: number };

const url = fc.integer({ min: 0, max: URLS.length - 1 });
const models = fc.subarray([...MODELS]);
const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('select' as const),
      model: fc.constantFrom('a' as const, 'b' as const, undefined),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('selectPair' as const) }) },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('release' as const),
      lease: fc.nat(40),
      outcome: fc.constantFrom('none' as const, 'ok' as const, 'fail' as const),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('register' as const), url, models }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('replace' as const), url, models }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('status' as const),
      url,
      status: fc.constantFrom(...STATUSES),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('remove' as const), url }) },
);

/** Every registry array whose in-flight total is kept per group. */
function groupArrays(registry: WorkerRegistry): readonly (readonly Worker[])[] {
  return [
    registry.getAll(),
    ...MODELS.map((m) => registry.getByModel(m)),
    registry.getByModel('other'),
  ];
}

function check(
  registry: WorkerRegistry,
  leases: readonly WorkerLease[],
  seen: ReadonlySet<Worker>,
): void {
  const unreleased = new Map<string, number>();
  for (const lease of leases) {
    if (!lease.released)
      unreleased.set(lease.worker.id, (unreleased.get(lease.worker.id) ?? 0) + 1);
  }
  // Removed workers keep their counters: a lease on one still decrements it exactly once.
  for (const worker of seen) {
    expect(worker.load, `load of ${worker.id}`).toBe(unreleased.get(worker.id) ?? 0);
  }
  for (const workers of groupArrays(registry))
    expect(viewOf(workers).totalLoad()).toBeGreaterThanOrEqual(0);
}

describe('leases (property)', () => {
  it('load equals unreleased leases, never negative, under any interleaving with registry mutations', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(op, { minLength: 1, maxLength: 30 }),
        fc.scheduler(),
        async (ops, s) => {
          const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
          await registry.register({ url: urlAt(0), models: ['a'] });
          await registry.register({ url: urlAt(1), models: [] });
          const router = new Router({
            registry,
            transport,
            policy: 'least_load',
            policies: { b: 'random' },
            health: false,
            loadPolling: false,
            reportLeakedLeases: false,
          });
          router.start();
          const leases: WorkerLease[] = [];
          const seen = new Set<Worker>(registry.getAll());
          const noteWorkers = (): void => {
            for (const w of registry.getAll()) seen.add(w);
          };

          const run = async (o: Op): Promise<void> => {
            switch (o.kind) {
              case 'select': {
                const lease = router.select(o.model === undefined ? {} : { model: o.model });
                if (lease !== undefined) leases.push(lease);
                break;
              }
              case 'selectPair': {
                const pair = router.selectPair({ model: 'a' });
                if (pair !== undefined) leases.push(pair.prefill, pair.decode);
                break;
              }
              case 'release': {
                const lease = leases[o.lease % Math.max(1, leases.length)];
                lease?.release(o.outcome === 'none' ? undefined : { ok: o.outcome === 'ok' });
                break;
              }
              case 'register':
                await registry.register({ url: urlAt(o.url), models: o.models }).catch(() => {});
                break;
              case 'replace':
                await registry.registerOrReplace({ url: urlAt(o.url), models: o.models });
                break;
              case 'status': {
                const worker = registry.getByUrl(urlAt(o.url));
                if (worker !== undefined)
                  await registry.transitionStatus(worker.id, o.status).catch(() => {});
                break;
              }
              case 'remove':
                await registry.removeByUrl(urlAt(o.url));
                break;
            }
            noteWorkers();
            check(registry, leases, seen);
          };

          const running = ops.map((o) => s.schedule(Promise.resolve(o.kind)).then(() => run(o)));
          await s.waitAll();
          await Promise.all(running);
          check(registry, leases, seen);

          for (const lease of leases) lease.release();
          for (const worker of seen) expect(worker.load).toBe(0);
          for (const workers of groupArrays(registry)) expect(viewOf(workers).totalLoad()).toBe(0);
          await router.close();
          await registry.close();
        },
      ),
      runs(150, 5_000),
    );
  });
});
