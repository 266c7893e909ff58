/**
 * Group in-flight totals (src/workers/load-counter.ts): kept by leases so bounded-load routing
 * reads a group's total in O(1). They must equal the sum of the group's worker loads, and never
 * drift: once every lease is released, every total is back to zero.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type Worker, type WorkerLease, WorkerRegistry } from '../../src/index.js';
import { viewOf } from '../../src/workers/candidate-view.js';
import { runs } from '../helpers/fc-settings.js';

type Op =
  | { kind: 'register'; url: number; models: string[] }
  | { kind: 'acquire'; worker: number }
  | { kind: 'release'; lease: number }
  | { kind: 'replace'; worker: number; models: string[] }
  | { kind: 'remove'; worker: number };

const models = fc.subarray(['a', 'b', 'c']);
const calm: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('register' as const), url: fc.nat({ max: 7 }), models }),
  fc.record({ kind: fc.constant('acquire' as const), worker: fc.nat() }),
  fc.record({ kind: fc.constant('acquire' as const), worker: fc.nat() }),
  fc.record({ kind: fc.constant('release' as const), lease: fc.nat() }),
);
const churn: fc.Arbitrary<Op> = fc.oneof(
  calm,
  fc.record({ kind: fc.constant('replace' as const), worker: fc.nat(), models }),
  fc.record({ kind: fc.constant('remove' as const), worker: fc.nat() }),
);

async function run(
  ops: readonly Op[],
  check: (registry: WorkerRegistry) => void,
): Promise<{ registry: WorkerRegistry; leases: WorkerLease[] }> {
  const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
  const leases: WorkerLease[] = [];
  const at = <T>(list: readonly T[], i: number): T | undefined =>
    list.length === 0 ? undefined : list[i % list.length];
  for (const op of ops) {
    const all = registry.getAll();
    if (op.kind === 'register') {
      if (registry.getByUrl(`http://w${op.url}:1`) === undefined)
        await registry.register({ url: `http://w${op.url}:1`, models: op.models });
    } else if (op.kind === 'acquire') {
      const worker = at(all, op.worker);
      if (worker !== undefined) leases.push(worker.acquire());
    } else if (op.kind === 'release') {
      const lease = at(leases, op.lease);
      lease?.release();
    } else if (op.kind === 'replace') {
      const worker = at(all, op.worker);
      if (worker !== undefined)
        await registry.replace(worker.id, { url: worker.url, models: op.models });
    } else {
      const worker = at(all, op.worker);
      if (worker !== undefined) await registry.remove(worker.id);
    }
    check(registry);
  }
  return { registry, leases };
}

const groups = (registry: WorkerRegistry): (readonly Worker[])[] => [
  registry.getAll(),
  registry.getByModel('a'),
  registry.getByModel('b'),
  registry.getByModel('c'),
  registry.getByModel('never-served'),
];
const sum = (workers: readonly Worker[]) => workers.reduce((s, w) => s + w.load, 0);

describe('group in-flight totals', () => {
  it('equal the sum of worker loads of each registry array at every step, while membership is stable under leases', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(calm, { maxLength: 60 }), async (ops) => {
        await run(ops, (registry) => {
          for (const workers of groups(registry))
            expect(viewOf(workers).totalLoad()).toBe(sum(workers));
        });
      }),
      runs(200, 1000),
    );
  });

  it('never drift: with replaces and removals in between, all totals return to zero when every lease is released', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(churn, { maxLength: 60 }), async (ops) => {
        const { registry, leases } = await run(ops, (registry) => {
          for (const workers of groups(registry))
            expect(viewOf(workers).totalLoad()).toBeGreaterThanOrEqual(0);
        });
        for (const lease of leases) lease.release();
        for (const workers of groups(registry)) expect(viewOf(workers).totalLoad()).toBe(0);
      }),
      runs(200, 1000),
    );
  });

  it('falls back to summing the loads of a list the registry did not hand out', async () => {
    const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
    const a = await registry.register({ url: 'http://a:1' });
    const b = await registry.register({ url: 'http://b:1' });
    a.acquire();
    b.acquire();
    b.acquire();

    expect(viewOf([a, b]).totalLoad()).toBe(3);
    expect(viewOf([b]).totalLoad()).toBe(2);
  });
});

describe('group load histograms', () => {
  type HOp =
    | { kind: 'register'; url: number; models: string[] }
    | { kind: 'acquire'; worker: number }
    | { kind: 'release'; lease: number }
    | { kind: 'replace'; worker: number; models: string[] }
    | { kind: 'remove'; worker: number }
    | { kind: 'status'; worker: number; ready: boolean }
    | { kind: 'breaker'; worker: number; open: boolean };
  const ops: fc.Arbitrary<HOp> = fc.oneof(
    fc.record({ kind: fc.constant('register' as const), url: fc.nat({ max: 7 }), models }),
    fc.record({ kind: fc.constant('acquire' as const), worker: fc.nat() }),
    fc.record({ kind: fc.constant('acquire' as const), worker: fc.nat() }),
    fc.record({ kind: fc.constant('release' as const), lease: fc.nat() }),
    fc.record({ kind: fc.constant('replace' as const), worker: fc.nat(), models }),
    fc.record({ kind: fc.constant('remove' as const), worker: fc.nat() }),
    fc.record({ kind: fc.constant('status' as const), worker: fc.nat(), ready: fc.boolean() }),
    fc.record({ kind: fc.constant('breaker' as const), worker: fc.nat(), open: fc.boolean() }),
  );

  it('give every registry array the lowest and highest in-flight count of its available workers, at every step', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(ops, { maxLength: 60 }), async (list) => {
        const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
        const leases: WorkerLease[] = [];
        const out = new Float64Array(3);
        const at = <T>(xs: readonly T[], i: number): T | undefined =>
          xs.length === 0 ? undefined : xs[i % xs.length];
        for (const op of list) {
          const all = registry.getAll();
          const worker = 'worker' in op ? at(all, op.worker) : undefined;
          if (op.kind === 'register') {
            const url = `http://h${op.url}:1`;
            if (registry.getByUrl(url) === undefined)
              await registry.register({ url, models: op.models });
          } else if (op.kind === 'acquire') {
            if (worker !== undefined) leases.push(worker.acquire());
          } else if (op.kind === 'release') {
            at(leases, op.lease)?.release();
          } else if (op.kind === 'replace') {
            if (worker !== undefined)
              await registry.replace(worker.id, { url: worker.url, models: op.models });
          } else if (op.kind === 'remove') {
            if (worker !== undefined) await registry.remove(worker.id);
          } else if (op.kind === 'status') {
            if (worker !== undefined)
              await registry.transitionStatus(worker.id, op.ready ? 'ready' : 'not_ready');
          } else if (worker !== undefined) {
            if (op.open) worker.circuitBreaker.forceOpen();
            else worker.circuitBreaker.reset();
          }
          for (const workers of groups(registry)) {
            if (workers.length === 0) continue; // the shared empty array: nothing to bound
            expect(viewOf(workers).loadBounds(out)).toBe(true);
            const loads = workers
              .filter((w) => w.status === 'ready' && w.circuitBreaker.state === 'closed')
              .map((w) => w.load);
            expect(out[2]).toBe(loads.length);
            if (loads.length > 0) {
              expect(out[0]).toBe(Math.min(...loads));
              expect(out[1]).toBe(Math.max(...loads));
            }
          }
        }
      }),
      runs(200, 1000),
    );
  });

  it('report nothing for a list the registry did not hand out', async () => {
    const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
    const a = await registry.register({ url: 'http://a:1' });
    expect(viewOf([a]).loadBounds(new Float64Array(3))).toBe(false);
  });
});
